package loadgen

import (
	"context"
	"testing"
	"time"

	"github.com/qim-dev/qim/chaos/check"
	"github.com/qim-dev/qim/chaos/history"
)

// TestIntegrationGroupRun: four groups of five through the real services. Every group is
// created at setup, every message reaches all five mailboxes (the sender's own copy included),
// the groups' CREATE control messages are pulled and skipped, each group's conversation is read
// back whole, and the chaos checker passes the recorded history.
func TestIntegrationGroupRun(t *testing.T) {
	set := deployment(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rec := history.NewRecorder()
	rep, err := Run(ctx, Config{Gateway: set.Addrs.GatewayTCP, TokenSecret: []byte(set.Addrs.TokenSecret),
		Mode: ModeGroup, GroupSize: 5, Rate: 40, Duration: 3 * time.Second, Connections: 20, PingConnections: 1,
		SettleTimeout: time.Minute, History: rec})
	if err != nil {
		t.Fatal(err)
	}
	c, g := rep.Counts, rep.Group
	t.Logf("sent %d acked %d; entries expected %d delivered %d lost %d (own %d) at %.1f/s; control %d foreign %d stored %d; ack p99 %.1f ms e2e p99 %.1f ms; errors %q",
		c.Sent, c.Acked, g.ExpectedEntries, g.DeliveredEntries, g.LostEntries, g.LostOwnCopies, g.EntryRate, c.ControlEvents,
		c.ForeignEvents, c.Stored, rep.Segments["send_ack"].P99Ms, rep.Segments["end_to_end"].P99Ms, rep.Errors)
	if c.Sent != 120 || c.Acked != 120 || g.Groups != 4 || g.ExpectedEntries != 600 || g.LostEntries != 0 ||
		g.DeliveredEntries != 600 || c.DuplicatesAfterDedup != 0 || c.ControlEvents != 20 || c.ForeignEvents != 0 ||
		c.Stored != 124 || c.StoredIncomplete != 0 || c.Errors != 0 {
		t.Errorf("counts %+v, group %+v", c, g)
	}
	if e2e := rep.Segments["end_to_end"]; e2e.Count != 480 {
		t.Errorf("%d end-to-end samples, want 4 per message", e2e.Count)
	}
	res, err := check.Check(rec.Events(), check.Options{})
	if err != nil || !res.Passed || res.Delivered != 120 {
		t.Fatalf("checker: %v %s %v", err, res.Summary(), res.Examples)
	}
}
