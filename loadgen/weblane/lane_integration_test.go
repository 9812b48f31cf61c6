package weblane

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/gates/itest"
	"github.com/qim-dev/qim/gates/svc"
	"github.com/qim-dev/qim/loadgen"
)

func TestMain(m *testing.M) { os.Exit(itest.Main(m)) }

// TestLanePassesOnTheRealStack: 6 TS SDK clients (3 pairs) under node at 12 msg/s for 5 s
// through the real services; every acked message is received once.
func TestLanePassesOnTheRealStack(t *testing.T) {
	if os.Getenv("WEBIT_RUN") != "1" { // as gates/webit: make test runs it after the gates
		t.Skip("set WEBIT_RUN=1 (make test does, after the gates) to run the web lane on the real services")
	}
	ep := itest.Endpoints(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir, err := filepath.Abs("../../clients/web")
	if err != nil {
		t.Fatal(err)
	}
	if err := Build(ctx, dir); err != nil {
		t.Fatal(err)
	}
	set := svc.StartForTest(ctx, t, "../..", ep)
	l := New(Config{Dir: dir, URL: "ws://" + set.Addrs.GatewayWS + "/ws"})
	env := loadgen.LaneEnv{TokenSecret: []byte(set.Addrs.TokenSecret), FirstUser: itest.NewUser(), Clients: 6, Rate: 12,
		Duration: 5 * time.Second, Settle: 20 * time.Second, RunID: 0xbeef}
	for range 5 { // the lane's users are FirstUser..FirstUser+5: keep them out of other tests' way
		itest.NewUser()
	}
	if err := l.Start(ctx, env); err != nil {
		t.Fatal(err)
	}
	rep := l.Report()
	t.Logf("%+v", rep)
	if !rep.Passed || !rep.Verified || rep.Acked < 50 || rep.Missing != 0 || rep.Repeated != 0 || rep.Received != rep.Acked {
		t.Fatalf("the web lane did not pass: %+v", rep)
	}
	if err := l.Start(ctx, env); err != ErrReused {
		t.Fatalf("a second Start: %v, want ErrReused", err)
	}
}

// TestLaneNamesAMissingBuild: without dist/lane/lane.js, Start says what to run.
func TestLaneNamesAMissingBuild(t *testing.T) {
	l := New(Config{Dir: t.TempDir(), URL: "ws://127.0.0.1:1/ws"})
	err := l.Start(context.Background(), loadgen.LaneEnv{TokenSecret: make([]byte, 32), FirstUser: 1, Clients: 2, Rate: 1, Duration: time.Second})
	if err == nil || !strings.Contains(err.Error(), "npm run build") {
		t.Fatalf("Start = %v, want the missing build named", err)
	}
}
