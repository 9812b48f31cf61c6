package session

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/commitlog"
)

// userOn returns a fresh user of the env's tenant whose shard is shard.
func (e *env) userOn(shard uint32) contract.UserID {
	for {
		if u := e.user(); e.shards.UserShard(e.tenant, u) == shard {
			return u
		}
	}
}

func owning(shards ...uint32) func(*Config) {
	return func(c *Config) { c.OwnedShards = shards }
}

// logEnds is the current log end of every partition of the env's topic.
func (e *env) logEnds() map[int32]commitlog.Bounds {
	e.t.Helper()
	adm, err := commitlog.NewAdmin(e.kafka)
	if err != nil {
		e.t.Fatal(err)
	}
	defer adm.Close()
	b, err := adm.Watermarks(e.ctx, e.topic)
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

// Two instances owning disjoint halves of the shards over one topic each project only the
// partitions they own: the first serves (caught up) while nobody consumes the other half, and
// touches neither its checkpoints nor its users' lists; once both run, every user's list is
// complete on the instance owning the user's shard, for old and new traffic alike.
func TestDisjointInstancesProjectOnlyTheirShards(t *testing.T) {
	e := newEnv(t, 4)
	lowUsers := []contract.UserID{e.userOn(0), e.userOn(1)}
	highUsers := []contract.UserID{e.userOn(2), e.userOn(3)}
	owner := func(u contract.UserID) int { return int(e.shards.UserShard(e.tenant, u)) / 2 }
	var pairs [][2]contract.UserID // every low-high and same-half pair: records on all 4 partitions
	for _, a := range lowUsers {
		for _, b := range highUsers {
			pairs = append(pairs, [2]contract.UserID{a, b})
		}
	}
	pairs = append(pairs, [2]contract.UserID{lowUsers[0], lowUsers[1]}, [2]contract.UserID{highUsers[0], highUsers[1]})
	for _, p := range pairs {
		e.send(msg{from: p[0], to: p[1]})
	}
	ends := e.logEnds()
	st := newStore(e.rdb, e.topic, e.parts)

	low := e.mustRun(owning(0, 1)) // serves only once caught up: with the owned half alone
	if got, want := testutil.ToFloat64(low.svc.m.applied), float64(ends[0].High+ends[1].High); got != want {
		t.Fatalf("low instance applied %v records, want %v (partitions 0 and 1 only)", got, want)
	}
	cps, err := st.checkpoints(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cps[0] != ends[0].High || cps[1] != ends[1].High || cps[2] != -1 || cps[3] != -1 {
		t.Fatalf("checkpoints %v after the low instance, log ends %v: the high half must be untouched", cps, ends)
	}
	for _, u := range highUsers {
		if rows, err := st.listAll(e.ctx, e.key(u)); err != nil || len(rows) != 0 {
			t.Fatalf("user %d of the high half projected by the low instance: %v, %v", u, rows, err)
		}
	}

	high := e.mustRun(owning(2, 3))
	if got, want := testutil.ToFloat64(high.svc.m.applied), float64(ends[2].High+ends[3].High); got != want {
		t.Fatalf("high instance applied %v records, want %v (partitions 2 and 3 only)", got, want)
	}
	inst := []*running{low, high}
	for _, p := range pairs {
		for _, u := range p {
			if findEntry(inst[owner(u)].list(u), e.conv(p[0], p[1])) == nil {
				t.Fatalf("user %d (shard %d) lacks its conversation %v on its owner", u, e.shards.UserShard(e.tenant, u), p)
			}
		}
	}
	// New traffic while both run reaches each side's owner.
	a, b := lowUsers[1], highUsers[0]
	seq := e.send(msg{from: b, to: a})[0]
	for _, u := range []contract.UserID{a, b} {
		eventually(t, 20*time.Second, "the new message on the owner of each participant", func() bool {
			row := findEntry(inst[owner(u)].list(u), e.conv(a, b))
			return row != nil && row.GetLatestConversationSeq() == seq
		})
	}
	if testutil.ToFloat64(low.svc.m.unowned) != 0 || testutil.ToFloat64(high.svc.m.unowned) != 0 {
		t.Fatal("a request routed to its owner was counted as unowned")
	}
}

// A request for a user whose shard the instance does not own is refused UNAVAILABLE (retryable)
// with a message naming the shard, and counted; the instance's own users are served.
func TestUnownedUserRefusedUnavailable(t *testing.T) {
	e := newEnv(t, 2)
	r := e.mustRun(owning(0))
	mine, other := e.userOn(0), e.userOn(1)
	e.send(msg{from: other, to: mine})
	r.waitListed(mine, e.conv(mine, other))
	refused := func(op string, code uint32, msg string) {
		t.Helper()
		if contract.ErrorCode(code) != contract.ErrCodeUnavailable || !strings.Contains(msg, "shard 1") ||
			!strings.Contains(msg, "wrong instance") {
			t.Fatalf("%s for a user of an unowned shard: %v %q, want UNAVAILABLE naming shard 1 and the misrouting",
				op, contract.ErrorCode(code), msg)
		}
	}
	out := r.page(other, nil, 10)
	refused("PullSessionList", out.GetErrorCode(), out.GetErrorMessage())
	mr := r.markRead(other, e.conv(mine, other), 1)
	refused("MarkRead", mr.GetErrorCode(), mr.GetErrorMessage())
	if got := testutil.ToFloat64(r.svc.m.unowned); got != 2 {
		t.Fatalf("qim_session_unowned_requests_total = %v, want 2", got)
	}
	if ack := r.markRead(mine, e.conv(mine, other), 1); ack.GetErrorCode() != 0 {
		t.Fatalf("MarkRead of an owned user: %v", ack)
	}
	if got := testutil.ToFloat64(r.svc.m.unowned); got != 2 {
		t.Fatalf("served requests counted as unowned: %v", got)
	}
	// The refusal precedes any read: the unowned user's read watermark was not written.
	if n, err := e.rdb.Exists(e.ctx, readKey(e.key(other))).Result(); err != nil || n != 0 {
		t.Fatalf("refused MarkRead wrote a watermark: %d, %v", n, err)
	}
}
