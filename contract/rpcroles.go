package contract

// RPCRole is the role a caller of an internal RPC holds. Over mTLS it is looked up from the
// SHA-256 fingerprint of the caller's leaf certificate (the role whitelist): a certificate that
// merely chains to the internal CA has no role and may call nothing.
type RPCRole string

// The roles of the internal RPC boundary. A process holds exactly the roles its certificate's
// fingerprint is listed under; the seed fixes which role may call which method (RPCMethodRoles).
const (
	RPCRoleGateway RPCRole = "gateway" // ConnectionNode calling writer, MailboxNode and SessionProjection
	RPCRoleMailbox RPCRole = "mailbox" // MailboxNode pushing to the gateway
	RPCRoleAdmin   RPCRole = "admin"   // qimctl's group administration
	RPCRoleNotify  RPCRole = "notify"  // NotificationService asking a user's badge
)

// RPCRoles lists every role, for parsing and for help text.
var RPCRoles = []RPCRole{RPCRoleGateway, RPCRoleMailbox, RPCRoleAdmin, RPCRoleNotify}

// RPCMethodRoles is the method matrix of the internal RPC boundary: the full gRPC method name →
// the one role allowed to call it. A method that is not listed is refused to every caller (a new
// RPC is closed until it gets a row here). The seed's matrix, in this module's methods:
//
//	Writer/Gateway     = SendMessage (SendStream, SendMessage) | PullHistory | PullMembers, CreateGroup (Group)
//	Writer/Admin       = GroupAdd (GroupAdmin.AdminGroup)
//	Mailbox/Gateway    = PullMailbox (PullMailbox, PullMailboxBatch, HasOffline: the login's offline probe)
//	                     | PushSession (a MARK_READ's SESSION_DELTA for the user's other devices)
//	GatewayPush/Mailbox = PushBatch
//	Session/Gateway    = SessionListReq (PullSessionList) | MarkRead
//	Session/Notify     = Badge (a user's unread total for an offline push, ADR-0036)
//	Room/Gateway       = RoomJoin, RoomLeave (RoomWriter.Link) | RoomSend (RoomWriter.Publish)
//	Room/Admin         = RoomModeration (RoomWriter.Moderate: ban, kick, mute, slow mode, rate, counts)
//
// The seed's Session/Mailbox = Projection has no method here: the SessionProjection consumes the
// dispatch log itself (ADR-0025).
var RPCMethodRoles = map[string]RPCRole{
	"/qim.internal.v1.Writer/SendStream":        RPCRoleGateway,
	"/qim.internal.v1.Writer/SendMessage":       RPCRoleGateway,
	"/qim.internal.v1.Writer/PullHistory":       RPCRoleGateway,
	"/qim.internal.v1.Writer/Group":             RPCRoleGateway,
	"/qim.internal.v1.Writer/React":             RPCRoleGateway,
	"/qim.internal.v1.GroupAdmin/AdminGroup":    RPCRoleAdmin,
	"/qim.internal.v1.GroupAdmin/AdminSend":     RPCRoleAdmin,
	"/qim.internal.v1.Mailbox/PullMailbox":      RPCRoleGateway,
	"/qim.internal.v1.Mailbox/PullMailboxBatch": RPCRoleGateway,
	"/qim.internal.v1.Mailbox/HasOffline":       RPCRoleGateway,
	"/qim.internal.v1.Mailbox/PushSession":      RPCRoleGateway,
	"/qim.internal.v1.Mailbox/PushSessions":     RPCRoleGateway,
	"/qim.internal.v1.Push/PushBatch":           RPCRoleMailbox,
	"/qim.internal.v1.Session/PullSessionList":  RPCRoleGateway,
	"/qim.internal.v1.Session/MarkRead":         RPCRoleGateway,
	"/qim.internal.v1.Session/PullReadReceipts": RPCRoleGateway,
	"/qim.internal.v1.Session/SetReadReceipts":  RPCRoleGateway,
	"/qim.internal.v1.Session/Badge":            RPCRoleNotify,
	"/qim.internal.v1.RoomWriter/Link":          RPCRoleGateway,
	"/qim.internal.v1.RoomWriter/Publish":       RPCRoleGateway,
	"/qim.internal.v1.RoomWriter/Moderate":      RPCRoleAdmin,
}

// ParseRPCRole accepts the role names of RPCRoles.
func ParseRPCRole(s string) (RPCRole, bool) {
	for _, r := range RPCRoles {
		if string(r) == s {
			return r, true
		}
	}
	return "", false
}

// RPCServerName is the DNS name a server of the internal RPC presents (a SAN of its certificate)
// and its callers verify, with TLS SNI set to it: a gateway's certificate cannot answer as the
// ConversationWriter. The .internal TLD is reserved for private use, so the names never resolve
// on the internet; callers dial addresses, the name is only checked against the certificate.
func RPCServerName(service string) string { return service + ".qim.internal" }

// The services that serve internal RPC, the argument of RPCServerName.
const (
	RPCServiceWriter      = "writer"
	RPCServiceMailbox     = "mailbox"
	RPCServiceSession     = "session"
	RPCServiceGatewayPush = "gateway"
	RPCServiceRoom        = "room"
)
