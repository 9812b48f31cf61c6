// Package store is the SDK's local store: one SQLite database (modernc.org/sqlite, pure Go) per
// (endpoint scope, tenant, user), at the stable path Path derives. It holds what a device has
// durably applied — messages, conversations with their local unread counts, sends that are not
// yet committed (local_pending), the device's mailbox cursor with its generation, and the
// per-install client_message_id ordinal range — and it is the only thing that survives a crash.
//
// What it owns:
//   - atomic application of a batch (messages, conversations, pending resolution and, for a
//     MAILBOX_BATCH, the cursor) in ONE transaction: the cursor can never name an entry whose
//     message is not stored, and a pending send is resolved only together with its committed
//     message (Apply);
//   - durable CREATE_GROUP requests, whose client_request_id and group id are fixed before the
//     first attempt, so a retry after any crash names the same group (groups.go);
//   - the ordinal range behind client_message_id: ranges are reserved with BEGIN IMMEDIATE and
//     committed before any ordinal of them is used, so an id is never handed out twice, even after
//     a crash, a restart or a clock change (ordinal.go);
//   - the forward-only cursor and its REBUILD reset, which bumps the cursor generation (cursor.go);
//   - the unread definition on local data: |{m : m.seq > read_seq ∧ m.sender ≠ self}|, never a
//     subtraction of sequence numbers (conversation.go);
//   - the read watermark: forward only whatever its source (MarkRead, an own message, the
//     server's session list or MARK_READ_ACK), and durably marked when the server has not taken
//     it into account yet, so an offline MarkRead reaches the server after any restart
//     (readstate.go).
//
// What it must never do: talk to the network, decide protocol state (that is the SDK's single
// connection goroutine), move the cursor backwards except through ResetForRebuild, or store a
// token. There is no in-memory store: a host without a data directory cannot open one, because a
// store that does not survive the process loses every cursor and pending send at exit (tests
// open file stores too, through storetest; docs/adr/0015-sdk-store-is-a-file-store.md).
//
// Schema (PRAGMA user_version = schemaVersion; u64 values are stored as their two's-complement
// int64, sequences never have bit 63 set):
//
//	meta          (id=1) endpoint_scope, tenant(16), user_id, install_id(16), created_at_ms
//	cursor        (id=1) mailbox_seq, generation, updated_at_ms, last_reset_reason
//	ordinals      (id=1) reserved_to: every ordinal below it may have been used; never reused
//	messages      message_id(16) PK, conversation_id, conversation_seq, sender, message_type,
//	              custom_type, has_body, body, client_message_id (own messages), sent_at_ms,
//	              flags, source, stored_at_ms; UNIQUE(conversation_id, conversation_seq)
//	conversations conversation_id PK, kind, peer_user, latest_seq, latest_message_id,
//	              last_activity_ms, synced_seq, read_seq, unread, unread_exact, gap_from_seq,
//	              read_sent_seq (version 2), head_seq (version 3: seq of latest_message_id,
//	              the newest message that is not CONTROL)
//	pending       client_message_id PK, ordinal UNIQUE, conversation_id (direct or group),
//	              peer_user (0 for a group), message_type, custom_type, body, mentions,
//	              created_at_ms, state, error_code, error_text
//	group_creates (version 3) client_request_id PK, ordinal UNIQUE, group_id, name, members,
//	              created_at_ms, state, error_code, error_text: CREATE_GROUPs not yet confirmed
package store
