package sdklane

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/qim-dev/qim/chaos/history"
	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
	"github.com/qim-dev/qim/gates/svc"
	"github.com/qim-dev/qim/loadgen"
)

func TestMain(m *testing.M) { os.Exit(itest.Main(m)) }

var (
	buildOnce sync.Once
	qimBin    string
	buildErr  error
)

// deployment starts every service as its own process on the itest stack (the qim binary is
// built once per package) and stops them when the test ends, before the stack goes down.
func deployment(t *testing.T) *svc.Set {
	t.Helper()
	ep := itest.Endpoints(t)
	buildOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		qimBin, buildErr = svc.Build(ctx, "../..", ep.Dir)
	})
	if buildErr != nil {
		t.Fatalf("build qim: %v", buildErr)
	}
	set, err := svc.New(qimBin, ep)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = set.StopAll() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := set.StartAll(ctx); err != nil {
		t.Fatalf("start services: %v", err)
	}
	return set
}

func firstUser() contract.UserID {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return contract.UserID(uint64(binary.BigEndian.Uint32(b[:]))<<20 | 1)
}

// TestLanePassesOnTheRealStack: 10 SDK clients (5 pairs) at 20 msg/s for 5 s through the real
// gateway, writer, fanout and mailbox processes: every send is committed, every ordinal
// surfaces at the peer exactly once, the lane passes, and each client kept a file store of its
// own under the lane's directory, and the history holds each send's Invoke and Ok and exactly
// one App delivery of it to the peer. A lane is one run: starting it again is refused.
func TestLanePassesOnTheRealStack(t *testing.T) {
	set := deployment(t)
	dir := t.TempDir()
	lane, err := NewWith(Config{Dir: dir, KeepData: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := loadgen.LaneEnv{Gateway: set.Addrs.GatewayTCP, TokenSecret: []byte(set.Addrs.TokenSecret),
		FirstUser: firstUser(), Clients: 10, Rate: 20, Duration: 5 * time.Second, Settle: 30 * time.Second,
		History: history.NewRecorder()}
	start := time.Now()
	if err := lane.Start(ctx, env); err != nil {
		t.Fatal(err)
	}
	rep := lane.Report()
	t.Logf("took %s: %+v", time.Since(start).Round(time.Millisecond), rep)
	if !rep.Passed || !rep.Verified || rep.Sent != 100 || rep.Acked != 100 || rep.Received != 100 ||
		rep.Missing != 0 || rep.Repeated != 0 || rep.Failed != 0 {
		t.Errorf("lane report %+v", rep)
	}
	stores, _ := filepath.Glob(filepath.Join(dir, "qim-sdklane-*", "c*"))
	if len(stores) != 10 {
		t.Errorf("%d client store directories, want 10: %v", len(stores), stores)
	}
	checkLaneHistory(t, env.History.Events(), 100)
	if err := lane.Start(ctx, env); err == nil {
		t.Error("a used lane started again")
	}
}

// checkLaneHistory checks a clean run's history: sends SDK sends, each with one Invoke, then
// one Ok, and exactly one App delivery to its recipient naming the Ok's message; nothing else.
func checkLaneHistory(t *testing.T, events []history.Event, sends int) {
	t.Helper()
	invoked, oks := map[history.Key]history.Event{}, map[history.Key]history.Event{}
	delivered := map[history.Key][]history.Event{}
	for _, e := range events {
		switch k := e.Key(); {
		case e.Lane != history.SDK:
			t.Errorf("event of lane %s: %+v", e.Lane, e)
		case e.Kind == history.Invoke && invoked[k] == (history.Event{}):
			invoked[k] = e
		case e.Kind == history.Ok && oks[k] == (history.Event{}):
			oks[k] = e
		case e.Kind == history.Deliver && e.App:
			delivered[k] = append(delivered[k], e)
		default:
			t.Errorf("unexpected event %+v", e)
		}
	}
	if len(invoked) != sends || len(oks) != sends || len(delivered) != sends {
		t.Errorf("%d invoked, %d ok, %d delivered sends; want %d each", len(invoked), len(oks), len(delivered), sends)
	}
	for k, ok := range oks {
		inv, ds := invoked[k], delivered[k]
		switch {
		case inv.Kind == 0 || inv.AtUs > ok.AtUs || inv.Recipient != ok.Recipient:
			t.Errorf("%s: ok %+v without an earlier invoke to the same peer (%+v)", k, ok, inv)
		case len(ds) != 1:
			t.Errorf("%s: %d App deliveries, want 1: %+v", k, len(ds), ds)
		case ds[0].Recipient != ok.Recipient || ds[0].MessageID != ok.MessageID ||
			ds[0].Conversation != ok.Conversation || ds[0].ConvSeq != ok.ConvSeq:
			t.Errorf("%s: delivery %+v does not name the ok's message %+v", k, ds[0], ok)
		}
	}
}
