package e2e

import (
	"context"
	"fmt"
	"net/http"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/svc"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/services/admin"
)

// scenarioAdminSystemMessages sends SYSTEM messages through the admin API from a system account:
// to a user (read back from the user's history as SYSTEM from that account), once more with the
// same client_message_id (the same message, not a second), to a group the account is not in
// (404, nothing committed) and, once it is a member, to the group; and a client SEND of SYSTEM
// is refused.
func scenarioAdminSystemMessages(ctx context.Context, e *Env) error {
	a, err := e.Set.StartAdmin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = a.Stop() }()
	system, bob := e.User(), e.User()
	cb, _, err := e.Login(ctx, bob, "b1", 0)
	if err != nil {
		return err
	}
	defer cb.Close()
	req := admin.MessageRequest{Tenant: e.Tenant.String(), Sender: uint64(system), ToUser: uint64(bob), Body: "maintenance tonight",
		CustomType: "notice", ClientMessageID: fmt.Sprintf("%032x", uint64(system))}
	var first, again admin.MessageResponse
	if err := adminCall(ctx, a.URL, a.Key, http.MethodPost, "/v1/messages", req, 200, &first); err != nil {
		return err
	}
	if err := adminCall(ctx, a.URL, a.Key, http.MethodPost, "/v1/messages", req, 200, &again); err != nil {
		return err
	}
	if again != first {
		return fmt.Errorf("the repeated system message answered %+v, the first %+v: want the same message", again, first)
	}
	if err := expectSystemMessage(ctx, cb, first, system, "maintenance tonight"); err != nil {
		return err
	}
	if _, err := cb.SendRequest(ctx, systemSend(system)); !isCode(err, contract.ErrCodeInvalidArgument) {
		return fmt.Errorf("a client SEND of SYSTEM: %v, want INVALID_ARGUMENT", err)
	}
	return adminGroupMessage(ctx, e, a, cb, system, bob)
}

// adminGroupMessage: a system account outside a group is refused (404); added, it can post.
func adminGroupMessage(ctx context.Context, e *Env, a *svc.Admin, cb *Client, system, bob contract.UserID) error {
	var g admin.GroupChange
	if err := adminCall(ctx, a.URL, a.Key, http.MethodPost, "/v1/groups",
		admin.GroupCreateRequest{Tenant: e.Tenant.String(), Owner: uint64(bob), Name: "notices"}, 200, &g); err != nil {
		return err
	}
	req := admin.MessageRequest{Tenant: e.Tenant.String(), Sender: uint64(system), Group: g.Group, Body: "welcome"}
	if err := adminCall(ctx, a.URL, a.Key, http.MethodPost, "/v1/messages", req, 404, nil); err != nil {
		return fmt.Errorf("a system account outside the group: %w", err)
	}
	add := admin.GroupMembersRequest{Tenant: e.Tenant.String(), Group: g.Group, Users: []uint64{uint64(system)}}
	if err := adminCall(ctx, a.URL, a.Key, http.MethodPost, "/v1/groups/members", add, 200, nil); err != nil {
		return err
	}
	var sent admin.MessageResponse
	if err := adminCall(ctx, a.URL, a.Key, http.MethodPost, "/v1/messages", req, 200, &sent); err != nil {
		return err
	}
	return expectSystemMessage(ctx, cb, sent, system, "welcome")
}

// expectSystemMessage finds the message in the reader's history of its conversation, SYSTEM and
// from the system account, exactly once.
func expectSystemMessage(ctx context.Context, c *Client, m admin.MessageResponse, system contract.UserID, body string) error {
	conv, err := contract.ParseU128(m.ConversationID)
	if err != nil {
		return err
	}
	hist, err := c.History(ctx, conv.AppendBytes(nil))
	if err != nil {
		return err
	}
	found := 0
	for _, r := range hist {
		if r.GetConversationSeq() != m.ConversationSeq {
			continue
		}
		found++
		if contract.MessageType(r.GetMessageType()) != contract.MessageSystem || contract.UserID(r.GetSenderUserId()) != system || string(r.GetBody()) != body {
			return fmt.Errorf("seq %d holds a %s message from %d (%q), want SYSTEM from %d (%q)", m.ConversationSeq,
				contract.MessageType(r.GetMessageType()), r.GetSenderUserId(), r.GetBody(), system, body)
		}
	}
	if found != 1 {
		return fmt.Errorf("the history of %s holds seq %d %d times, want once", m.ConversationID, m.ConversationSeq, found)
	}
	return nil
}

// systemSend is a client's attempt to send SYSTEM to peer.
func systemSend(peer contract.UserID) *qimv1.SendRequest {
	return &qimv1.SendRequest{ClientMessageId: NewCmid(), MessageType: uint32(contract.MessageSystem), Body: []byte("posing as the system"),
		Target: &qimv1.SendRequest_PeerUserId{PeerUserId: uint64(peer)}}
}
