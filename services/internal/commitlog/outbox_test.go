package commitlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
)

func newOutbox(t testing.TB, cfg OutboxConfig) *OutboxProducer {
	t.Helper()
	p, err := NewOutboxProducer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func TestOutboxReady(t *testing.T) {
	ep := itest.Endpoints(t)
	p := newOutbox(t, OutboxConfig{Brokers: ep.KafkaBrokers})
	if err := p.Ready(testCtx(t)); err != nil {
		t.Fatalf("Ready() = %v", err)
	}
}

// TestOutboxProducerSettings pins the durability settings: acks=all, idempotent, manual
// partitioning, no lingering timer by default.
func TestOutboxProducerSettings(t *testing.T) {
	p := newOutbox(t, OutboxConfig{Brokers: []string{"127.0.0.1:1"}})
	if got := p.cl.OptValue(kgo.RequiredAcks); got != kgo.AllISRAcks() {
		t.Errorf("required acks = %v, want all ISR", got)
	}
	if got := p.cl.OptValue(kgo.DisableIdempotentWrite); got != false {
		t.Errorf("idempotence disabled = %v", got)
	}
	if got := p.cl.OptValue(kgo.ProducerLinger); got != time.Duration(0) {
		t.Errorf("linger = %v, want 0", got)
	}
	if got := p.cl.OptValue(kgo.AllowAutoTopicCreation); got != false {
		t.Errorf("auto topic creation = %v", got)
	}
}

func TestOutboxReadyTopicMissing(t *testing.T) {
	ep := itest.Endpoints(t)
	topic := uniqueName(t, "qim-test-missing-")
	p := newOutbox(t, OutboxConfig{Brokers: ep.KafkaBrokers, Topic: topic})
	ctx := testCtx(t)
	if err := p.Ready(ctx); !errors.Is(err, ErrTopicMissing) {
		t.Fatalf("Ready() = %v, want ErrTopicMissing", err)
	}
	// The probe must not have created the topic (brokers auto-create on request by default).
	adm, err := NewAdmin(ep.KafkaBrokers)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if _, err := adm.Watermarks(ctx, topic); !errors.Is(err, ErrTopicMissing) {
		t.Fatalf("after Ready, Watermarks(%s) = %v, want ErrTopicMissing", topic, err)
	}
}

func TestOutboxReadyWrongPartitionCount(t *testing.T) {
	ep := itest.Endpoints(t)
	p := newOutbox(t, OutboxConfig{Brokers: ep.KafkaBrokers, Topic: contract.TopicDispatch})
	err := p.Ready(testCtx(t))
	var pce *PartitionCountError
	if !errors.As(err, &pce) {
		t.Fatalf("Ready() = %v, want *PartitionCountError", err)
	}
	if pce.Topic != contract.TopicDispatch || pce.Want != 1 || pce.Got != ep.DispatchShards {
		t.Fatalf("PartitionCountError = %+v, want {%s 1 %d}", pce, contract.TopicDispatch, ep.DispatchShards)
	}
}

func TestOutboxReadyMessageSizeLimit(t *testing.T) {
	ep := itest.Endpoints(t)
	p := newOutbox(t, OutboxConfig{Brokers: ep.KafkaBrokers, MaxRecordBytes: 8 << 20, MaxBufferedBytes: 16 << 20})
	var mse *MessageSizeLimitError
	if err := p.Ready(testCtx(t)); !errors.As(err, &mse) {
		t.Fatalf("Ready() with an 8 MiB record limit on a default topic = %v, want *MessageSizeLimitError", err)
	}
}

// TestOutboxProduceInOrder produces N records asynchronously and reads them back from the
// Outbox: one partition, offsets in produce order, keys and values intact.
func TestOutboxProduceInOrder(t *testing.T) {
	ep := itest.Endpoints(t)
	ctx := testCtx(t)
	p := newOutbox(t, OutboxConfig{Brokers: ep.KafkaBrokers})
	const n = 300
	run := runID(t)
	offsets := make([]int64, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for i := 0; i < n; i++ {
		wg.Add(1)
		p.Produce(ctx, messageKey(t, run, i), []byte(fmt.Sprintf("envelope-%d-%d", run, i)), func(off int64, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			offsets[i] = off
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	for i := 1; i < n; i++ {
		if offsets[i] <= offsets[i-1] {
			t.Fatalf("offset of record %d = %d, not after record %d at %d", i, offsets[i], i-1, offsets[i-1])
		}
	}
	// A slot is released just after its done callback returns, so the depth drains right after.
	for deadline := time.Now().Add(time.Second); p.BufferedRecords() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("BufferedRecords() = %d a second after every ack", p.BufferedRecords())
		}
	}
	// Read from offset 0, as a fresh fanout does (ValidateStart with no committed position).
	adm, err := NewAdmin(ep.KafkaBrokers)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	wm, err := adm.Watermarks(ctx, contract.TopicOutbox)
	if err != nil {
		t.Fatal(err)
	}
	start, err := ValidateStart(0, false, wm[0])
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewPartitionConsumer(ep.KafkaBrokers, contract.TopicOutbox, map[int32]int64{0: start})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	recs := pollUntil(t, ctx, c, int(offsets[n-1]+1-start))
	recs = recs[offsets[0]-start:]
	for i, r := range recs {
		if r.Offset != offsets[i] || !bytes.Equal(r.Key, messageKey(t, run, i)[:]) && !sameKeyRun(r.Key, run, i) ||
			string(r.Value) != fmt.Sprintf("envelope-%d-%d", run, i) {
			t.Fatalf("record %d = {off %d key %x value %q}, want offset %d", i, r.Offset, r.Key, r.Value, offsets[i])
		}
	}
}

// sameKeyRun compares the writer and logical fields of a key (its time field is the clock).
func sameKeyRun(key []byte, run uint16, i int) bool {
	id, err := contract.U128FromBytes(key)
	if err != nil {
		return false
	}
	m := contract.MessageID(id)
	return m.WriterID() == run && m.Logical() == uint32(i)
}

func TestOutboxRejectsBeforeBuffering(t *testing.T) {
	p := newOutbox(t, OutboxConfig{Brokers: []string{"127.0.0.1:1"}, MaxRecordBytes: 1024})
	ctx := context.Background()
	tests := []struct {
		name  string
		key   []byte
		value []byte
		check func(error) bool
	}{
		{"zero message_id", make([]byte, 16), nil, func(err error) bool { return errors.Is(err, ErrBadKey) }},
		{"short key", []byte("0123456789abcde"), nil, func(err error) bool { return errors.Is(err, ErrBadKey) }},
		{"too large", messageKey(t, 1, 1), make([]byte, 2048), func(err error) bool {
			var tl *RecordTooLargeError
			return errors.As(err, &tl) && tl.Max == 1024
		}},
	}
	for _, tc := range tests {
		called := 0
		p.Produce(ctx, tc.key, tc.value, func(off int64, err error) {
			called++
			if off != -1 || !tc.check(err) {
				t.Errorf("%s: done(%d, %v)", tc.name, off, err)
			}
		})
		if called != 1 {
			t.Errorf("%s: done called %d times before Produce returned, want 1", tc.name, called)
		}
	}
	if p.BufferedRecords() != 0 {
		t.Fatalf("rejected records took buffer room: %d", p.BufferedRecords())
	}
}

// TestOutboxBufferBoundAndClose: with no broker, at most MaxBufferedRecords records wait; the
// next Produce waits for room until its context ends; ProduceSync reports an unknown outcome,
// and Close fails every buffered record exactly once.
func TestOutboxBufferBoundAndClose(t *testing.T) {
	p, err := NewOutboxProducer(OutboxConfig{Brokers: []string{"127.0.0.1:1"}, MaxBufferedRecords: 2, DeliveryTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	calls := map[int]int{}
	var closeErrs []error
	for i := 0; i < 2; i++ {
		p.Produce(context.Background(), messageKey(t, 2, i), []byte("v"), func(_ int64, err error) {
			mu.Lock()
			defer mu.Unlock()
			calls[i]++
			closeErrs = append(closeErrs, err)
		})
	}
	if got := p.BufferedRecords(); got != 2 {
		t.Fatalf("BufferedRecords() = %d, want 2", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = p.ProduceSync(ctx, messageKey(t, 2, 3), []byte("v"))
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("ProduceSync on a full buffer = %v, want a definite DeadlineExceeded (never enqueued)", err)
	}
	p.Close()
	mu.Lock()
	defer mu.Unlock()
	if calls[0] != 1 || calls[1] != 1 {
		t.Fatalf("done calls after Close = %v, want exactly one each", calls)
	}
	for _, err := range closeErrs {
		if err == nil {
			t.Fatal("a record failed by Close reported success")
		}
	}
	p.Produce(context.Background(), messageKey(t, 2, 4), []byte("v"), func(_ int64, err error) {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("Produce after Close: %v, want ErrClosed", err)
		}
	})
}

func TestOutboxProduceSyncOutcomeUnknown(t *testing.T) {
	p := newOutbox(t, OutboxConfig{Brokers: []string{"127.0.0.1:1"}, DeliveryTimeout: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := p.ProduceSync(ctx, messageKey(t, 3, 1), []byte("v")); !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("ProduceSync with an unreachable broker = %v, want ErrOutcomeUnknown", err)
	}
}

// TestOutboxCancelledCallerDoesNotFailNeighbours: franz-go fails every buffered record of a
// partition when the first record's context is cancelled. Records share the single Outbox
// partition, so one caller's cancellation must not reach the others (nor its own buffered record).
func TestOutboxCancelledCallerDoesNotFailNeighbours(t *testing.T) {
	ep := itest.Endpoints(t)
	p := newOutbox(t, OutboxConfig{Brokers: ep.KafkaBrokers, Linger: maxLinger})
	if err := p.Ready(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	run := runID(t)
	cctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 8)
	p.Produce(cctx, messageKey(t, run, 0), []byte("first"), func(_ int64, err error) { errs <- err })
	cancel() // the record lingers in the buffer for maxLinger: cancel while it is unsent
	for i := 1; i < 8; i++ {
		p.Produce(context.Background(), messageKey(t, run, i), []byte("neighbour"), func(_ int64, err error) { errs <- err })
	}
	for i := 0; i < 8; i++ {
		if err := <-errs; err != nil {
			t.Fatalf("record failed after another caller's cancellation: %v", err)
		}
	}
}
