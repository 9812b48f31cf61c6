package loadgen

import (
	"context"
	"testing"
	"time"

	"github.com/qim-dev/qim/chaos/history"
)

// TestReconnectResumesAfterGatewayDrop: the gateway stops answering SENDs (it still commits
// them) 600 ms into a 2 s run, drops every socket at 700 ms and refuses connections for 300 ms.
// With Reconnect every connection (message and control) comes back as the same user, the
// arrivals of the outage are queued and sent on the new links, SENDs pending at the drop end as
// info and return their permits (a window of 4 would otherwise stay full forever), and the pull
// workers resume from their cursors — no delivery is repeated, none is missing.
func TestReconnectResumesAfterGatewayDrop(t *testing.T) {
	gw := newFakeGateway(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rec := history.NewRecorder()
	cfg := fakeConfig(gw, 200, 2*time.Second)
	cfg.Reconnect, cfg.History, cfg.InflightPerConn = true, rec, 4
	upAt := make(chan time.Time, 1)
	go func() {
		time.Sleep(600 * time.Millisecond)
		gw.hold.Store(true)
		time.Sleep(100 * time.Millisecond)
		gw.drop()
		time.Sleep(300 * time.Millisecond)
		gw.hold.Store(false)
		gw.restart()
		upAt <- time.Now()
	}()
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	up := <-upAt
	c := rep.Counts
	v := checkHistory(t, rep, rec.Events())
	var okAfter int
	for _, e := range v.ok {
		if e.AtUs > up.UnixMicro() {
			okAfter++
		}
	}
	t.Logf("sent %d unsent %d acked %d unknown %d lost %d reconnects %d auths %d; %d acked after the restart; events %v; last error %q",
		c.Sent, c.Unsent, c.Acked, c.Unknown, c.ConnectionsLost, c.Reconnects, gw.authCount(), okAfter, v.kinds, rep.Errors[len(rep.Errors)-1])
	if c.Reconnects != 8 || c.ConnectionsLost != 8 || gw.authCount() != 16 || !rep.Config.Reconnect {
		t.Errorf("reconnects %d, lost %d, auths %d", c.Reconnects, c.ConnectionsLost, gw.authCount())
	}
	// A SEND still in the socket when the gateway dropped it was never committed, so unknown
	// sends may or may not be delivered; whatever the fake committed reaches the peer once.
	if okAfter == 0 || c.Unsent != 0 || c.Scheduled != 400 || c.Missing != 0 || c.Delivered < c.Acked ||
		c.Stored != c.Delivered || c.RawDuplicates != 0 {
		t.Errorf("after the restart %d acked; counts %+v", okAfter, c)
	}
	if c.Unknown == 0 || c.Acked+c.Unknown != c.Scheduled || int64(v.kinds[history.Info]) != c.Unknown {
		t.Errorf("acked %d + unknown %d != scheduled %d, or %d Info events", c.Acked, c.Unknown, c.Scheduled, v.kinds[history.Info])
	}
	for k := range v.invoked {
		if _, acked := v.ok[k]; !acked {
			checkUnknownSend(t, v, k)
		}
	}
}

// checkUnknownSend: an unacknowledged send reached its peer at most once, and exactly when it
// is in the stored conversation.
func checkUnknownSend(t *testing.T, v *historyView, k history.Key) {
	t.Helper()
	toPeer := 0
	for _, d := range v.deliver[k] {
		if d.Recipient != d.Sender {
			toPeer++
		}
	}
	if _, stored := v.stored[k]; toPeer > 1 || stored != (toPeer == 1) {
		t.Errorf("%s: unacknowledged, delivered to the peer %d times, stored %v", k, toPeer, stored)
	}
}

// TestLostConnectionsEndWithoutReconnect: a perf run (Reconnect false) counts the loss, the
// lost connections stop sending, their arrivals are counted unsent, and the run still ends.
func TestLostConnectionsEndWithoutReconnect(t *testing.T) {
	gw := newFakeGateway(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() {
		time.Sleep(300 * time.Millisecond)
		gw.drop()
	}()
	start := time.Now()
	rep, err := Run(ctx, fakeConfig(gw, 200, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Counts
	t.Logf("took %s: scheduled %d sent %d unsent %d acked %d lost %d", time.Since(start).Round(time.Millisecond),
		c.Scheduled, c.Sent, c.Unsent, c.Acked, c.ConnectionsLost)
	if c.ConnectionsLost != 8 || c.Reconnects != 0 || gw.authCount() != 8 || c.Unsent == 0 ||
		c.Sent+c.Unsent > c.Scheduled || c.Sent+c.Unsent < c.Scheduled-6 {
		t.Errorf("counts %+v", c)
	}
	if v := verdict(t, rep, CheckFailures); v.Passed {
		t.Errorf("failures verdict passed: %s", v.Detail)
	}
}
