// Package loadgen is Q-IM's open-model load generator: it offers 1:1 messages (or, in group
// mode, group messages) to a running gateway at a target ARRIVAL rate, measures every stretch
// of each message's life with frame-level precision, and proves afterwards that every ACKed
// message reached each of its recipients exactly once after dedup. Gate 5 (`qim-gate run perf`)
// and cmd/qim-loadgen drive it.
//
// Group mode (Config.Mode, group.go, groupflow.go) partitions the message connections into
// groups of Config.GroupSize; each group is created at setup (CREATE_GROUP by its first member,
// the others as initial members, GROUP_CREATED awaited) and its membership never changes. The
// rate is group messages per second, senders taken round-robin over the groups and their
// members. Every message is expected in the mailbox of every member, the sender's own copy
// included: delivery is counted in mailbox entries, end to end sampled once per (message,
// member other than the sender), and a lost entry fails the run. The SDK lane is disabled in
// group mode: it drives 1:1 pairs.
//
// Room mode (room.go, roomrun.go, roomreport.go) joins the connections to rooms of
// Config.RoomSize (the measured window starts with every room full), lets RoomSenders members of
// each room publish Rate events per second in all, and has every member read every event:
// broadcast latency from the publish time in the body, delivered events against expected ones
// (ACKed × members), room_seq gaps, members dropped by ROOM_LEFT, CPU per delivered event. Rooms
// are lossy by design, so a loss fails the run's capacity verdict, not a durability one.
//
// It owns: the arrival schedule (scheduler.go — arrivals never wait for answers, lag is
// measured, unsendable arrivals are counted), the frame-level connections (conn.go, sender.go,
// puller.go: SEND with the send time in the body, SEND_ACK, PUSH_EVENTS, coalesced
// PULL_MAILBOX, a PING control group), the per-pair ledger that decides missing and duplicate
// deliveries (flow.go), HDR histograms and the 5-second time series (recorder.go), CPU
// accounting of the system under test from /proc (cpu.go), the quiet-machine wait (quiet.go),
// the verdicts (checks.go), and the JSON and self-contained HTML reports (report.go, html.go,
// svg.go). The SDK lane (lane.go) is implemented in loadgen/sdklane over the real Go SDK.
//
// For the chaos matrix it also owns two opt-in behaviours. Config.Reconnect (link.go,
// reconnect.go) lets a connection outlive its socket: a lost or kicked link is redialled with
// backoff and the connection resumes, where a perf run counts the loss and ends the
// connection. Config.History (history.go, stored.go) records the frame lane's history for the
// checker in chaos/history's vocabulary: in group mode first one Group event per member of each
// group created (sends then name the group's conversation, not a recipient); Invoke before each
// SEND is written; Ok, Fail or Info
// when it is answered, times out or loses its link (a late answer after an Info is recorded
// too); Deliver for every MAILBOX_BATCH entry of this run a recipient reads, own copies
// included; Push for every PUSH_EVENTS entry of this run; and, after the settle wait, Stored
// for every record of each pair's (or group's) conversation read back with PULL_HISTORY.
//
// It must never:
//   - let the offered rate depend on response times (closed-model load hides stalls);
//   - queue without a bound or a counter: every queue here (per-connection arrivals, in-flight
//     SENDs) is bounded, and what it refuses is counted (unsent, inflight_waits);
//   - carry its own copy of SDK client logic (state machine, cursor store, dedup cache): the
//     frame lane measures, the SDK lane exercises the SDK;
//   - report a pass on missing evidence: no samples, no CPU readings or a lane that did not run
//     fail their checks;
//   - write a token, the signing secret or a message body to a log or report.
//
// # JSON report, schema_version 1
//
// All latencies are milliseconds, rates msg/s, times seconds. "In window" means the event
// happened inside [start, start + duration).
//
//	schema_version       1
//	label, started_at    run name, UTC start of the measured window
//	config               gateway, mode ("direct" | "group" | "room"), group_size (group mode),
//	                     room_size and room_senders (room mode), rate
//	                     (frame-lane target: messages, to groups in group mode), duration_s,
//	                     connections (frame lane: 1:1 pairs, or whole groups), ping_connections,
//	                     body_bytes, inflight_per_conn, queue_per_conn, ack_timeout_s,
//	                     sdk_clients_percent, reconnect, history (a history recorder was set)
//	measured_s           actual length of the schedule (≥ duration_s by the last oversleep)
//	target_rate          = config.rate
//	achieved_send_rate   counts.sent_in_window / duration_s — the arrival rate the system got
//	arrival_ratio        achieved_send_rate / target_rate (gate: ≥ contract.SLOArrivalRatio)
//	ack_rate             counts.acked_in_window / duration_s — the commit rate
//	counts.scheduled     arrivals due inside the window
//	counts.unsent        scheduled but never written: connection queue full, stopped while
//	                     waiting for an in-flight permit, or still queued when the window ended
//	counts.sent          SEND frames written; sent_in_window those written inside the window
//	counts.acked         SEND_ACKs (acked_in_window: received inside the window)
//	counts.failed        sends answered by a definite ERROR (never visible)
//	counts.errors        every ERROR answer to a SEND or PING (see failures_by_code)
//	counts.unknown       sends whose outcome is unknown at the end (timeout without a late
//	                     answer, lost connection, UNAVAILABLE/INTERNAL)
//	counts.timeouts      sends unanswered after ack_timeout_s; late_answers: answered later
//	counts.stray_answers answers to no pending request (a pull answered after its timeout, ...)
//	counts.connections_lost, kicked   connections the server closed or evicted mid-run (each
//	                     loss of a reconnecting connection counts)
//	counts.reconnects    links re-established after a loss (config.reconnect only); each loss
//	                     and reconnect is also in errors with its UTC time, up to errors' cap
//	counts.inflight_waits sends that waited for an in-flight permit (generator saturated)
//	counts.delivered     distinct (sender, ordinal) pulled by the recipient (MAILBOX_BATCH); group
//	                     mode: mailbox entries, distinct (message, member) pulled, own copies included
//	counts.missing       ACKed but never pulled by the recipient after the settle wait; group
//	                     mode: expected entries of ACKed messages never pulled (= group.lost_entries)
//	counts.raw_duplicates       the same message_id pulled again (at-least-once: allowed)
//	counts.duplicates_after_dedup another message_id pulled for an already delivered send
//	                     (a double commit: must be 0)
//	counts.ack_mismatch  pulled message_id differs from the one SEND_ACK named
//	counts.failed_visible a definite failure that was delivered anyway
//	counts.pushes, push_events, push_duplicates   PUSH_EVENTS frames, events, repeated pushes
//	counts.pulls, pull_errors, own_copies, cursor_expired, foreign_events
//	counts.control_events group mode: the groups' CONTROL (membership) entries pulled, skipped
//	counts.unmatched_entries group mode: body-less entries (the fanout was over the inline body
//	                     budget) pulled under a message_id no SEND_ACK named; also in foreign_events
//	counts.pings, ping_timeouts                   PING control group
//	counts.stored        records read back with PULL_HISTORY after the settle wait (config.history
//	                     only); stored_errors: PULL_HISTORY requests that failed (ERROR, no
//	                     answer, lost link; each also in errors; a page is tried 4 times,
//	                     alternating the pair's connections); stored_incomplete: pairs whose
//	                     conversation could not be read to the end (its Stored events are partial)
//	failures_by_code     {"UNAVAILABLE": n, ...}; "PING <code>" for PING errors
//	segments.<name>      {count, min_ms, mean_ms, p50_ms, p90_ms, p99_ms, p999_ms, max_ms,
//	                     percentiles: [{p, ms}]} whole-run HDR summary; names:
//	                       send_ack       SEND written → SEND_ACK read (sender)
//	                       send_push      SEND written → first PUSH_EVENTS with it (recipient)
//	                       end_to_end     SEND written → MAILBOX_BATCH that delivered it (group
//	                                      mode: one sample per member but the sender)
//	                       ack_push       SEND_ACK read → first PUSH_EVENTS (fanout, materialize,
//	                                      push; only messages whose ACK came first)
//	                       push_pull      first PUSH_EVENTS → MAILBOX_BATCH that delivered it
//	                                      (the recipient's pull; only messages pushed first)
//	                       ping_rtt       PING → PONG on the control group
//	                       generator_lag  intended arrival → SEND written
//	                       broadcast      room mode: SEND written → the event read by a member
//	timeline[]           one per window: end_s, dur_s, phase ("run" | "drain"), sent, acked,
//	                     delivered, send_rate, ack_rate, deliver_rate, queued (arrivals waiting
//	                     in the generator), inflight (SENDs awaiting answers), segments.<name>
//	                     {count, p50_ms, p99_ms, max_ms}
//	cpu                  window_s, processes[{name, pid, cpu_s, cores, error}], total_s (system
//	                     under test), ms_per_message (total CPU ms / acked_in_window),
//	                     ms_per_entry (group mode: total CPU ms / group.entries_in_window),
//	                     loadgen_s, machine_busy_cores, machine_idle_pct, complete
//	settle               waited_s, missing_at_start, complete
//	sdk_lane             enabled, available, clients, sent, acked, received, missing, repeated, failed,
//	                     verified, passed, detail
//	group                group mode only: group_size, groups, expected_entries (ACKed × group
//	                     size), delivered_entries, lost_entries, lost_own_copies,
//	                     entries_in_window, entry_rate (entries_in_window / duration_s)
//	room                 room mode only: room_size, rooms, room_senders, expected_events (ACKed
//	                     × room size), delivered_events, delivered_events_per_s (of publishes in
//	                     the window), delivered_fraction, gaps, slow_consumer_drops,
//	                     cpu_ms_per_delivered_event (cpu.ms_per_entry is the same figure)
//	verdicts[]           {name, passed, detail}: arrival rate, send→ACK p99, end-to-end p99,
//	                     missing (group mode: lost entries), duplicates after dedup, failures,
//	                     sdk lane, and cpu per message only when Thresholds.CPUMsPerMessage sets
//	                     a budget; room mode: arrival rate, send→ACK p99, broadcast p99, room
//	                     events lost, room failures (and cpu per message when budgeted)
//	errors, error_count  first problems seen (no bodies, no tokens) and how many in total
package loadgen
