package writer

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/rpcauth"
)

// groupCall sends one client group request as the gateway would and returns its outcome.
func (w *testWriter) groupCall(t testing.TB, actor contract.UserID, op contract.Opcode, msg proto.Message) *internalv1.GroupOutcome {
	t.Helper()
	b, _ := proto.Marshal(msg)
	tenant := contract.TenantID{}.Bytes()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := w.client.Group(ctx, &internalv1.AuthenticatedGroupRequest{TenantId: tenant[:], ActorUserId: uint64(actor),
		ActorDeviceId: "d1", Opcode: uint32(op), Payload: b})
	if err != nil {
		t.Fatalf("Group rpc: %v", err)
	}
	return out
}

func (w *testWriter) createGroup(t testing.TB, creator contract.UserID, members ...uint64) *qimv1.GroupCreated {
	t.Helper()
	o := w.groupCall(t, creator, contract.OpCreateGroup, &qimv1.CreateGroup{ClientRequestId: newCmid(t), Name: "g", MemberUserIds: members})
	var gc qimv1.GroupCreated
	if o.GetErrorCode() != 0 || proto.Unmarshal(o.GetPayload(), &gc) != nil {
		t.Fatalf("CREATE_GROUP: %s %s", contract.ErrorCode(o.GetErrorCode()), o.GetErrorMessage())
	}
	return &gc
}

