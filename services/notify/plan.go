package notify

import (
	"slices"
	"strings"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/pushtoken"
)

// Why a recipient of a dispatch is not notified (the skip reasons counted).
const (
	skipSender   = "sender"    // the sender's own copy: their devices know
	skipControl  = "control"   // membership and other CONTROL messages are never unread
	skipOnline   = "online"    // some device of the user is online: the push path reaches it
	skipNoTokens = "no_tokens" // no device of the user registered a token
	skipNoPlatf  = "no_provider"
	skipDone     = "duplicate" // accepted before (a replayed dispatch)
)

// offline is one recipient to notify, with the message's coordinates.
type offline struct {
	user pushtoken.User
	msg  message
}

// message is what a notification says about the message.
type message struct {
	conversation contract.ConversationID
	seq          uint64
	id           contract.MessageID
	sender       contract.UserID
}

// plan picks the recipients of one dispatch that must be woken: not the sender, not for a
// message that can never be unread, and only users with no device online. It is pure: the
// online test is the caller's (the presence directory under its lock), and skipped counts
// each recipient left out by reason.
func plan(d *internalv1.GroupDispatch, tenant contract.TenantID, online func(contract.TenantID, contract.UserID) bool,
	skipped func(reason string, n int)) []offline {
	recips := d.GetRecipients()
	if !contract.MessageType(d.GetMessageType()).CountsAsUnread() {
		skipped(skipControl, len(recips))
		return nil
	}
	conv, _ := contract.ParseConversationID(d.GetConversationId())
	mid, _ := contract.U128FromBytes(d.GetMessageId())
	m := message{conversation: conv, seq: d.GetConversationSeq(), id: contract.MessageID(mid), sender: contract.UserID(d.GetSenderUserId())}
	var out []offline
	for _, u := range recips {
		user := contract.UserID(u)
		switch {
		case user == m.sender:
			skipped(skipSender, 1)
		case online(tenant, user):
			skipped(skipOnline, 1)
		default:
			out = append(out, offline{user: pushtoken.User{Tenant: tenant, User: user}, msg: m})
		}
	}
	return out
}

// job is one notification to one device.
type job struct {
	to    offline
	reg   pushtoken.Registration
	done  string // pushtoken.DoneKey
	badge int    // the user's unread total, -1 when unknown
}

// jobs pairs the offline recipients with their devices' registrations, one job per
// (message, device), duplicates within the batch removed (a dispatch replayed inside one poll).
// A user missing from badge gets none (-1).
func jobs(to []offline, regs map[pushtoken.User][]pushtoken.Registration, badge map[pushtoken.User]int, skipped func(string, int)) []job {
	var out []job
	seen := map[string]bool{}
	for _, o := range to {
		rs := regs[o.user]
		if len(rs) == 0 {
			skipped(skipNoTokens, 1)
			continue
		}
		slices.SortFunc(rs, func(a, b pushtoken.Registration) int { return strings.Compare(a.DeviceID, b.DeviceID) })
		for _, r := range rs {
			k := pushtoken.DoneKey(o.user.Tenant, o.msg.id, o.user.User, r.DeviceID)
			if seen[k] {
				skipped(skipDone, 1)
				continue
			}
			seen[k] = true
			b, ok := badge[o.user]
			if !ok {
				b = -1
			}
			out = append(out, job{to: o, reg: r, done: k, badge: b})
		}
	}
	return out
}
