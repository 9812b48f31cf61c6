package contract

// Names of the always-zero invariant counters (docs/architecture.md, invariant 15). Each counts
// an event the contract says never happens; one that moves takes its service's /healthz to 503.
const (
	InvariantGatewaySendOutcomeOrphaned = "qim_gateway_send_outcome_orphaned_total"
	InvariantMailboxDispatchConflicts   = "qim_mailbox_dispatch_conflicts_total"
	InvariantMailboxDispatchRejected    = "qim_mailbox_dispatch_rejected_total"
	InvariantMailboxWatermarkFenced     = "qim_mailbox_watermark_fenced_total"
	InvariantFanoutUnplannableRecords   = "qim_fanout_unplannable_records_total"
	InvariantSessionDispatchRejected    = "qim_session_dispatch_rejected_total"
	InvariantSessionCheckpointFenced    = "qim_session_checkpoint_fenced_total"
	// InvariantSessionGroupIntervalMissing counts group rows of users without intervals.
	InvariantSessionGroupIntervalMissing = "qim_session_group_interval_missing_total"
	// InvariantArchiverUnarchivableRecords counts Outbox records the HistoryArchiver stopped at.
	InvariantArchiverUnarchivableRecords = "qim_archiver_unarchivable_records_total"
)

// InvariantCounter is one row of the invariant counter table: the service that registers it
// (the `qim` subcommand and the value of its metrics' service label), the counter's name and
// what one increment means (the counter's HELP after "Invariant (always zero): ").
type InvariantCounter struct {
	Service string
	Name    string
	Meaning string
}

// InvariantCounters returns the table of every always-zero counter the services register.
// Services register invariant counters only by a name in this table (services/internal/obs
// refuses any other), and package services' tests fail when a service registers fewer or more
// than the table lists, so the table and the code cannot drift. The invariants gate (gate 8)
// reads the expected set from here, not from what a service happens to export: a counter missing
// from a scrape fails the gate.
//
// The writer (ConversationWriter) registers none today; gate 8 still requires its /healthz to be
// 200.
func InvariantCounters() []InvariantCounter {
	return []InvariantCounter{
		{"gateway", InvariantGatewaySendOutcomeOrphaned,
			"SendOutcomes from the writer whose call_id matched no SEND in flight on that stream."},
		{"mailbox", InvariantMailboxDispatchConflicts,
			"dispatch_id seen again with a different payload_digest; the node stopped."},
		{"mailbox", InvariantMailboxDispatchRejected,
			"dispatch record that does not decode, verify or belong to its partition; the node stopped."},
		{"mailbox", InvariantMailboxWatermarkFenced,
			"shard epoch or watermark moved under this node (a second owner); the node stopped."},
		{"fanout", InvariantFanoutUnplannableRecords,
			"Outbox records that could not be decoded or planned; the service stopped at the first."},
		{"session", InvariantSessionGroupIntervalMissing,
			"group session row of a user with no membership interval in the group; the row was hidden."},
		{"session", InvariantSessionDispatchRejected,
			"dispatch record that does not decode, verify or belong to its partition; the projection stopped."},
		{"session", InvariantSessionCheckpointFenced,
			"checkpoint moved under this process or bound to another topic (a second owner); the projection stopped."},
		{"archiver", InvariantArchiverUnarchivableRecords,
			"Outbox record that does not decode, reuses a conversation_seq inside a batch or arrives out of order; the archiver stopped at the first."},
	}
}

// LookupInvariantCounter returns the table row of an invariant counter name.
func LookupInvariantCounter(name string) (InvariantCounter, bool) {
	for _, c := range InvariantCounters() {
		if c.Name == name {
			return c, true
		}
	}
	return InvariantCounter{}, false
}
