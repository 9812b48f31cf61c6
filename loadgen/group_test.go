package loadgen

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/chaos/check"
	"github.com/qim-dev/qim/chaos/history"
	"github.com/qim-dev/qim/contract"
)

// groupConfig is fakeConfig in group mode: 7 connections, which hold two groups of 3 (the
// seventh is left out: whole groups only).
func groupConfig(gw *fakeGateway, rate float64, d time.Duration) Config {
	cfg := fakeConfig(gw, rate, d)
	cfg.Mode, cfg.GroupSize, cfg.Connections, cfg.PingConnections = ModeGroup, 3, 7, 1
	return cfg
}

func runGroup(t *testing.T, gw *fakeGateway, rec *history.Recorder) *Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := groupConfig(gw, 60, time.Second)
	cfg.History = rec
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestGroupRunAgainstFakeGateway: a group run creates its groups, sends 60 messages spread
// round-robin over the groups and their members, and finds every one in all three members'
// mailboxes (own copies included) — 180 entries, 120 end-to-end samples — with the history
// recording the membership, sends addressed to the group conversation, and the stored
// conversations; the chaos checker passes it.
func TestGroupRunAgainstFakeGateway(t *testing.T) {
	gw := newFakeGateway(t)
	rec := history.NewRecorder()
	rep := runGroup(t, gw, rec)
	c, g := rep.Counts, rep.Group
	if g == nil || rep.Config.Mode != ModeGroup || rep.Config.Connections != 6 || g.Groups != 2 || g.GroupSize != 3 {
		t.Fatalf("config %+v, group %+v", rep.Config, g)
	}
	if c.Sent != 60 || c.Acked != 60 || g.ExpectedEntries != 180 || g.DeliveredEntries != 180 || g.LostEntries != 0 ||
		c.Delivered != 180 || c.Missing != 0 || c.ControlEvents != 6 || c.ForeignEvents != 0 || c.Stored != 62 {
		t.Errorf("counts %+v, group %+v", c, g)
	}
	if e2e := rep.Segments[SegEndToEnd.String()]; e2e.Count != 120 {
		t.Errorf("%d end-to-end samples, want one per message and member other than the sender (120)", e2e.Count)
	}
	if g.EntriesInWindow == 0 || g.EntryRate != float64(g.EntriesInWindow) || !Passed(rep.Verdicts) {
		t.Errorf("entries in window %d at %.1f/s; verdicts %+v", g.EntriesInWindow, g.EntryRate, rep.Verdicts)
	}
	if v := verdictOf(rep, CheckLost); v == nil || !v.Passed || verdictOf(rep, CheckMissing) != nil {
		t.Errorf("loss verdict %+v", v)
	}
	if v := verdictOf(rep, CheckSDKLane); v == nil || !strings.Contains(v.Detail, "group mode") {
		t.Errorf("sdk lane verdict %+v", v)
	}
	evs := rec.Events()
	perSender, members := map[contract.UserID]int{}, map[contract.ConversationID]int{}
	for _, e := range evs {
		switch e.Kind {
		case history.Invoke:
			perSender[e.Sender]++
			if e.Recipient != 0 || contract.U128(e.Conversation).IsZero() {
				t.Fatalf("group send not addressed to the group conversation: %+v", e)
			}
		case history.Group:
			members[e.Conversation]++
		}
	}
	if len(perSender) != 6 || len(members) != 2 {
		t.Fatalf("senders %v, groups %v", perSender, members)
	}
	for u, n := range perSender {
		if n != 10 {
			t.Errorf("user %d sent %d, want 10 (round-robin over groups and members)", u, n)
		}
	}
	for conv, n := range members {
		if n != 3 || conv.Kind() != contract.KindGroup {
			t.Errorf("group %s: %d members recorded", conv, n)
		}
	}
	if res, err := check.Check(evs, check.Options{}); err != nil || !res.Passed || res.Delivered != 60 {
		t.Fatalf("checker: %v %s %v", err, res.Summary(), res.Examples)
	}
}

// TestGroupRunFindsLossAndDuplicates: an entry one member never got is a lost entry (and the
// checker's LOST for that member), a lost own copy too (the checker's GAP: the message is in
// durable history), and a member that got one message under two ids is a duplicate after dedup
// (the checker's DUPLICATE); nothing else fails.
func TestGroupRunFindsLossAndDuplicates(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pick    func(to, sender contract.UserID) bool
		double  bool
		lost    int64
		lostOwn int64
		fails   string
		checker check.Verdict
	}{
		{"entry lost at one member", func(to, s contract.UserID) bool { return to != s }, false, 1, 0, CheckLost, check.Lost},
		{"own copy lost", func(to, s contract.UserID) bool { return to == s }, false, 1, 1, CheckLost, check.Gap},
		{"double commit at one member", func(to, s contract.UserID) bool { return to != s }, true, 0, 0, CheckDuplicates, check.Duplicate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw := newFakeGateway(t)
			done := false
			gw.setMangle(func(n int64, to, sender contract.UserID) (bool, bool) {
				if done || n < 20 || !tc.pick(to, sender) {
					return false, false
				}
				done = true
				return !tc.double, tc.double
			})
			rec := history.NewRecorder()
			rep := runGroup(t, gw, rec)
			if g := rep.Group; g.LostEntries != tc.lost || g.LostOwnCopies != tc.lostOwn {
				t.Errorf("lost %d (own %d), want %d (%d)", g.LostEntries, g.LostOwnCopies, tc.lost, tc.lostOwn)
			}
			if tc.double && rep.Counts.DuplicatesAfterDedup != 1 {
				t.Errorf("duplicates after dedup %d", rep.Counts.DuplicatesAfterDedup)
			}
			for _, v := range rep.Verdicts {
				if v.Passed == (v.Name == tc.fails) {
					t.Errorf("verdict %s passed=%v: %s", v.Name, v.Passed, v.Detail)
				}
			}
			res, err := check.Check(rec.Events(), check.Options{})
			if err != nil || res.Passed || res.Counts[tc.checker] != 1 {
				t.Fatalf("checker: %v %s", err, res.Summary())
			}
		})
	}
}

