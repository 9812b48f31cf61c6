// Package archiver is the HistoryArchiver (`qim archiver`): it copies every committed message
// from the Outbox into the CQL history archive and publishes the archive watermark T
// (docs/adr/0021-history-archive-in-cql.md; seed ADR-0018).
//
// Files: archiver.go (the batch loop and its invariant), batch.go (Outbox records to rows,
// all or nothing), watermark.go (T and why it is safe), startup.go (fail-closed start), config.go,
// metrics.go, service.go.
//
// It reads the Outbox, never Redis: the Outbox carries every committed MessageRecord whatever its
// size and can be replayed. It must never commit a position whose rows are not acknowledged, and
// never skip a record it cannot archive: it stops instead, with the offset in the error.
package archiver
