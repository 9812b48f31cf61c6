// Package room is the RoomWriter: it owns the live-broadcast chatrooms (live-stream chat) that
// gateways place on it with contract.RoomOwner, assigns each room's room_seq, keeps the room's
// recent events in an in-process ring buffer and broadcasts them to the gateways holding joined
// connections (ADR-0034). It serves RoomWriter.Publish (a client SEND with a room target) and
// RoomWriter.Link (one ordered stream per gateway: joins and leaves up, join answers and event
// batches down).
//
// It owns, per room (created on the first join or publish, dropped by the idle sweep):
//   - the room_seq counter, starting at contract.RoomSeqBase(instantiation second), so a room
//     re-created here or on another instance continues in a larger epoch (room.go);
//   - the ring buffer of the last QIM_ROOM_BUFFER_EVENTS events not older than
//     QIM_ROOM_BUFFER_AGE, which is the replay window of a rejoin and the idempotency window of a
//     publish (ring.go);
//   - the joined connections, counted per link and per user: one broadcast item per link per
//     event, never one per member (room.go, link.go).
//
// Invariants:
//   - ordering on a link: a join's answer is enqueued under the room's lock, like every broadcast
//     of that room, so every event of that room that the link carries after the answer has a
//     larger room_seq than the answer's room_seq, and the replay holds only smaller ones;
//   - idempotency lasts as long as the event stays in the buffer: a retried publish (same
//     sender, client_message_id and content) answers the first ack and broadcasts nothing; the
//     same key with other content is CONFLICT; once evicted, the key is forgotten;
//   - nothing of a room's events is durable: the buffer, room_seq and memberships are
//     process-local and survive nothing. A restart shows clients a room_seq jump (the new epoch)
//     and replay_truncated, never events invented or re-numbered. Only moderation is stored
//     (modstore, in the core Redis): a decision is stored before it applies, and a room's are
//     loaded before it decides anything (modload.go);
//   - every queue is bounded: a link whose queue (QIM_ROOM_LINK_QUEUE items) is full is ended
//     with RESOURCE_EXHAUSTED and its memberships removed; the gateway tells its connections
//     ROOM_LEFT UNAVAILABLE and they rejoin with replay.
//
// It must never:
//   - write a room event to a mailbox, a session list, unread or history, or hold a per-member
//     anything beyond a join count (rooms have no mailbox, no session row, no unread);
//   - block a publish on a slow gateway: enqueue never waits;
//   - claim a complete replay it cannot prove: replay_truncated is set whenever the requested
//     start is older than the oldest event it returns (and for a room new to this process);
//   - check placement: gateways route by contract.RoomOwner, and this process serves any room
//     it is sent.
//
// Rejected alternatives:
//   - one RPC per member delivery: a room of 10,000 members would cost 10,000 calls per event;
//     here it costs one queue push per gateway (the gateway fans out to its own connections);
//   - a gRPC stream per member or per joined connection: the same cost in streams and
//     flow-control windows, and no ordering between a member's join answer and its events;
//   - buffering without bound for a slow gateway: one stuck gateway would grow the process until
//     it dies and takes every room with it; rooms are lossy by design, so a slow link is cut and
//     its members rejoin with replay;
//   - failing a room over to another instance while its owner is down: ownership is by
//     contract.RoomOwner, and a second owner would issue a second room_seq sequence for the same
//     room. A room whose owner is lost is unavailable until the owner returns, and then starts a
//     new epoch.
package room
