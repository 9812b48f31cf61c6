package notify

import (
	"slices"
	"testing"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/pushtoken"
)

var tenant = contract.TenantID{Lo: 7}

func dispatchOf(typ contract.MessageType, sender uint64, recips ...uint64) *internalv1.GroupDispatch {
	conv := contract.DirectConversationID(tenant, 1, 2).Bytes()
	mid := contract.U128{Lo: 99}.Bytes()
	return &internalv1.GroupDispatch{ConversationId: conv[:], MessageId: mid[:], ConversationSeq: 5,
		SenderUserId: sender, MessageType: uint32(typ), Recipients: recips}
}

// Each case states which recipients of one dispatch are woken and why the others are not.
func TestPlanWakesOnlyOfflineRecipientsOfUnreadableMessages(t *testing.T) {
	online := map[contract.UserID]bool{3: true}
	for _, tc := range []struct {
		name    string
		d       *internalv1.GroupDispatch
		want    []contract.UserID
		skipped map[string]int
	}{
		{"direct: the peer, not the sender", dispatchOf(contract.MessageText, 1, 1, 2), []contract.UserID{2}, map[string]int{skipSender: 1}},
		{"an online recipient is left to the push path", dispatchOf(contract.MessageText, 1, 2, 3, 4), []contract.UserID{2, 4}, map[string]int{skipOnline: 1}},
		{"a CONTROL message wakes nobody", dispatchOf(contract.MessageControl, 1, 2, 4), nil, map[string]int{skipControl: 2}},
		{"custom messages count as unread", dispatchOf(contract.MessageCustom, 1, 2), []contract.UserID{2}, map[string]int{}},
	} {
		skipped := map[string]int{}
		got := plan(tc.d, tenant, func(_ contract.TenantID, u contract.UserID) bool { return online[u] },
			func(r string, n int) { skipped[r] += n })
		var users []contract.UserID
		for _, o := range got {
			users = append(users, o.user.User)
			if o.msg.seq != 5 || o.msg.id != (contract.MessageID{Lo: 99}) || o.msg.sender != 1 || o.user.Tenant != tenant {
				t.Errorf("%s: coordinates %+v", tc.name, o)
			}
		}
		if !slices.Equal(users, tc.want) {
			t.Errorf("%s: woken %v, want %v", tc.name, users, tc.want)
		}
		for r, n := range tc.skipped {
			if skipped[r] != n {
				t.Errorf("%s: skipped[%s] = %d, want %d (all: %v)", tc.name, r, skipped[r], n, skipped)
			}
		}
	}
}

// One job per (message, device); a dispatch replayed inside one batch yields no second job, and
// a user without registrations none.
func TestJobsOnePerMessageAndDevice(t *testing.T) {
	d := dispatchOf(contract.MessageText, 1, 2, 4)
	never := func(contract.TenantID, contract.UserID) bool { return false }
	to := append(plan(d, tenant, never, func(string, int) {}), plan(d, tenant, never, func(string, int) {})...)
	regs := map[pushtoken.User][]pushtoken.Registration{
		{Tenant: tenant, User: 2}: {{DeviceID: "tablet", Platform: contract.PushFCM, Token: "t"},
			{DeviceID: "phone", Platform: contract.PushAPNs, Token: "p"}},
	}
	skipped := map[string]int{}
	js := jobs(to, regs, map[pushtoken.User]int{{Tenant: tenant, User: 2}: 4}, func(r string, n int) { skipped[r] += n })
	var devices []string
	for _, j := range js {
		devices = append(devices, j.reg.DeviceID)
		if j.badge != 4 {
			t.Errorf("job of %s: badge %d, want the user's 4", j.reg.DeviceID, j.badge)
		}
	}
	if !slices.Equal(devices, []string{"phone", "tablet"}) {
		t.Errorf("jobs for devices %v, want [phone tablet]", devices)
	}
	if skipped[skipDone] != 2 || skipped[skipNoTokens] != 2 {
		t.Errorf("skipped %v, want 2 in-batch duplicates and user 4 twice without tokens", skipped)
	}
}
