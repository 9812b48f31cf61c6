/*
 * qim.h: the C ABI of the Q-IM Go SDK (libqim, built from sdk/capi with -buildmode=c-shared or
 * c-archive). ABI version 1: qim_abi_version() returns QIM_ABI_VERSION of the library, and an
 * application built against another major version must not use it.
 *
 * Rules every function follows:
 *  - Handles. qim_client_open returns an opaque qim_client. Every other call takes it; a handle
 *    that was never opened or is already closed is answered QIM_E_HANDLE, never undefined
 *    behaviour. qim_client_close ends the client and frees the handle.
 *  - Threads. Every function may be called from any thread, concurrently, on the same or
 *    different handles. qim_next_event delivers each event once, to one caller.
 *  - Memory. Inputs are borrowed for the call only and never modified (the prototypes carry no
 *    const because cgo cannot declare it). Every char* the library returns through an out
 *    parameter (results, events, error messages) is owned by the caller and must be released
 *    with qim_free, exactly once; on failure the result out parameter is left NULL. Nothing
 *    the library returns points into its own memory. qim_outstanding() counts the buffers
 *    handed out and not yet freed, for an application's own leak checks.
 *  - Errors. Each call returns QIM_OK or an error code below; with an error, *err (when err is
 *    not NULL) receives a message in English, which the caller frees. Server refusals come back
 *    as QIM_E_SERVER with the protocol's error name first in the message ("NOT_MEMBER: ...").
 *  - Data. Results and events are UTF-8 JSON objects. Identifiers that do not fit a double
 *    exactly are strings: user ids and seqs as decimal, message, conversation and client message
 *    ids as 32 lowercase hex digits (big-endian u128). Bodies are base64 ("body_b64").
 *  - Durability. A send returns its client_message_id once the message is stored locally; the
 *    library delivers it after reconnects by itself, and reports it exactly once as a
 *    "committed" or "failed" event.
 */
#ifndef QIM_H
#define QIM_H

#include <stddef.h>
#include <stdint.h>

#define QIM_ABI_VERSION 1

typedef uint64_t qim_client;

enum {
	QIM_OK = 0,
	QIM_E_INVALID = 1,     /* a malformed argument or configuration */
	QIM_E_HANDLE = 2,      /* no open client has this handle */
	QIM_E_TIMEOUT = 3,     /* nothing arrived within the timeout (qim_next_event) or the call's deadline passed */
	QIM_E_CLOSED = 4,      /* the client is closed or not connected for good */
	QIM_E_SERVER = 5,      /* the server refused: the message starts with the protocol's error name */
	QIM_E_UNAVAILABLE = 6, /* not connected now, or the server could not answer: retry later */
	QIM_E_INTERNAL = 7     /* a local failure (the store, the disk) */
};

/* The ABI version of the loaded library. */
uint32_t qim_abi_version(void);

/* Opens a client from a JSON configuration and stores its handle in *out. No network I/O.
 * {"data_dir": "/abs/dir", "gateway": "host:port", "tls": false, "user": "42",
 *  "device": "phone-1", "token": "...", "tenant": "0"}  (tls and tenant optional) */
int qim_client_open(char* config_json, qim_client* out, char** err);

/* Starts the connection loop in the background; progress arrives as events. */
int qim_client_connect(qim_client c, char** err);

/* Ends the connection, closes the local store and frees the handle. */
int qim_client_close(qim_client c);

/* Stores a direct message to peer (a decimal user id) for sending; *cmid receives its
 * client_message_id (32 hex digits). */
int qim_send(qim_client c, char* peer_user, uint8_t* body, size_t body_len, char** cmid, char** err);

/* Stores a group message (group conversation id, 32 hex digits) for sending. */
int qim_send_group(qim_client c, char* group_conversation, uint8_t* body, size_t body_len, char** cmid, char** err);

/* Waits up to timeout_ms (0: do not wait) for the next event and stores it in *event_json:
 * {"type": "online" | "offline" | "messages_added" | "conversations_updated" | "committed" |
 *  "failed" | "kicked" | "sync_progress" | ..., ...}. QIM_E_TIMEOUT when none arrived. */
int qim_next_event(qim_client c, int32_t timeout_ms, char** event_json, char** err);

/* The local session list: {"conversations": [{"id", "kind", "peer", "latest_seq", "read_seq",
 * "unread", "unread_exact", ...}]}. */
int qim_conversations(qim_client c, char** result_json, char** err);

/* One page of a conversation's history from the server (direction 1 OLDER, 2 NEWER; anchor
 * exclusive, 0 = from the newest or the oldest): {"messages": [...], "has_more": bool}. */
int qim_history(qim_client c, char* conversation, uint64_t anchor_seq, int32_t direction, int32_t limit,
	int32_t timeout_ms, char** result_json, char** err);

/* Raises the read watermark of a conversation to seq; *result_json is the conversation after. */
int qim_mark_read(qim_client c, char* conversation, uint64_t seq, char** result_json, char** err);

