package writer

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/moderationtest"
	"github.com/qim-dev/qim/services/internal/moderation"
)

func startProductHook(t *testing.T) *moderationtest.Server {
	h := moderationtest.New()
	t.Cleanup(h.Close)
	return h
}

func moderatedWriter(t *testing.T, h *moderationtest.Server, failOpen bool) *testWriter {
	return startWriter(t, func(c *Config) {
		c.Moderation = moderation.Config{URL: h.URL(), Timeout: 2 * time.Second, FailOpen: failOpen}
	})
}

// A rejected send commits nothing and carries the hook's reason; a rewritten one is committed
// with the hook's body, and a retry of the client's request returns its original ACK.
func TestModerationRejectsAndRewrites(t *testing.T) {
	h := startProductHook(t)
	w := moderatedWriter(t, h, false)
	a, b := uniqueUsers(t)
	o := w.send(t, sendSpec{sender: a, peer: b, cmid: newCmid(t), body: []byte("spam offer"), messageType: 1})
	wantCode(t, o, contract.ErrCodeRejected)
	if o.GetErrorReason() != "spam" {
		t.Errorf("reason = %q, want spam", o.GetErrorReason())
	}
	rw := sendSpec{sender: a, peer: b, cmid: newCmid(t), body: []byte("darn"), messageType: 1}
	ack := mustAck(t, w.send(t, rw))
	if ack.GetConversationSeq() != 1 {
		t.Errorf("first committed seq = %d, want 1: the rejected send took a sequence", ack.GetConversationSeq())
	}
	if again := mustAck(t, w.send(t, rw)); again.GetConversationSeq() != ack.GetConversationSeq() {
		t.Errorf("retry of a rewritten send got seq %d, want %d", again.GetConversationSeq(), ack.GetConversationSeq())
	}
	page := w.history(t, a, ack.GetConversationId(), 0, 1, 50)
	if n := len(page.GetRecords()); n != 1 || string(page.GetRecords()[0].GetBody()) != "d**n" {
		t.Fatalf("history = %d records (%v), want the rewritten one only", n, page.GetRecords())
	}
}

// A send committed before the hook turned against it (its ACK lost) gets its original ACK on
// retry: the hook's later answer never refuses what is already delivered.
func TestModerationNeverRefusesACommittedRetry(t *testing.T) {
	h := startProductHook(t)
	w := moderatedWriter(t, h, false)
	a, b := uniqueUsers(t)
	s := sendSpec{sender: a, peer: b, cmid: newCmid(t), body: []byte("hello"), messageType: 1}
	first := mustAck(t, w.send(t, s))
	h.SetDown(true)
	if again := mustAck(t, w.send(t, s)); again.GetConversationSeq() != first.GetConversationSeq() {
		t.Errorf("retry while the hook is down: seq %d, want %d", again.GetConversationSeq(), first.GetConversationSeq())
	}
	wantCode(t, w.send(t, sendSpec{sender: a, peer: b, cmid: newCmid(t), body: []byte("new"), messageType: 1}), contract.ErrCodeUnavailable)
}

// Fail-open commits what the hook could not check; fail-closed (above) refuses it.
func TestModerationFailOpen(t *testing.T) {
	h := startProductHook(t)
	h.SetDown(true)
	w := moderatedWriter(t, h, true)
	a, b := uniqueUsers(t)
	mustAck(t, w.send(t, sendSpec{sender: a, peer: b, cmid: newCmid(t), body: []byte("spam unchecked"), messageType: 1}))
}

// Tenants outside QIM_MODERATION_TENANTS are never sent to the hook.
func TestModerationOnlyForItsTenants(t *testing.T) {
	h := startProductHook(t)
	w := startWriter(t, func(c *Config) {
		c.Moderation = moderation.Config{URL: h.URL(), Tenants: []string{"77"}}
	})
	a, b := uniqueUsers(t)
	mustAck(t, w.send(t, sendSpec{tenant: contract.TenantID{Lo: 78}, sender: a, peer: b, cmid: newCmid(t), body: []byte("spam"), messageType: 1}))
	if n := h.Calls(); n != 0 {
		t.Errorf("%d hook calls for an unmoderated tenant", n)
	}
	wantCode(t, w.send(t, sendSpec{tenant: contract.TenantID{Lo: 77}, sender: a, peer: b, cmid: newCmid(t), body: []byte("spam"), messageType: 1}),
		contract.ErrCodeRejected)
}

// Sends pipelined on one stream commit in the order they were read, even when the hook answers
// the first one last.
func TestModerationKeepsTheStreamsOrder(t *testing.T) {
	h := startProductHook(t)
	w := moderatedWriter(t, h, false)
	a, b := uniqueUsers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := w.client.SendStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bodies := []string{"slow", "fast 1", "fast 2"}
	for i, body := range bodies {
		in := sendRequest(sendSpec{sender: a, peer: b, cmid: newCmid(t), body: []byte(body), messageType: 1})
		in.CallId = uint64(i + 1)
		if err := st.Send(in); err != nil {
			t.Fatal(err)
		}
	}
	seqs := map[uint64]uint64{}
	var mu sync.Mutex
	for range bodies {
		o, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		seqs[o.GetCallId()] = mustAck(t, o).GetConversationSeq()
		mu.Unlock()
	}
	if seqs[1] >= seqs[2] || seqs[2] >= seqs[3] {
		t.Errorf("seqs by call = %v: the slow first send was overtaken", seqs)
	}
	_ = st.CloseSend()
}
