package loadgen

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/qim-dev/qim/chaos/history"
	"github.com/qim-dev/qim/gates/svc"
)

// realHistoryPath is where TestIntegrationHistory leaves its history when
// QIM_WRITE_REAL_HISTORY=1: a real run's log for chaos/check's tests, refreshed by hand (a tool
// path for whoever maintains the checker, not something a normal test run writes).
const (
	realHistoryPath     = "../chaos/check/testdata/real-run.log.zst"
	writeRealHistoryEnv = "QIM_WRITE_REAL_HISTORY"
)

// writeRealHistory is QIM_WRITE_REAL_HISTORY=1, read by TestMain.
var writeRealHistory bool

// TestIntegrationHistory: a short run through the real services with History set records, for
// every SEND, an Invoke and its outcome consistent with the report (one Ok per ACK), a Deliver of
// every acked message to its recipient and of own copies to their senders, and reads every acked
// message back from the stored conversations.
func TestIntegrationHistory(t *testing.T) {
	set := deployment(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rec := history.NewRecorder()
	rep, err := Run(ctx, Config{Gateway: set.Addrs.GatewayTCP, TokenSecret: []byte(set.Addrs.TokenSecret),
		Rate: 40, Duration: 3 * time.Second, Connections: 10, SettleTimeout: time.Minute, History: rec})
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Counts
	evs := rec.Events()
	v := checkHistory(t, rep, evs)
	t.Logf("sent %d acked %d delivered %d missing %d stored %d (errors %d, incomplete pairs %d); %d events %v, own copies %d",
		c.Sent, c.Acked, c.Delivered, c.Missing, c.Stored, c.StoredErrors, c.StoredIncomplete, len(evs), v.kinds, v.own)
	if c.Sent != 120 || c.Missing != 0 || c.StoredErrors != 0 || c.StoredIncomplete != 0 || c.Stored < c.Acked {
		t.Errorf("counts %+v; errors %q", c, rep.Errors)
	}
	if writeRealHistory {
		if err := os.MkdirAll(filepath.Dir(realHistoryPath), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := history.WriteFile(realHistoryPath, evs); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %d events to %s", len(evs), realHistoryPath)
	}
}

// TestIntegrationReconnectAfterGatewayKill: the gateway process is SIGKILLed 3 s into a 10 s
// run and started again a second later. With Reconnect every connection comes back, the run goes on (messages
// are acked after the restart), and every acked message — before or after the crash — is
// delivered to its recipient and stored.
func TestIntegrationReconnectAfterGatewayKill(t *testing.T) {
	set := deployment(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rec := history.NewRecorder()
	type restart struct {
		killed, up time.Time
		err        error
	}
	done := make(chan restart, 1)
	go func() {
		time.Sleep(3 * time.Second)
		r := restart{killed: time.Now()}
		if r.err = set.Kill(svc.Gateway); r.err == nil {
			time.Sleep(time.Second) // arrivals queue on the connections meanwhile
			r.err = set.Start(ctx, svc.Gateway)
		}
		r.up = time.Now()
		done <- r
	}()
	rep, err := Run(ctx, Config{Gateway: set.Addrs.GatewayTCP, TokenSecret: []byte(set.Addrs.TokenSecret),
		Rate: 40, Duration: 10 * time.Second, Connections: 10, PingConnections: 2, SettleTimeout: time.Minute,
		Reconnect: true, History: rec})
	if err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("restart the gateway: %v", r.err)
	}
	c := rep.Counts
	v := checkHistory(t, rep, rec.Events())
	okAfter := 0
	for _, e := range v.ok {
		if e.AtUs > r.up.UnixMicro() {
			okAfter++
		}
	}
	t.Logf("gateway down for %s; scheduled %d sent %d unsent %d acked %d (%d after the restart) unknown %d missing %d; lost %d reconnects %d; stored %d; events %v",
		r.up.Sub(r.killed).Round(time.Millisecond), c.Scheduled, c.Sent, c.Unsent, c.Acked, okAfter, c.Unknown, c.Missing,
		c.ConnectionsLost, c.Reconnects, c.Stored, v.kinds)
	if c.Reconnects < 12 || c.ConnectionsLost < 12 || okAfter == 0 || c.Missing != 0 || c.StoredIncomplete != 0 {
		t.Errorf("counts %+v; errors %q", c, rep.Errors)
	}
}