/* Recall, edit and delete a stored message (read it with qim_history or receive it first),
 * named by its conversation and seq: recorded as a durable send like qim_send, *client_message_id
 * is the amendment's; "committed" or "failed" reports it. Recall and edit: the sender's own (recall
 * within the server's window); delete: the sender's own, or any in a group the caller owns. */
int qim_recall(qim_client c, char* conversation, uint64_t seq, char** client_message_id, char** err);
int qim_edit(qim_client c, char* conversation, uint64_t seq, uint8_t* body, size_t body_len,
             char** client_message_id, char** err);
int qim_delete(qim_client c, char* conversation, uint64_t seq, char** client_message_id, char** err);

/* Adds (remove 0) or removes the caller's reaction key (an emoji, at most 32 bytes of UTF-8) on
 * the stored message at seq; safe to repeat: {"changed", "reactions": [{"key", "count", "mine"}]}.
 * Participants' reactions arrive as "reaction_changed" events. timeout_ms 0: 10 s. */
int qim_react(qim_client c, char* conversation, uint64_t seq, char* key, int32_t remove, int32_t timeout_ms,
              char** result_json, char** err);

/* Who of a group read how far: {"group", "seq", "read_count", "audience", "reads": [{"user",
 * "read_seq"}]}, read_count of audience being the members who can see seq and read it (seq 0:
 * watermarks only). timeout_ms 0: 10 s. */
int qim_read_receipts(qim_client c, char* group, uint64_t seq, int32_t timeout_ms, char** result_json, char** err);

/* Withholds (share 0) or shares again (1, the default) the caller's read receipts. Symmetric:
 * while withheld nobody sees the caller's reads and it sees nobody's (qim_read_receipts is then
 * QIM_E_SERVER "FORBIDDEN"). *result_json: {"share"}. timeout_ms 0: 10 s. */
int qim_set_read_receipts(qim_client c, int32_t share, int32_t timeout_ms, char** result_json, char** err);

/* Tells a peer (target: a decimal user id) or a group of at most 100 members (its 32-digit id)
 * that the caller is typing (typing 1) or stopped (0); repeat every few seconds while typing.
 * Best effort, never stored: offline it is dropped (QIM_E_UNAVAILABLE). Others' typing arrives as
 * "typing" events. */
int qim_set_typing(qim_client c, char* target, int32_t typing, char** err);

/* Groups. qim_create_group records the group locally and returns at once, online or not, with
 * its id; "group_created" or "group_create_failed" reports the outcome. members_json is a JSON
 * array of decimal user ids besides the caller, e.g. ["43","44"].
 * *result_json: {"group", "client_request_id", "name"}. */
int qim_create_group(qim_client c, char* name, char* members_json, char** result_json, char** err);

/* The group's current members from the server: {"group", "version", "members": [{"user",
 * "joined_at_seq"}]}. Not a member: QIM_E_SERVER "NOT_MEMBER". timeout_ms 0: 10 s. */
int qim_group_members(qim_client c, char* group, int32_t timeout_ms, char** result_json, char** err);

/* Leaves the group once the server has recorded it: {"group", "left_at_seq",
 * "membership_version"}. */
int qim_leave_group(qim_client c, char* group, int32_t timeout_ms, char** result_json, char** err);

/* Registers this device's offline-push token (platform 1 FCM, 2 APNS with app_id the bundle id,
 * 3 WEBHOOK; an empty token removes the registration): while none of the user's devices is
 * online, the server wakes it through the provider with the conversation and message id, never
 * the body. Call it once connected, at every start and whenever the OS hands out a new token.
 * *result_json: {"registered", "platform"}. Not connected: QIM_E_UNAVAILABLE. timeout_ms 0: 10 s. */
int qim_register_push_token(qim_client c, int32_t platform, char* token, char* app_id, int32_t timeout_ms,
                            char** result_json, char** err);

/* Rooms: live and lossy, never stored locally. Each call waits for the server's answer up to
 * timeout_ms (0: 10 s); the room's events arrive as "room_joined", "room_events" and "room_left"
 * events. A room id is 32 hex digits of any non-zero u128 the application chooses. */

/* Joins a room; with replay non-zero, the buffered events from room_seq replay_from first.
 * *result_json: {"room", "room_seq", "replay_truncated"}. Banned: QIM_E_SERVER "NOT_MEMBER". */
int qim_join_room(qim_client c, char* room, int32_t replay, uint64_t replay_from, int32_t timeout_ms,
	char** result_json, char** err);

/* Leaves a room; the library stops rejoining it. */
int qim_leave_room(qim_client c, char* room, int32_t timeout_ms, char** err);

/* Publishes into a joined room. *result_json: {"room", "client_message_id", "room_seq",
 * "sent_at_ms"}. Slow mode or the room's rate: QIM_E_SERVER "RATE_LIMITED". */
int qim_send_room(qim_client c, char* room, uint8_t* body, size_t body_len, int32_t timeout_ms,
	char** result_json, char** err);

/* Frees a buffer the library returned. NULL is ignored. */
void qim_free(void* p);

/* Buffers handed out and not yet freed. */
int64_t qim_outstanding(void);

#endif /* QIM_H */
