// Package cqlstore is the history archive in CQL (docs/architecture.md invariant 12,
// docs/adr/0021-history-archive-in-cql.md): the schema and its versioned migrations, the rows the
// HistoryArchiver writes, and the reads of the archive tier.
//
// It speaks standard CQL over protocol v4 only, so Apache Cassandra (tests, CI) and ScyllaDB
// (production) both serve it. What it must never do:
//
//   - DELETE anything. History leaves the archive only through a per-row TTL computed from the
//     message's retention class (a range tombstone under time-window compaction never frees its
//     space); compliance-hold rows carry no TTL at all, which is why message_record has no
//     table-level default TTL.
//   - Use a lightweight transaction. Every row's primary key is assigned once by the
//     ConversationWriter (tenant, conversation, seq_bucket, conversation_seq), so writing the same
//     record again writes the same values: plain INSERTs are idempotent, and Paxos would bring
//     back the commit-path cost tiered history exists to remove (seed ADR-0018).
//   - Write an index row before its record row, or report a batch written before every row of it
//     was acknowledged at LOCAL_QUORUM: readers treat "indexed but no record" as corruption, and
//     the archiver commits its Outbox position only after Put returned nil.
package cqlstore
