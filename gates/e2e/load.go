package e2e

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/qim-dev/qim/contract"
)

// LoadResult summarises a paced 1:1 run: latencies in microseconds.
type LoadResult struct {
	Sent, Acked, Pushed int
	Duration            time.Duration
	Ack, Push           *hdrhistogram.Histogram
}

func (r LoadResult) String() string {
	return fmt.Sprintf("sent %d acked %d pushed %d in %s (%.1f msg/s); send→ACK p50 %.1f ms p99 %.1f ms max %.1f ms; send→push p50 %.1f ms p99 %.1f ms max %.1f ms",
		r.Sent, r.Acked, r.Pushed, r.Duration.Round(time.Millisecond), float64(r.Acked)/r.Duration.Seconds(),
		ms(r.Ack.ValueAtQuantile(50)), ms(r.Ack.ValueAtQuantile(99)), ms(r.Ack.Max()),
		ms(r.Push.ValueAtQuantile(50)), ms(r.Push.ValueAtQuantile(99)), ms(r.Push.Max()))
}

func ms(us int64) float64 { return float64(us) / 1000 }

// RunLoad sends 1:1 messages over `pairs` sender/receiver pairs at a fixed total rate for d,
// measuring send→ACK at the sender and send→PUSH_EVENTS at the receiver (the body carries the send
// time). It is a paced measurement for the delivery chain, not the open-model load generator.
func RunLoad(ctx context.Context, e *Env, pairs int, rate float64, d time.Duration) (LoadResult, error) {
	res := LoadResult{Ack: hdrhistogram.New(1, 60_000_000, 3), Push: hdrhistogram.New(1, 60_000_000, 3)}
	var mu sync.Mutex
	var wg sync.WaitGroup
	interval := time.Duration(float64(time.Second) * float64(pairs) / rate)
	start := time.Now()
	errc := make(chan error, 2*pairs)
	for i := 0; i < pairs; i++ {
		snd, rcv := e.User(), e.User()
		cs, _, err := e.Login(ctx, snd, "load-s", 0)
		if err != nil {
			return res, err
		}
		defer cs.Close()
		cr, _, err := e.Login(ctx, rcv, "load-r", 0)
		if err != nil {
			return res, err
		}
		defer cr.Close()
		wg.Add(2)
		go func() { defer wg.Done(); errc <- sendPaced(ctx, cs, rcv, interval, start.Add(d), &mu, &res) }()
		go func() { defer wg.Done(); receivePushes(ctx, cr, start.Add(d+5*time.Second), &mu, &res) }()
	}
	wg.Wait()
	res.Duration = time.Since(start) - 5*time.Second
	close(errc)
	for err := range errc {
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

func sendPaced(ctx context.Context, c *Client, peer contract.UserID, every time.Duration, until time.Time, mu *sync.Mutex, res *LoadResult) error {
	t := time.NewTicker(every)
	defer t.Stop()
	body := make([]byte, 64)
	for now := time.Now(); now.Before(until); now = <-t.C {
		binary.BigEndian.PutUint64(body, uint64(time.Now().UnixMicro()))
		sent := time.Now()
		_, err := c.Send(ctx, peer, NewCmid(), body)
		mu.Lock()
		res.Sent++
		if err == nil {
			res.Acked++
			_ = res.Ack.RecordValue(time.Since(sent).Microseconds())
		}
		mu.Unlock()
		if err != nil {
			return fmt.Errorf("e2e: load send: %w", err)
		}
	}
	return nil
}

func receivePushes(ctx context.Context, c *Client, until time.Time, mu *sync.Mutex, res *LoadResult) {
	timer := time.NewTimer(time.Until(until))
	defer timer.Stop()
	for {
		select {
		case p := <-c.Pushes():
			now := time.Now().UnixMicro()
			mu.Lock()
			for _, ev := range p.GetEvents() {
				if b := ev.GetBody(); len(b) >= 8 {
					res.Pushed++
					_ = res.Push.RecordValue(now - int64(binary.BigEndian.Uint64(b)))
				}
			}
			mu.Unlock()
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}
