// Package mailboxstore is the MailboxStore on Redis: per-user mailbox entries materialized from
// qim.dispatch records, the per-shard materialized watermark and epoch, the dispatch identities
// that converge replays, the per-user day index that detects trimmed history, and the device
// cursors recorded by PULL_MAILBOX.
//
// What it owns:
//   - materialize.lua: one dispatch record → one entry per recipient, its identity
//     (dispatch_id → payload_digest + canonical mailbox_seq) and the shard watermark, in ONE script,
//     fenced by the shard epoch and a compare-and-set of the previous watermark;
//   - pull.lua: a user's entries after a device cursor up to the watermark, in whole event groups,
//     with CURSOR_EXPIRED detection and the forward-only device cursor;
//   - trim.lua: explicit trims that raise a user's trim mark;
//   - Inspect: the read-only view the orphan audit (audit/) takes of identities and entries;
//   - the start-up proof that the mailbox Redis is fit (CheckDurability).
//
// What it must never do: decide what a dispatch means (the MailboxNode validates and builds the
// entries; this package stores bytes and enforces sequence, identity and watermark rules); read
// the local clock on the materialization path (the day bucket and its expiry come from the
// message's created_at_ms, so a replay writes the same keys); advance a watermark past a record
// whose entries are not all stored; move a device cursor back; hash a script per call; log keys,
// cursors of named users, or entry bytes.
//
// Storage layout (one MailboxShard per hash tag {s<shard>}, shard in decimal; tenant as 32
// lowercase hex digits; user and day in decimal; seq = contract.MailboxSeq as 8 bytes big-endian):
//
//	qim:mbepoch:{s}                         string  shard_epoch, decimal; SETNX 1 on first start
//	qim:mbwm:{s}                            string  materialized watermark: last applied log offset
//	qim:mbdp:{s}:<dispatch_id hex>          string  payload_digest (32 B) ‖ canonical seq (8 B);
//	                                                TTL contract.MailboxRetention + 1 day
//	qim:mb:{s}:<tenant>:<user>:<day>        zset    day bucket, every score 0, member =
//	                                                seq ‖ event_type (4 B BE) ‖ MailboxEntry bytes;
//	                                                EXPIREAT (day+1)·86400 + retention
//	qim:mbix:{s}:<tenant>:<user>            hash    d<day> → highest seq of that day's bucket,
//	                                                t → trim mark (highest seq ever trimmed);
//	                                                EXPIREAT last bucket expiry + retention
//	qim:mbcur:{s}:<tenant>:<user>:<device>  string  device cursor (8 B), forward only;
//	                                                TTL 2 × retention, refreshed by every pull
//
// Why lexicographic members instead of scores: a zset score is a double, exact only below 2^53,
// and mailbox_seq = epoch<<48 | offset passes 2^53 from epoch 32 on; two entries would then tie
// or swap. Every member starts with the 8-byte big-endian seq, all scores are 0, and reads use
// ZRANGEBYLEX, whose byte order is exactly the numeric order of the seq (ADR-0003).
package mailboxstore
