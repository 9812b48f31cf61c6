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
// own under the lane's directory. A lane is one run: starting it again is refused.
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
		FirstUser: firstUser(), Clients: 10, Rate: 20, Duration: 5 * time.Second, Settle: 30 * time.Second}
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
	if err := lane.Start(ctx, env); err == nil {
		t.Error("a used lane started again")
	}
}
