package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// batchClient is a MailboxClient whose PullMailboxBatch answers each pull with its device id as
// the error message (so a caller can tell its own outcome), after gate releases it.
type batchClient struct {
	internalv1.MailboxClient
	gate    chan struct{} // each batch call takes one token before answering (nil: none)
	mu      sync.Mutex
	batches []int // pulls per batch call, in call order
	mode    string
	unary   int
}

func (c *batchClient) PullMailboxBatch(ctx context.Context, in *internalv1.PullMailboxBatchRequest, _ ...grpc.CallOption) (*internalv1.PullMailboxBatchOutcome, error) {
	c.mu.Lock()
	c.batches = append(c.batches, len(in.GetPulls()))
	c.mu.Unlock()
	if c.gate != nil {
		select {
		case <-c.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	switch c.mode {
	case "unimplemented":
		return nil, status.Error(codes.Unimplemented, "old mailbox")
	case "error":
		return nil, errors.New("mailbox down")
	case "short":
		return &internalv1.PullMailboxBatchOutcome{}, nil
	}
	out := &internalv1.PullMailboxBatchOutcome{}
	for _, p := range in.GetPulls() {
		out.Outcomes = append(out.Outcomes, &internalv1.PullMailboxOutcome{ErrorMessage: p.GetDeviceId()})
	}
	return out, nil
}

func (c *batchClient) PullMailbox(_ context.Context, in *internalv1.AuthenticatedPullMailbox, _ ...grpc.CallOption) (*internalv1.PullMailboxOutcome, error) {
	c.mu.Lock()
	c.unary++
	c.mu.Unlock()
	return &internalv1.PullMailboxOutcome{ErrorMessage: "unary " + in.GetDeviceId()}, nil
}

func startBatcher(t *testing.T, c *batchClient) *pullBatcher {
	t.Helper()
	b := newPullBatcher(c, 5*time.Second, prometheus.NewHistogram(prometheus.HistogramOpts{Name: "t"}))
	ctx, cancel := context.WithCancel(context.Background())
	go b.run(ctx)
	t.Cleanup(cancel)
	return b
}

// pullAll runs n concurrent pulls (devices d0..dn-1) and returns each caller's answer.
func pullAll(b *pullBatcher, from, n int) []string {
	out := make([]string, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := b.Do(context.Background(), &internalv1.AuthenticatedPullMailbox{DeviceId: fmt.Sprintf("d%d", from+i)})
			if err != nil {
				out[i] = "error: " + err.Error()
				return
			}
			out[i] = o.GetErrorMessage()
		}()
	}
	wg.Wait()
	return out
}

// Pulls arriving while every send slot is busy ride one batch, and each caller gets the outcome
// of its own pull.
func TestPullBatcherCoalescesAndAnswersEachCaller(t *testing.T) {
	c := &batchClient{gate: make(chan struct{})}
	b := startBatcher(t, c)
	deadline := time.Now().Add(5 * time.Second)
	waitBatches := func(n int) {
		for {
			c.mu.Lock()
			got := len(c.batches)
			c.mu.Unlock()
			if got >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d batch calls, want %d", got, n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	// Occupy every slot with a lone pull each, one after the other.
	var first sync.WaitGroup
	for i := 0; i < pullBatchInflight; i++ {
		first.Add(1)
		go func() { defer first.Done(); pullAll(b, 1000+i, 1) }()
		waitBatches(i + 1)
	}
	done := make(chan []string)
	go func() { done <- pullAll(b, 0, 40) }()
	for len(b.reqs) < 39 && time.Now().Before(deadline) { // the 40th waits in run for a slot
		time.Sleep(time.Millisecond)
	}
	close(c.gate) // release everything
	got := <-done
	first.Wait()
	for i, g := range got {
		if g != fmt.Sprintf("d%d", i) {
			t.Fatalf("caller %d got %q", i, g)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.batches) != pullBatchInflight+1 || c.batches[pullBatchInflight] != 40 {
		t.Fatalf("batch sizes %v, want %d lone pulls then one batch of 40", c.batches, pullBatchInflight)
	}
}

// A failed or malformed batch reply fails every pull in it; a MailboxNode without the batch RPC
// is served pull by pull.
func TestPullBatcherFailuresAndFallback(t *testing.T) {
	for _, tc := range []struct{ mode, want string }{
		{"error", "error: mailbox down"},
		{"short", "error: gateway: mailbox answered 0 outcomes"},
		{"unimplemented", "unary d"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			c := &batchClient{mode: tc.mode}
			b := startBatcher(t, c)
			for i, g := range pullAll(b, 0, 8) {
				if !strings.HasPrefix(g, tc.want) {
					t.Errorf("caller %d got %q, want prefix %q", i, g, tc.want)
				}
				if tc.mode == "unimplemented" && g != fmt.Sprintf("unary d%d", i) {
					t.Errorf("caller %d got %q", i, g)
				}
			}
		})
	}
}

// A stopped batcher answers queued and new pulls with an error instead of leaving them waiting.
func TestPullBatcherStop(t *testing.T) {
	c := &batchClient{}
	b := newPullBatcher(c, time.Second, prometheus.NewHistogram(prometheus.HistogramOpts{Name: "t"}))
	ctx, cancel := context.WithCancel(context.Background())
	go b.run(ctx)
	cancel()
	<-b.done
	if _, err := b.Do(context.Background(), &internalv1.AuthenticatedPullMailbox{}); !errors.Is(err, errBatcherStopped) {
		t.Fatalf("Do after stop: %v", err)
	}
}