func (w *testWriter) admin(t testing.TB, req *internalv1.AdminGroupRequest) *internalv1.AdminGroupOutcome {
	t.Helper()
	conn, err := grpc.NewClient(w.svc.GRPCAddr(), dialAs(t, "admin"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	out, err := internalv1.NewGroupAdminClient(conn).AdminGroup(context.Background(), req)
	if err != nil {
		t.Fatalf("AdminGroup rpc: %v", err)
	}
	return out
}

func (w *testWriter) groupSend(t testing.TB, sender contract.UserID, gid []byte, messageType uint32) *internalv1.SendOutcome {
	t.Helper()
	req, _ := proto.Marshal(&qimv1.SendRequest{ClientMessageId: newCmid(t), Target: &qimv1.SendRequest_GroupId{GroupId: gid},
		MessageType: messageType, Body: []byte("to the group")})
	tenant := contract.TenantID{}.Bytes()
	out, err := w.client.SendMessage(context.Background(), &internalv1.AuthenticatedSend{TenantId: tenant[:],
		SenderUserId: uint64(sender), SenderDeviceId: "d1", SendRequest: req})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// seqs lists a history batch's seqs.
func seqs(b *qimv1.HistoryBatch) []uint64 {
	var out []uint64
	for _, r := range b.GetRecords() {
		out = append(out, r.GetConversationSeq())
	}
	return out
}

func TestGroupIntervalsDecideSendsAndReads(t *testing.T) {
	w := startWriter(t, nil)
	a, b := uniqueUsers(t)
	c, _ := uniqueUsers(t)
	g := w.createGroup(t, a, uint64(b))
	gid := g.GetGroupId()
	if got := mustAck(t, w.groupSend(t, a, gid, 1)).GetConversationSeq(); got != 2 {
		t.Fatalf("first group message seq %d, want 2 (the CREATE control message is 1)", got)
	}
	wantCode(t, w.groupSend(t, c, gid, 1), contract.ErrCodeNotMember)
	if o := w.historyOutcome(t, c, gid, 0, 1, 50); contract.ErrorCode(o.GetErrorCode()) != contract.ErrCodeNotMember || o.GetBatch() != nil {
		t.Fatalf("never-member history: %s, batch %v; want NOT_MEMBER and no batch", contract.ErrorCode(o.GetErrorCode()), o.GetBatch())
	}
	tenant := contract.TenantID{}.Bytes()
	add := w.admin(t, &internalv1.AdminGroupRequest{Op: uint32(contract.AdminGroupAdd), TenantId: tenant[:], GroupId: gid, UserIds: []uint64{uint64(c)}})
	if add.GetErrorCode() != 0 || add.GetConversationSeq() != 3 || add.GetMembershipVersion() != 2 {
		t.Fatalf("admin add: %+v", add)
	}
	o := w.groupCall(t, b, contract.OpLeaveGroup, &qimv1.LeaveGroup{GroupId: gid})
	var left qimv1.LeaveGroupAck
	if o.GetErrorCode() != 0 || proto.Unmarshal(o.GetPayload(), &left) != nil || left.GetLeftAtSeq() != 4 {
		t.Fatalf("leave: %s %s left_at %d", contract.ErrorCode(o.GetErrorCode()), o.GetErrorMessage(), left.GetLeftAtSeq())
	}
	mustAck(t, w.groupSend(t, c, gid, 1)) // seq 5, by the member added at 3
	wantCode(t, w.groupSend(t, b, gid, 1), contract.ErrCodeNotMember)
	for _, tc := range []struct {
		reader contract.UserID
		want   []uint64
	}{{a, []uint64{1, 2, 3, 4, 5}}, {b, []uint64{1, 2, 3, 4}}, {c, []uint64{3, 4, 5}}} {
		if got := seqs(w.history(t, tc.reader, gid, 0, 1, 50)); !slices.Equal(got, tc.want) {
			t.Errorf("user %d reads %v (OLDER), want %v", tc.reader, got, tc.want)
		}
		if got := seqs(w.history(t, tc.reader, gid, 0, 2, 50)); !slices.Equal(got, tc.want) {
			t.Errorf("user %d reads %v (NEWER), want %v", tc.reader, got, tc.want)
		}
	}
	// c is removed (6), misses a message (7), is added back (8): the gap stays invisible to it.
	for _, op := range []uint32{uint32(contract.AdminGroupRemove), uint32(contract.AdminGroupAdd)} {
		if o := w.admin(t, &internalv1.AdminGroupRequest{Op: op, TenantId: tenant[:], GroupId: gid, UserIds: []uint64{uint64(c)}}); o.GetErrorCode() != 0 {
			t.Fatalf("admin op %d: %s", op, o.GetErrorMessage())
		}
		if op == uint32(contract.AdminGroupRemove) {
			mustAck(t, w.groupSend(t, a, gid, 1))
		}
	}
	mustAck(t, w.groupSend(t, a, gid, 1)) // 9
	for dir := uint32(1); dir <= 2; dir++ {
		if got, want := seqs(w.history(t, c, gid, 0, dir, 50)), []uint64{3, 4, 5, 6, 8, 9}; !slices.Equal(got, want) {
			t.Errorf("re-added user reads %v (direction %d), want %v", got, dir, want)
		}
	}
	var members qimv1.MembersBatch
	o = w.groupCall(t, a, contract.OpPullMembers, &qimv1.PullMembers{GroupId: gid, Limit: 1})
	if o.GetErrorCode() != 0 || proto.Unmarshal(o.GetPayload(), &members) != nil || len(members.GetMembers()) != 1 || !members.GetHasMore() {
		t.Fatalf("PULL_MEMBERS page 1: %v %v", o.GetErrorMessage(), &members)
	}
	if o = w.groupCall(t, b, contract.OpPullMembers, &qimv1.PullMembers{GroupId: gid}); contract.ErrorCode(o.GetErrorCode()) != contract.ErrCodeNotMember {
		t.Fatalf("PULL_MEMBERS by a leaver: %s", contract.ErrorCode(o.GetErrorCode()))
	}
}

// TestServerOnlyMessageTypesAreRefused: a client may not send any server-only type, in a direct
// or a group conversation, and the refusal consumes no seq.
func TestServerOnlyMessageTypesAreRefused(t *testing.T) {
	w := startWriter(t, nil)
	a, b := uniqueUsers(t)
	g := w.createGroup(t, a, uint64(b))
	for _, mt := range contract.ServerOnlyMessageTypes() {
		t.Run(mt.String(), func(t *testing.T) {
			wantCode(t, w.send(t, sendSpec{sender: a, peer: b, cmid: newCmid(t), messageType: uint32(mt)}), contract.ErrCodeInvalidArgument)
			wantCode(t, w.groupSend(t, a, g.GetGroupId(), uint32(mt)), contract.ErrCodeInvalidArgument)
		})
	}
	if got := mustAck(t, w.send(t, sendSpec{sender: a, peer: b, cmid: newCmid(t), messageType: 1})).GetConversationSeq(); got != 1 {
		t.Fatalf("direct seq %d after the refusals, want 1", got)
	}
	if got := mustAck(t, w.groupSend(t, a, g.GetGroupId(), 1)).GetConversationSeq(); got != 2 {
		t.Fatalf("group seq %d after the refusals, want 2", got)
	}
}

func TestCreateGroupIsIdempotentAndCapped(t *testing.T) {
	w := startWriter(t, nil)
	a, _ := uniqueUsers(t)
	others := make([]uint64, contract.GroupMaxMembers)
	for i := range others {
		others[i] = uint64(a) + 10 + uint64(i)
	}
	req := &qimv1.CreateGroup{ClientRequestId: newCmid(t), Name: "big", MemberUserIds: others}
	if o := w.groupCall(t, a, contract.OpCreateGroup, req); contract.ErrorCode(o.GetErrorCode()) != contract.ErrCodeGroupFull {
		t.Fatalf("1,001 members: %s, want GROUP_FULL", contract.ErrorCode(o.GetErrorCode()))
	}
	req.MemberUserIds = others[:contract.GroupMaxMembers-1]
	first := w.groupCall(t, a, contract.OpCreateGroup, req)
	again := w.groupCall(t, a, contract.OpCreateGroup, req)
	if first.GetErrorCode() != 0 || !proto.Equal(first, again) {
		t.Fatalf("1,000 members: %v; retry %v", first, again)
	}
	req.Name = "other"
	if o := w.groupCall(t, a, contract.OpCreateGroup, req); contract.ErrorCode(o.GetErrorCode()) != contract.ErrCodeConflict {
		t.Fatalf("same request id, other content: %s, want CONFLICT", contract.ErrorCode(o.GetErrorCode()))
	}
}

// TestGroupAdminNeedsTheAdminRole: the gateway's certificate, valid for every Writer method, is
// refused GroupAdmin (the seed's Writer/Admin row), and the refusal is counted.
func TestGroupAdminNeedsTheAdminRole(t *testing.T) {
	w := startWriter(t, nil)
	conn, err := grpc.NewClient(w.svc.GRPCAddr(), dialAs(t, "gateway"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = internalv1.NewGroupAdminClient(conn).AdminGroup(context.Background(),
		&internalv1.AdminGroupRequest{TenantId: make([]byte, 16), Op: uint32(contract.AdminGroupList), GroupId: make([]byte, 16)})
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("AdminGroup as the gateway: %v, want PermissionDenied", err)
	}
	if got := testutil.ToFloat64(rpcauth.Denied(w.svc.reg).
		WithLabelValues(internalv1.GroupAdmin_AdminGroup_FullMethodName, "wrong_role")); got != 1 {
		t.Fatalf("qim_rpc_denied_total{wrong_role} = %v, want 1", got)
	}
}
