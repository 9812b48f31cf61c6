// Package gateway is the ConnectionNode: it terminates client connections (TCP, TLS 1.3 on the
// same port when a certificate is configured, and WebSocket binary messages carrying the same
// frames), authenticates them, keeps them alive, and routes their requests to the
// ConversationWriter, the MailboxNode and the SessionProjection over gRPC. It also serves the
// Push endpoint the MailboxNode calls to put freshly materialized events onto live connections.
//
// It owns, per connection: the AUTH handshake (dev token, session_epoch, has_offline_data), the
// heartbeat, the eviction of a replaced login (KICKED{REPLACED}), the bounded in-flight window of
// SENDs on one long-lived Writer.SendStream, the pull worker, the bounded push queue, and the
// single wire.Writer every downlink frame goes through. Across connections it owns the registry
// of live sessions keyed by (tenant, user, device).
//
// It must never:
//   - re-serialise a client's uplink message: SEND, PULL_MAILBOX, PULL_HISTORY,
//     PULL_SESSION_LIST and MARK_READ payloads are forwarded byte for byte, so fields added by
//     newer SDKs survive (the gateway only peeks at the fields it must validate);
//   - advance or invent a mailbox cursor: PULL_MAILBOX is the only cursor path and the MailboxNode
//     owns it; PUSH_EVENTS is best effort and never moves a cursor (push.go, cursor.go);
//   - answer SEND_ACK itself or report a SEND as failed when its outcome is unknown: a lost writer
//     stream yields UNAVAILABLE ("retry with the same client_message_id"), never a guess;
//   - queue invisibly: at the in-flight limit it stops reading the socket; every queue it has is
//     bounded and its depth or drops are metrics;
//   - log a token, the signing secret or a payload (obs.SecretDigest / obs.BodyShape only);
//   - resynchronise a broken frame stream: a malformed frame closes that connection only.
//
// session_epoch is assigned here, by INCR of qim:sess:<tenant>:<user>:<device> in the core Redis
// (durable, no TTL, so it only moves forward across gateways and restarts). The design gives that
// job to an Auth/Session service with the ConnectionNode only verifying (docs/architecture.md,
// section 2: planned); until that service exists the gateway is the only writer of the counter,
// and moving it is a drop-in change.
//
// Phase-one scope: a login replaces an older one of the same (tenant, user, device) on THIS
// gateway only. Evicting across gateways needs the PresenceDirectory (a compacted topic keyed by
// user bucket) and is not built yet; until then a deployment with several gateways must route a
// device to one gateway (sticky routing), or two sessions of one device can coexist briefly.
package gateway
