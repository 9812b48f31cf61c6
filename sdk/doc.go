// Package sdk is the Q-IM client core: the one state machine every client host uses (the
// qim-desktop terminal client, the load generator's SDK lane, future GUI and mobile bindings). It
// owns the device's side of the delivery contract: a local SQLite store at a stable path
// (package store), the device's mailbox cursor, pending sends with durable client_message_ids,
// reconciliation after every reconnect, and the events an app renders.
//
// How a client runs:
//
//	c, err := sdk.Open(cfg)              // opens the store; no network
//	go render(c.Events())                // Online, MessagesAdded, Committed, Kicked, ...
//	c.Connect(ctx)                       // on an explicit user action
//	cmid, err := c.Send(ctx, peer, body, sdk.SendOptions{}) // pending at once, online or offline
//	joined, err := c.JoinRoom(ctx, room, sdk.RoomJoinOptions{}) // needs the connection; RoomEvents follow
//	c.Close()
//
// After every (re)connect the client authenticates with its stored cursor, pulls the mailbox
// until has_more is false — committing each batch to SQLite before moving the cursor and
// resolving its own pending sends whose client_message_id appears in their own mailbox copy —
// then pulls the session list once (merging the user's read watermark forward only and recording
// conversations the device never saw), backfills what is incomplete, and only then resends what
// is still pending, with the same client_message_id, so a send whose ACK was lost is neither
// lost nor duplicated. Pushes are stored at once for latency but never move the cursor; each
// push asks for one coalesced pull.
//
// Groups: CreateGroup and SendGroup are durable like Send (recorded first, sent once reconciled,
// retried with the same idempotency key; the group id is derived from the create's key, so it is
// known at once); Members and LeaveGroup need the server now. Membership changes arrive as CONTROL
// messages of the group conversation and are announced decoded (MembershipChanged); they never
// count as unread and never head a session row by themselves. NOT_MEMBER, GROUP_FULL and
// INVALID_ARGUMENT match ErrNotMember, ErrGroupFull and ErrInvalid with errors.Is.
//
// Rooms (ADR-0034) are live broadcast channels and are kept out of the store altogether: no
// cursor, session row, unread, MarkRead or pending send. JoinRoom needs the server now (LeaveRoom
// offline just forgets the room); the joined set lives in memory for the Client's lifetime
// (Rooms), and after every reconnect (and
// after ROOM_LEFT SLOW_CONSUMER or UNAVAILABLE) the SDK rejoins each room with
// replay_from_room_seq = the last room_seq delivered + 1, reporting RoomJoined again (with an
// honest ReplayTruncated) and a RoomEvents.Gap wherever room_seq jumps; REMOVED and ROOM_CLOSED
// end the membership for good (RoomLeft). SendRoom is not durable: it waits for the ack, retrying
// with the same client_message_id across a lost connection while its context lasts. Events of a
// room not joined (a ROOM_LEFT overtook them) are dropped, and so are room events arriving while
// the app leaves more than Config.EventBacklogPause events unread (reported as a gap).
//
// Read state: unread is |{m : m.seq > read_seq ∧ m.sender ≠ self}| over local messages (CONTROL,
// recalled and deleted excluded), the server's definition. The read watermark is per user on the
// server and only moves forward everywhere: MarkRead raises it locally and sends MARK_READ (now,
// or after the next login when offline — the store remembers what the server has not
// acknowledged), and every login takes the server's value from the session list, sending
// MARK_READ back where the local one is higher, so the user's devices converge.
//
// What it must never do:
//   - move the cursor except by committing a MAILBOX_BATCH (never from a push, never backwards;
//     a REBUILD resets it to zero under a new generation);
//   - lower a read watermark, or copy the server's unread count instead of evaluating the one
//     definition over local messages;
//   - record an in-memory fact (dedup entry, resolved pending, event) before the SQLite commit it
//     depends on;
//   - run without a data directory outside tests, or reconnect by itself after KICKED{REPLACED}
//     (two devices would evict each other forever);
//   - write anything of a room to the store (cursor, conversation, unread, pending send);
//   - block the connection goroutine on the app: Events is fed from an in-memory queue;
//   - log a token or a message body, or put a token into a path.
package sdk
