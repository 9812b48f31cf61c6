package gateway

import (
	"bytes"
	"crypto/rand"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

func cmid(t testing.TB) []byte {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	b[0] |= 1
	return b
}

func sendPayload(t testing.TB, peer contract.UserID, id []byte) []byte {
	t.Helper()
	b, err := proto.Marshal(&qimv1.SendRequest{ClientMessageId: id, Target: &qimv1.SendRequest_PeerUserId{PeerUserId: uint64(peer)},
		MessageType: 1, Body: []byte("hello")})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func nextReceived(t testing.TB, f *fakeWriter, within time.Duration) *internalv1.AuthenticatedSend {
	t.Helper()
	select {
	case in := <-f.received:
		return in
	case <-time.After(within):
		t.Fatal("the writer received nothing")
		return nil
	}
}

func TestSendForwardedByteForByteAndAckMapped(t *testing.T) {
	h := startGateway(t, harnessOpts{})
	id := newIdentity(t, "phone")
	c := h.login(id)
	// A field this server does not know (a newer SDK's): it must reach the writer untouched.
	payload := protowire.AppendTag(sendPayload(t, 99, cmid(t)), 99, protowire.BytesType)
	payload = protowire.AppendBytes(payload, []byte("from-the-future"))
	reqID := c.nextID()
	c.writeBytes(contract.OpSend, reqID, payload)

	in := nextReceived(t, h.writer, 5*time.Second)
	if !bytes.Equal(in.GetSendRequest(), payload) {
		t.Fatal("SendRequest bytes were not forwarded byte for byte")
	}
	tb := id.tenant.Bytes()
	if !bytes.Equal(in.GetTenantId(), tb[:]) || in.GetSenderUserId() != uint64(id.user) || in.GetSenderDeviceId() != "phone" || in.GetCallId() == 0 {
		t.Fatalf("identity not taken from the token: %v", in)
	}
	var ack qimv1.SendAck
	m := c.expect(contract.OpSendAck, &ack)
	if m.RequestID != reqID {
		t.Fatalf("SEND_ACK request id %d, want %d", m.RequestID, reqID)
	}
	want := h.writer.outcome(in).GetAck()
	want.MessageId, want.ConversationId, want.ConversationSeq = ack.GetMessageId(), ack.GetConversationId(), ack.GetConversationSeq()
	if !proto.Equal(&ack, want) {
		t.Fatalf("SEND_ACK %v, want the writer's ack %v", &ack, want)
	}
	if testutil.CollectAndCount(h.svc.m.sendRoundTrip) != 1 {
		t.Fatal("send round trip not observed")
	}
	eventually(t, time.Second, "writer depth back to 0", func() bool {
		return testutil.ToFloat64(h.svc.m.backendDepth.WithLabelValues("writer")) == 0
	})
}

func TestSendErrorMapped(t *testing.T) {
	h := startGateway(t, harnessOpts{})
	h.writer.errCode.Store(uint32(contract.ErrCodeConflict))
	c := h.login(newIdentity(t, "d"))
	reqID := c.nextID()
	c.writeBytes(contract.OpSend, reqID, sendPayload(t, 5, cmid(t)))
	e := c.expectError(contract.ErrCodeConflict, reqID)
	if contract.Opcode(e.GetRequestOpcode()) != contract.OpSend || e.GetMessage() == "" {
		t.Fatalf("ERROR = %v", e)
	}
}

func TestSendRejectsBadClientMessageIDAtGateway(t *testing.T) {
	h := startGateway(t, harnessOpts{})
	c := h.login(newIdentity(t, "d"))
	bad := map[string][]byte{
		"zero cmid":  sendPayload(t, 5, make([]byte, 16)),
		"short cmid": sendPayload(t, 5, []byte{1, 2, 3}),
		"no cmid":    sendPayload(t, 5, nil),
		"truncated":  sendPayload(t, 5, cmid(t))[:10],
	}
	for name, p := range bad {
		reqID := c.nextID()
		c.writeBytes(contract.OpSend, reqID, p)
		if e := c.expectError(contract.ErrCodeInvalidArgument, reqID); contract.Opcode(e.GetRequestOpcode()) != contract.OpSend {
			t.Fatalf("%s: ERROR request_opcode %d", name, e.GetRequestOpcode())
		}
	}
	select {
	case in := <-h.writer.received:
		t.Fatalf("a rejected SEND reached the writer: %v", in)
	default:
	}
	if h.writer.streams.Load() != 0 {
		t.Fatal("a writer stream was opened for rejected SENDs only")
	}
	good := cmid(t)
	c.writeBytes(contract.OpSend, c.nextID(), sendPayload(t, 5, good))
	c.expect(contract.OpSendAck, nil)
	if in := nextReceived(t, h.writer, time.Second); !bytes.Contains(in.GetSendRequest(), good) {
		t.Fatal("first SEND at the writer is not the valid one")
	}
}

// TestSendInflightLimitStopsReading: with a writer that does not answer, the gateway forwards N
// SENDs and then stops reading the socket — the (N+1)th SEND, and a PING behind it, wait in the
// client's socket until one answer frees a permit.
func TestSendInflightLimitStopsReading(t *testing.T) {
	const limit = 4
	h := startGateway(t, harnessOpts{writer: newFakeWriter(true), mutate: func(c *Config) { c.SendInflight = limit }})
	c := h.login(newIdentity(t, "d"))
	var ids []uint32
	for i := 0; i < limit+1; i++ {
		id := c.nextID()
		ids = append(ids, id)
		c.writeBytes(contract.OpSend, id, sendPayload(t, 5, cmid(t)))
	}
	pingID := c.write(contract.OpPing, &qimv1.Ping{ClientTimeMs: 1})
	for i := 0; i < limit; i++ {
		nextReceived(t, h.writer, 5*time.Second)
	}
	select {
	case <-h.writer.received:
		t.Fatal("the gateway forwarded more SENDs than its in-flight limit")
	case <-time.After(300 * time.Millisecond):
	}
	c.expectSilence(100 * time.Millisecond) // the PING is not read either: the socket is not read
	if got := testutil.ToFloat64(h.svc.m.backendDepth.WithLabelValues("writer")); got != limit {
		t.Fatalf("writer depth = %v, want %d", got, limit)
	}
	if testutil.ToFloat64(h.svc.m.sendBlocked) < 1 {
		t.Fatal("qim_gateway_send_blocked_total not counted")
	}

	h.writer.release <- struct{}{} // one answer
	if m := c.expect(contract.OpSendAck, nil); m.RequestID != ids[0] {
		t.Fatalf("first ACK for request %d, want %d", m.RequestID, ids[0])
	}
	nextReceived(t, h.writer, 5*time.Second) // now the (N+1)th goes out
	if m := c.expect(contract.OpPong, nil); m.RequestID != pingID {
		t.Fatalf("PONG for %d, want %d", m.RequestID, pingID)
	}
	for range limit {
		h.writer.release <- struct{}{}
	}
	for _, id := range ids[1:] {
		if m := c.expect(contract.OpSendAck, nil); m.RequestID != id {
			t.Fatalf("ACK for request %d, want %d", m.RequestID, id)
		}
	}
}

// TestWriterStreamLossAnswersUnavailable: when the stream dies with a SEND in flight the client
// is told UNAVAILABLE (outcome unknown, retry), and the next SEND opens a new stream.
func TestWriterStreamLossAnswersUnavailable(t *testing.T) {
	h := startGateway(t, harnessOpts{})
	c := h.login(newIdentity(t, "d"))
	h.writer.dropStream.Store(true)
	reqID := c.nextID()
	c.writeBytes(contract.OpSend, reqID, sendPayload(t, 5, cmid(t)))
	e := c.expectError(contract.ErrCodeUnavailable, reqID)
	if info, _ := contract.ErrorCode(e.GetCode()).Lookup(); !info.Retryable {
		t.Fatal("a lost stream must be reported with a retryable code")
	}
	h.writer.dropStream.Store(false)
	c.writeBytes(contract.OpSend, c.nextID(), sendPayload(t, 5, cmid(t)))
	c.expect(contract.OpSendAck, nil)
	if n := h.writer.streams.Load(); n != 2 {
		t.Fatalf("writer streams opened = %d, want 2", n)
	}
}

// TestSendSurvivesClientDisconnect: a SEND the gateway has read still completes at the writer
// when the client disconnects before its ACK (the client reconciles later from its mailbox
// copy); the gateway half-closes the stream instead of cancelling the commit.
func TestSendSurvivesClientDisconnect(t *testing.T) {
	h := startGateway(t, harnessOpts{writer: newFakeWriter(true)})
	id := newIdentity(t, "d")
	c := h.login(id)
	c.writeBytes(contract.OpSend, c.nextID(), sendPayload(t, 5, cmid(t)))
	nextReceived(t, h.writer, 5*time.Second)
	_ = c.nc.Close()
	eventually(t, 2*time.Second, "connection ending", func() bool {
		return len(h.svc.registry.appendConns(nil, userKey{id.tenant, id.user})) == 0
	})
	time.Sleep(200 * time.Millisecond) // a cancelled stream would be gone by now
	h.writer.release <- struct{}{}     // the writer answers after the client left
	eventually(t, 2*time.Second, "answer on a live stream", func() bool { return h.writer.answered.Load() == 1 })
	eventually(t, 2*time.Second, "connection torn down, writer depth 0", func() bool {
		return testutil.ToFloat64(h.svc.m.connections.WithLabelValues("tcp")) == 0 &&
			testutil.ToFloat64(h.svc.m.backendDepth.WithLabelValues("writer")) == 0
	})
}

func TestCheckSendRequest(t *testing.T) {
	good := cmid(t)
	group := func(g []byte) []byte {
		b, _ := proto.Marshal(&qimv1.SendRequest{ClientMessageId: good, Target: &qimv1.SendRequest_GroupId{GroupId: g}})
		return b
	}
	wrongType := protowire.AppendTag(nil, 1, protowire.VarintType)
	wrongType = protowire.AppendVarint(wrongType, 7)
	lastWins := append(sendPayload(t, 5, good), sendPayload(t, 5, make([]byte, 16))...)
	groupThenPeer := append(group(make([]byte, 16)), protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), 9)...)
	gid := cmid(t)
	cases := []struct {
		name    string
		payload []byte
		ok      bool
		target  sendTarget // the routing key, checked when ok
	}{
		{"valid peer", sendPayload(t, 5, good), true, sendTarget{peer: 5}},
		{"valid group", group(gid), true, sendTarget{group: u128(t, gid)}},
		{"zero cmid", sendPayload(t, 5, make([]byte, 16)), false, sendTarget{}},
		{"15-byte cmid", sendPayload(t, 5, good[:15]), false, sendTarget{}},
		{"17-byte cmid", sendPayload(t, 5, append(good, 1)), false, sendTarget{}},
		{"missing cmid", sendPayload(t, 5, nil), false, sendTarget{}},
		{"cmid as varint", wrongType, false, sendTarget{}},
		{"truncated", sendPayload(t, 5, good)[:5], false, sendTarget{}},
		{"last cmid wins (zero)", lastWins, false, sendTarget{}},
		{"zero group id", group(make([]byte, 16)), false, sendTarget{}},
		{"short group id", group([]byte{1}), false, sendTarget{}},
		{"peer after zero group: oneof last wins", groupThenPeer, true, sendTarget{peer: 9}},
		{"empty payload", nil, false, sendTarget{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			target, err := checkSendRequest(tc.payload)
			if (err == nil) != tc.ok {
				t.Fatalf("checkSendRequest = %v, want ok=%v", err, tc.ok)
			}
			if tc.ok && target != tc.target {
				t.Fatalf("routing target %+v, want %+v", target, tc.target)
			}
		})
	}
}

func u128(t *testing.T, b []byte) contract.U128 {
	t.Helper()
	u, err := contract.U128FromBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
