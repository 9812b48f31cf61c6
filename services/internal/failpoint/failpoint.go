// Package failpoint lets crash tests kill a service at an exact step of a durability path.
//
// In a normal build Hit is an empty function the compiler inlines away, so production code paths
// carry no test hooks. Built with `-tags failpoints`, Hit(name) SIGKILLs the process when the
// environment variable QIM_FAILPOINT names that failpoint (after QIM_FAILPOINT_SKIP earlier hits),
// which is what a crash at that step looks like: no deferred cleanup, no flushed buffers. With
// QIM_FAILPOINT_ARM=signal the failpoint stays dormant until the process receives SIGUSR1. With
// QIM_FAILPOINT_ACTION=term the live failpoint SIGTERMs the process once and lets the path go
// on: a graceful stop that starts in the middle of a batch, which a kill never exercises.
package failpoint

// Names of the failpoints. A crash test arms one by name; keeping them here lets a test refer to
// the same identifiers the code hits.
const (
	WriterAfterReserve = "writer-after-reserve" // intent RESERVED, history not written
	WriterAfterRecord  = "writer-after-record"  // RECORDED, nothing produced to the Outbox
	WriterAfterOutbox  = "writer-after-outbox"  // OUTBOXED (produce acked), not marked COMMITTED
	WriterBeforeAck    = "writer-before-ack"    // COMMITTED, SEND_ACK not sent

	FanoutBeforeOffsetCommit = "fanout-before-offset-commit" // every dispatch of the batch acked, source offset not committed

	MailboxBeforeMaterialize = "mailbox-before-materialize" // dispatch records polled and checked, nothing written
	MailboxAfterMaterialize  = "mailbox-after-materialize"  // entries and watermark durable, push not sent

	ArchiverBetweenRecordAndIndex = "archiver-between-record-and-index" // a batch's message_records acknowledged, no history_index row written
)
