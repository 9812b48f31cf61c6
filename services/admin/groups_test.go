package admin

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// recordingGroups stands in for the writer's GroupAdmin: it records each request and answers
// with out. (The real RPC is covered end to end: gates/e2e admin-api-kicks-lists-and-groups.)
type recordingGroups struct {
	got   []*internalv1.AdminGroupRequest
	out   *internalv1.AdminGroupOutcome
	sends []*internalv1.AdminSendRequest
	sent  *internalv1.SendOutcome
}

func (r *recordingGroups) AdminSend(_ context.Context, in *internalv1.AdminSendRequest) (*internalv1.SendOutcome, error) {
	r.sends = append(r.sends, in)
	return r.sent, nil
}

func (r *recordingGroups) AdminGroup(_ context.Context, in *internalv1.AdminGroupRequest) (*internalv1.AdminGroupOutcome, error) {
	r.got = append(r.got, in)
	return r.out, nil
}

func TestGroupRoutesMapRequestsAndRefusals(t *testing.T) {
	f := newFixture(t, false)
	const group = "0000000000000000000000000000abcd"
	if status, _ := f.call(t, http.MethodGet, "/v1/groups/members?group="+group, groupsKey, ""); status != 404 {
		t.Fatalf("without writers: %d, want 404", status)
	}
	g := &recordingGroups{out: &internalv1.AdminGroupOutcome{GroupId: contract.U128{Lo: 0xabcd}.AppendBytes(nil), MembershipVersion: 3,
		ConversationSeq: 9, Members: []*qimv1.Member{{UserId: 5, JoinedAtSeq: 1}}}}
	f.api.groups = g
	status, out := f.call(t, http.MethodPost, "/v1/groups", groupsKey, `{"owner": 5, "members": [6, 7], "name": "ops"}`)
	if status != 200 || out["group"] != group || out["conversation_seq"] != float64(9) {
		t.Fatalf("create: %d %v", status, out)
	}
	if r := g.got[0]; contract.AdminGroupOp(r.Op) != contract.AdminGroupCreate || r.OwnerUserId != 5 || len(r.UserIds) != 2 || len(r.ClientRequestId) != 16 || len(r.TenantId) != 16 {
		t.Fatalf("create sent %v", r)
	}
	if status, _ := f.call(t, http.MethodDelete, "/v1/groups/members", groupsKey, `{"group": "`+group+`", "users": [7]}`); status != 200 || contract.AdminGroupOp(g.got[1].Op) != contract.AdminGroupRemove {
		t.Fatalf("remove: %d %v", status, g.got[1])
	}
	status, out = f.call(t, http.MethodGet, "/v1/groups/members?group="+group, groupsKey, "")
	if members, _ := out["members"].([]any); status != 200 || len(members) != 1 {
		t.Fatalf("list: %d %v", status, out)
	}
	for _, c := range []struct {
		code contract.ErrorCode
		want int
	}{{contract.ErrCodeGroupFull, 409}, {contract.ErrCodeInvalidArgument, 400}, {contract.ErrCodeUnavailable, 503}} {
		g.out = &internalv1.AdminGroupOutcome{ErrorCode: uint32(c.code), ErrorMessage: "no"}
		if status, _ := f.call(t, http.MethodPost, "/v1/groups/members", groupsKey, `{"group": "`+group+`", "users": [8]}`); status != c.want {
			t.Errorf("writer refusal %s: %d, want %d", c.code, status, c.want)
		}
	}
	for _, bad := range []string{`{"group": "` + group + `", "users": []}`, `{"group": "zz", "users": [1]}`, `{"users": [1]}`} {
		if status, _ := f.call(t, http.MethodPost, "/v1/groups/members", groupsKey, bad); status != 400 {
			t.Errorf("%s: %d, want 400", bad, status)
		}
	}
}

func TestDecodeQueryIsStrict(t *testing.T) {
	var q DevicesQuery
	if err := decodeQuery(url.Values{"user": {"12"}, "tenant": {"ab"}}, &q); err != nil || q.User != 12 || q.Tenant != "ab" {
		t.Fatalf("decodeQuery = %+v, %v", q, err)
	}
	for _, v := range []url.Values{{"usr": {"1"}}, {"user": {"1", "2"}}, {"user": {"x"}}} {
		if err := decodeQuery(v, &DevicesQuery{}); err == nil {
			t.Errorf("decodeQuery(%v) accepted", v)
		}
	}
}

// Without QIM_KAFKA_BROKERS the devices route says so (404), after the query is checked.
func TestDevicesWithoutPresence(t *testing.T) {
	f := newFixture(t, false)
	if status, _ := f.call(t, http.MethodGet, "/v1/devices?user=0", sessKey, ""); status != 400 {
		t.Fatalf("user 0: %d, want 400", status)
	}
	if status, out := f.call(t, http.MethodGet, "/v1/devices?user=4", sessKey, ""); status != 404 {
		t.Fatalf("no presence: %d %v, want 404", status, out)
	}
}

// A system message goes to AdminSend as SYSTEM with its target and key; bad requests stop
// before it, and the writer's refusals map to statuses.
func TestMessageRoute(t *testing.T) {
	f := newFixture(t, false)
	const group = "0000000000000000000000000000abcd"
	g := &recordingGroups{sent: &internalv1.SendOutcome{Ack: &qimv1.SendAck{MessageId: make([]byte, 16), ConversationId: make([]byte, 16), ConversationSeq: 4}}}
	f.api.groups = g
	status, out := f.call(t, http.MethodPost, "/v1/messages", msgKey, `{"sender": 9, "to_user": 5, "body": "maintenance at 02:00", "client_message_id": "000000000000000000000000000000aa"}`)
	if status != 200 || out["conversation_seq"] != float64(4) || out["client_message_id"] != "000000000000000000000000000000aa" {
		t.Fatalf("message: %d %v", status, out)
	}
	var req qimv1.SendRequest
	if err := proto.Unmarshal(g.sends[0].SendRequest, &req); err != nil || contract.MessageType(req.MessageType) != contract.MessageSystem ||
		req.GetPeerUserId() != 5 || string(req.Body) != "maintenance at 02:00" || g.sends[0].SenderUserId != 9 {
		t.Fatalf("sent %v (%v)", &req, err)
	}
	for _, bad := range []string{`{"sender": 9, "body": "x"}`, `{"sender": 9, "to_user": 5, "group": "` + group + `", "body": "x"}`,
		`{"sender": 0, "to_user": 5, "body": "x"}`, `{"sender": 9, "to_user": 5, "body": ""}`, `{"sender": 9, "group": "zz", "body": "x"}`} {
		if status, _ := f.call(t, http.MethodPost, "/v1/messages", msgKey, bad); status != 400 {
			t.Errorf("%s: %d, want 400", bad, status)
		}
	}
	g.sent = &internalv1.SendOutcome{ErrorCode: uint32(contract.ErrCodeNotMember), ErrorMessage: "not a current member of this group"}
	if status, _ := f.call(t, http.MethodPost, "/v1/messages", msgKey, `{"sender": 9, "group": "`+group+`", "body": "x"}`); status != 404 {
		t.Fatalf("a sender outside the group: %d, want 404", status)
	}
	if status, _ := f.call(t, http.MethodPost, "/v1/messages", groupsKey, `{"sender": 9, "to_user": 5, "body": "x"}`); status != 403 {
		t.Fatalf("a key without scope messages: %d, want 403", status)
	}
}
