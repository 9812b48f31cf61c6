package sdk

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/sdk/store"
	"github.com/qim-dev/qim/sdk/store/storetest"
	"github.com/qim-dev/qim/wire"
)

const self, peer = contract.UserID(7), contract.UserID(9)

// faultStore wraps the real store and can refuse the next Apply, as a full disk would.
type faultStore struct {
	*store.Store
	failApply atomic.Int32 // number of Apply calls left to fail
}

var errDisk = errors.New("disk full (injected)")

func (f *faultStore) Apply(ctx context.Context, b store.Batch) (store.Applied, error) {
	if f.failApply.Load() > 0 {
		f.failApply.Add(-1)
		return store.Applied{}, errDisk
	}
	return f.Store.Apply(ctx, b)
}

type sentFrame struct {
	op      contract.Opcode
	id      uint32
	payload []byte
}

type fakeSink struct{ frames []sentFrame }

func (f *fakeSink) send(op contract.Opcode, id uint32, payload []byte) error {
	f.frames = append(f.frames, sentFrame{op, id, payload})
	return nil
}

// harness drives the engine directly: no goroutines, no sockets, a clock the test moves.
type harness struct {
	t      *testing.T
	st     *faultStore
	e      *engine
	sink   *fakeSink
	events []Event
	now    time.Time
	stats  stats
	mbseq  uint64 // last mailbox_seq handed out by the fake server
	// manualSessions leaves PULL_SESSION_LIST to the test; otherwise answerPull answers it with
	// an empty list, as a server with no session state would.
	manualSessions bool
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	cfg := Config{DataDir: "/unused", Endpoint: contract.Endpoint{Address: "127.0.0.1:1", Mode: contract.ModeTCP},
		User: self, Device: "d1", Token: StaticToken("t")}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	id := store.Identity{EndpointScope: contract.EndpointScope("x"), User: self}
	h := &harness{t: t, st: &faultStore{Store: storetest.Open(t, id)}, now: time.Unix(1_800_000_000, 0), mbseq: 1 << 48}
	h.e = newEngine(&cfg, h.st, func(ev Event) { h.events = append(h.events, ev) }, &h.stats, func() int { return 0 })
	return h
}

// connect attaches and answers AUTH; the engine then pulls (phaseSync).
func (h *harness) connect() {
	h.t.Helper()
	if h.sink == nil {
		h.sink = &fakeSink{} // kept across reconnects, so tests count frames of every connection
	}
	h.e.attach(h.sink, "t", h.now)
	auth := h.lastSent(contract.OpAuth)
	h.frame(contract.OpAuthOK, auth.id, &qimv1.AuthOk{UserId: uint64(self), SessionEpoch: 1, HeartbeatIntervalMs: 60000})
}

// reconnect ends the current connection as a dropped socket would.
func (h *harness) reconnect() {
	h.e.fail(errors.New("dropped"))
	h.e.detach()
	h.connect()
}

func (h *harness) frame(op contract.Opcode, id uint32, m proto.Message) {
	h.t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		h.t.Fatal(err)
	}
	h.e.onFrame(wire.Message{Opcode: op, RequestID: id, Payload: b}, h.now)
}

func (h *harness) sent(op contract.Opcode) []sentFrame {
	var out []sentFrame
	for _, f := range h.sink.frames {
		if f.op == op {
			out = append(out, f)
		}
	}
	return out
}

func (h *harness) lastSent(op contract.Opcode) sentFrame {
	h.t.Helper()
	fs := h.sent(op)
	if len(fs) == 0 {
		h.t.Fatalf("no %s sent", op)
	}
	return fs[len(fs)-1]
}

func (h *harness) pullCursor(f sentFrame) uint64 {
	var p qimv1.PullMailbox
	if err := proto.Unmarshal(f.payload, &p); err != nil {
		h.t.Fatal(err)
	}
	return p.GetCursor().GetMailboxSeq()
}