func verdictOf(rep *Report, name string) *Verdict {
	for i := range rep.Verdicts {
		if rep.Verdicts[i].Name == name {
			return &rep.Verdicts[i]
		}
	}
	return nil
}

// TestGroupConfig: the group rules of Validate, each with its own error, and the shaping of
// Connections per mode.
func TestGroupConfig(t *testing.T) {
	base := Config{Gateway: "127.0.0.1:1", TokenSecret: make([]byte, 32), Rate: 1, Duration: time.Second}
	for _, tc := range []struct {
		name  string
		mut   func(*Config)
		err   string // "" = valid
		conns int
	}{
		{"direct by default", func(*Config) {}, "", 400},
		{"direct rounds up to pairs", func(c *Config) { c.Connections = 7 }, "", 8},
		{"group rounds down to whole groups", func(c *Config) { c.Mode, c.GroupSize = ModeGroup, 30 }, "", 390},
		{"group of one", func(c *Config) { c.Mode, c.GroupSize, c.Connections = ModeGroup, 1, 1 }, "", 1},
		{"largest group", func(c *Config) { c.Mode, c.GroupSize, c.Connections = ModeGroup, 1000, 1000 }, "", 1000},
		{"fewer connections than members", func(c *Config) { c.Mode, c.GroupSize = ModeGroup, 1000 }, "400 connections cannot hold a group of 1000", 0},
		{"group too large", func(c *Config) { c.Mode, c.GroupSize, c.Connections = ModeGroup, 1001, 2000 }, "group size 1001 not in [1, 1000]", 0},
		{"group size missing", func(c *Config) { c.Mode = ModeGroup }, "group size 0 not in", 0},
		{"group size in direct mode", func(c *Config) { c.GroupSize = 10 }, "group size 10 in direct mode", 0},
		{"sdk lane in group mode", func(c *Config) { c.Mode, c.GroupSize, c.SDKClientsPercent = ModeGroup, 10, 5 }, "SDK lane drives 1:1 pairs", 0},
		{"unknown mode", func(c *Config) { c.Mode = "chat" }, `mode "chat"`, 0},
		{"room rounds down to whole rooms", func(c *Config) { c.Mode, c.RoomSize = ModeRoom, 30 }, "", 390},
		{"room size missing", func(c *Config) { c.Mode = ModeRoom }, "room size 0 not in", 0},
		{"room larger than the connections", func(c *Config) { c.Mode, c.RoomSize = ModeRoom, 401 }, "room size 401 not in [1, connections 400]", 0},
		{"more senders than members", func(c *Config) { c.Mode, c.RoomSize, c.RoomSenders = ModeRoom, 3, 4 }, "room senders 4 not in [1, room size 3]", 0},
		{"room size in direct mode", func(c *Config) { c.RoomSize = 10 }, "room size 10, room senders 0 in direct mode", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.mut(&c)
			err := c.Validate()
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tc.err != "" && (!errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want %q", err, tc.err)
			case tc.err == "" && c.Connections != tc.conns:
				t.Fatalf("%d connections, want %d", c.Connections, tc.conns)
			}
		})
	}
	if m, err := ParseMode(""); m != ModeDirect || err != nil {
		t.Errorf("ParseMode(\"\") = %q, %v", m, err)
	}
	if _, err := ParseMode("groups"); err == nil {
		t.Error("ParseMode accepted a typo")
	}
}

// TestFormGroupsInterleaves: groups are consecutive connections in dial order, and the
// scheduler's round-robin over the returned sinks visits every group before a group's next
// member, each member once per round.
func TestFormGroupsInterleaves(t *testing.T) {
	r := &runState{cfg: Config{Mode: ModeGroup, GroupSize: 3}}
	conns := make([]*lgConn, 6)
	for i := range conns {
		conns[i] = &lgConn{idx: i}
	}
	groups, sinks := r.formGroups(conns)
	var order []int
	for _, c := range sinks {
		order = append(order, c.idx)
	}
	if want := []int{0, 3, 1, 4, 2, 5}; len(groups) != 2 || !slices.Equal(order, want) {
		t.Fatalf("%d groups, sink order %v, want %v", len(groups), order, want)
	}
	if groups[1].member(4) != conns[4] || groups[1].member(2) != nil || conns[4].member().index != 1 || conns[4].member().out.self != 1 {
		t.Fatal("membership lookup")
	}
}
