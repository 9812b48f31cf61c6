package writer

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// Two writers commit 200 messages to one conversation at once: the sequences are exactly 1..200,
// the message ids are distinct (different writer_id leases), and every ACKed message_id is in the
// Outbox with the record the ACK describes.
func TestTwoWritersOneConversation(t *testing.T) {
	w1, w2 := startWriter(t, nil), startWriter(t, nil)
	if w1.svc.lease.WriterID() == w2.svc.lease.WriterID() {
		t.Fatalf("two writers hold the same writer_id %d", w1.svc.lease.WriterID())
	}
	a, b := uniqueUsers(t)
	var mu sync.Mutex
	acks := map[uint64]*qimv1.SendAck{}
	var wg sync.WaitGroup
	for i := 0; i < 200; i++ {
		w := w1
		if i%2 == 1 {
			w = w2
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ack := mustAck(t, w.send(t, sendSpec{sender: a, peer: b, cmid: newCmid(t), body: []byte("m"), messageType: 1}))
			mu.Lock()
			defer mu.Unlock()
			if prev, dup := acks[ack.GetConversationSeq()]; dup {
				t.Errorf("seq %d assigned twice (%x, %x)", ack.GetConversationSeq(), prev.GetMessageId(), ack.GetMessageId())
			}
			acks[ack.GetConversationSeq()] = ack
		}()
	}
	wg.Wait()
	mids := map[string]bool{}
	for seq := uint64(1); seq <= 200; seq++ {
		ack, ok := acks[seq]
		if !ok {
			t.Fatalf("seq %d missing", seq)
		}
		if mids[string(ack.GetMessageId())] {
			t.Fatalf("message_id %x issued twice", ack.GetMessageId())
		}
		mids[string(ack.GetMessageId())] = true
	}
	assertInOutbox(t, acks)
}

// assertInOutbox reads qim.outbox from the start and checks every ACK has an envelope whose
// record carries the ACKed conversation and seq (duplicates are allowed, a missing one is not).
func assertInOutbox(t *testing.T, acks map[uint64]*qimv1.SendAck) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(itest.Endpoints(t).KafkaBrokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{contract.TopicOutbox: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	want := map[string]*qimv1.SendAck{}
	for _, a := range acks {
		want[string(a.GetMessageId())] = a
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d ACKed messages are not in the Outbox", len(want))
		}
		fs.EachRecord(func(r *kgo.Record) {
			ack, ok := want[string(r.Key)]
			if !ok {
				return
			}
			var env internalv1.CommittedEnvelope
			if err := proto.Unmarshal(r.Value, &env); err != nil {
				t.Fatalf("outbox record: %v", err)
			}
			rec := env.GetRecord()
			if rec.GetConversationSeq() != ack.GetConversationSeq() || string(rec.GetConversationId()) != string(ack.GetConversationId()) {
				t.Fatalf("outbox record seq %d differs from ACK seq %d", rec.GetConversationSeq(), ack.GetConversationSeq())
			}
			if len(env.GetAudience().GetDirect().GetRecipientUserIds()) != 2 {
				t.Fatalf("direct audience = %v", env.GetAudience().GetDirect().GetRecipientUserIds())
			}
			delete(want, string(r.Key))
		})
	}
}