// event builds a mailbox event of the direct conversation at conversation seq n.
func (h *harness) event(n uint64, sender contract.UserID, cmid contract.ClientMessageID) *qimv1.MailboxEvent {
	h.mbseq++
	mid, _ := contract.NewMessageID(1_700_000_000_000+n, 0, 1, 1)
	m := mid.Bytes()
	conv := contract.DirectConversationID(contract.TenantID{}, self, peer).Bytes()
	ev := &qimv1.MailboxEvent{MailboxSeq: h.mbseq, EventType: uint32(contract.EventMessage), MessageId: m[:],
		ConversationId: conv[:], ConversationSeq: n, SenderUserId: uint64(sender), MessageType: 1, Body: []byte("b"),
		SentAtMs: int64(n)}
	if !contract.U128(cmid).IsZero() {
		c := contract.U128(cmid).Bytes()
		ev.ClientMessageId = c[:]
	}
	return ev
}

// answerPull answers the pull in flight with evs; next is the last event's seq (or the cursor).
func (h *harness) answerPull(hasMore bool, evs ...*qimv1.MailboxEvent) {
	h.t.Helper()
	pull := h.lastSent(contract.OpPullMailbox)
	next := h.pullCursor(pull)
	if len(evs) > 0 {
		next = evs[len(evs)-1].GetMailboxSeq()
	}
	h.frame(contract.OpMailboxBatch, pull.id, &qimv1.MailboxBatch{Entries: evs, HasMore: hasMore,
		NextCursor: &qimv1.MailboxCursor{MailboxSeq: next}})
	if !h.manualSessions && h.e.sess.id != 0 {
		h.answerSessions(false, nil)
	}
}

// answerSessions answers the PULL_SESSION_LIST in flight.
func (h *harness) answerSessions(hasMore bool, token []byte, entries ...*qimv1.SessionEntry) {
	h.t.Helper()
	req := h.lastSent(contract.OpPullSessionList)
	h.frame(contract.OpSessionListBatch, req.id, &qimv1.SessionListBatch{Sessions: entries, HasMore: hasMore,
		NextPageToken: token})
}

// entry is a session-list entry of the direct conversation with peer.
func (h *harness) entry(latest, read uint64) *qimv1.SessionEntry {
	conv := contract.DirectConversationID(contract.TenantID{}, self, peer).Bytes()
	act, _ := contract.NewMessageID(1_700_000_000_000+latest, 0, 0, 0)
	a := act.Bytes()
	return &qimv1.SessionEntry{ConversationId: conv[:], LastActivityId: a[:], LatestConversationSeq: latest,
		ReadConversationSeq: read, ConversationKind: uint32(contract.KindDirect),
		Peer: &qimv1.SessionEntry_PeerUserId{PeerUserId: uint64(peer)}}
}

func (h *harness) storedCursor() contract.MailboxSeq {
	h.t.Helper()
	c, err := h.st.Cursor(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	return c.Seq
}

func (h *harness) localCount() int {
	h.t.Helper()
	msgs, _, err := h.st.Messages(context.Background(), contract.DirectConversationID(contract.TenantID{}, self, peer), 0, store.Older, 1000)
	if err != nil {
		h.t.Fatal(err)
	}
	return len(msgs)
}

func (h *harness) addPending(body string) store.Pending {
	h.t.Helper()
	p, err := h.st.AddPending(context.Background(), store.NewPending{Peer: peer, Type: contract.MessageText,
		Body: []byte(body), NowMs: h.now.UnixMilli()})
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

func (h *harness) ack(f sentFrame, seq uint64) {
	var req qimv1.SendRequest
	if err := proto.Unmarshal(f.payload, &req); err != nil {
		h.t.Fatal(err)
	}
	mid, _ := contract.NewMessageID(1_700_000_000_000+seq, 0, 1, 1)
	m := mid.Bytes()
	conv := contract.DirectConversationID(contract.TenantID{}, self, peer).Bytes()
	h.frame(contract.OpSendAck, f.id, &qimv1.SendAck{ClientMessageId: req.GetClientMessageId(), MessageId: m[:],
		ConversationId: conv[:], ConversationSeq: seq})
}

func countEvents[T Event](evs []Event) int {
	n := 0
	for _, ev := range evs {
		if _, ok := ev.(T); ok {
			n++
		}
	}
	return n
}

var ctxBG = context.Background()

func protoUnmarshal(b []byte, m proto.Message) error { return proto.Unmarshal(b, m) }
