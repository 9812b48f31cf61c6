package e2e

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/gates/svc"
)

// TestDeliveryLoad is a measurement, not a check of timing: it runs only when QIM_LOAD_RATE is
// set, on a fresh stack with every service as its own process, and logs the latency summary.
//
//	QIM_LOAD_RATE=200 QIM_LOAD_SECONDS=60 go test ./gates/e2e -run DeliveryLoad -v -timeout 10m
func TestDeliveryLoad(t *testing.T) {
	rate, _ := strconv.ParseFloat(os.Getenv("QIM_LOAD_RATE"), 64)
	if rate <= 0 {
		t.Skip("set QIM_LOAD_RATE (msg/s) to run the delivery measurement")
	}
	secs, _ := strconv.Atoi(os.Getenv("QIM_LOAD_SECONDS"))
	if secs <= 0 {
		secs = 60
	}
	ctx := context.Background()
	st := stack.NewProcess(stack.WithProgress(os.Stderr))
	if err := st.Up(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Down(ctx) }()
	bin, err := svc.Build(ctx, "../..", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	set, err := svc.New(bin, st.Endpoints())
	if err != nil {
		t.Fatal(err)
	}
	if err := set.StartAll(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = set.StopAll() }()
	ep := st.Endpoints()
	e := NewEnv(set.Addrs.GatewayTCP, []byte(set.Addrs.TokenSecret), ep.KafkaBrokers, ep.DispatchShards, set)
	res, err := RunLoad(ctx, e, 20, rate, time.Duration(secs)*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("delivery at %.0f msg/s target: %s", rate, res)
	if res.Pushed < res.Acked {
		t.Errorf("%d ACKed messages were never pushed to an online recipient", res.Acked-res.Pushed)
	}
}
