package sdk

import (
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
)

// The queue never blocks the producer, never drops a message event, keeps order and coalesces
// only SyncProgress.
func TestEventQueueNeverDropsAndCoalescesProgress(t *testing.T) {
	q := newEventQueue(1)
	defer q.close()
	const n = 5000
	for i := 0; i < n; i++ {
		q.push(MessagesAdded{Messages: []Message{{Seq: contract.ConversationSeq(i)}}})
		q.push(SyncProgress{Applied: i})
		q.push(SyncProgress{Applied: i + 1}) // replaces the previous one at the tail
	}
	if queued, peak := q.backlog(); queued < n || peak < n {
		t.Fatalf("backlog %d peak %d, want at least %d while nobody reads", queued, peak, n)
	}
	next := 0
	progress := 0
	timeout := time.After(10 * time.Second)
	for next < n {
		select {
		case ev := <-q.out:
			switch e := ev.(type) {
			case MessagesAdded:
				if int(e.Messages[0].Seq) != next {
					t.Fatalf("message event %d arrived as #%d", e.Messages[0].Seq, next)
				}
				next++
			case SyncProgress:
				progress++
				if e.Applied != next {
					t.Fatalf("progress %d after message %d: not the coalesced latest", e.Applied, next)
				}
			}
		case <-timeout:
			t.Fatalf("only %d of %d message events delivered", next, n)
		}
	}
	if progress > n {
		t.Fatalf("%d progress events for %d steps: not coalesced", progress, n)
	}
}

func TestDedupSetIsBounded(t *testing.T) {
	d := newDedupSet(3)
	ids := make([]contract.MessageID, 5)
	for i := range ids {
		ids[i], _ = contract.NewMessageID(uint64(1000+i), 0, 1, 1)
		d.add(ids[i])
	}
	if d.has(ids[0]) || d.has(ids[1]) || !d.has(ids[2]) || !d.has(ids[4]) || len(d.ids) != 3 {
		t.Fatalf("ring kept %d ids, oldest evicted: %v %v", len(d.ids), !d.has(ids[0]), !d.has(ids[1]))
	}
}

func TestBackoffGrowsWithJitterAndResets(t *testing.T) {
	b := backoff{min: 100 * time.Millisecond, max: time.Second}
	ceil := 100 * time.Millisecond
	for i := 0; i < 8; i++ {
		d := b.next()
		if d < ceil/2 || d > ceil {
			t.Fatalf("attempt %d: delay %v outside [%v, %v]", i, d, ceil/2, ceil)
		}
		ceil = min(2*ceil, time.Second)
	}
	b.reset()
	if d := b.next(); d > 100*time.Millisecond {
		t.Fatalf("after reset: %v", d)
	}
}

func TestConfigValidate(t *testing.T) {
	good := func() Config {
		return Config{DataDir: "/data", Endpoint: contract.Endpoint{Address: "127.0.0.1:7000", Mode: contract.ModeTCP},
			User: 1, Device: "d", Token: StaticToken("t")}
	}
	tests := []struct {
		name string
		mod  func(*Config)
		ok   bool
	}{
		{"defaults", func(*Config) {}, true},
		{"no data dir: no in-memory production store", func(c *Config) { c.DataDir = "" }, false},
		{"relative data dir", func(c *Config) { c.DataDir = "data" }, false},
		{"no user", func(c *Config) { c.User = 0 }, false},
		{"device too long", func(c *Config) { c.Device = string(make([]byte, 65)) }, false},
		{"no token", func(c *Config) { c.Token = nil }, false},
		{"websocket not supported", func(c *Config) { c.Endpoint.Mode = contract.ModeWS }, false},
		{"pinning refused, not ignored", func(c *Config) { c.Endpoint.CAFingerprint = "ab" }, false},
		{"inflight above the gateway window", func(c *Config) { c.MaxInflightSends = 5000 }, false},
		{"max below min", func(c *Config) { c.ReconnectMin, c.ReconnectMax = time.Second, time.Millisecond }, false},
	}
	for _, tc := range tests {
		c := good()
		tc.mod(&c)
		err := c.Validate()
		if (err == nil) != tc.ok {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if tc.ok && (c.DialTimeout == 0 || c.MaxInflightSends == 0 || c.Logger == nil) {
			t.Fatalf("%s: defaults not filled: %+v", tc.name, c)
		}
	}
}
