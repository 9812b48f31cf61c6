package e2e

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/gates/svc"
)

// TestDeliveryLoad is a measurement, not a check of timing: it runs only when QIM_LOAD_RATE is
// set, on a fresh stack with every service as its own process, and logs the latency summary.
//
//	QIM_LOAD_RATE=200 QIM_LOAD_SECONDS=60 [QIM_LOAD_PAIRS=20] go test ./gates/e2e -run DeliveryLoad -v -timeout 10m
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
	pairs, _ := strconv.Atoi(os.Getenv("QIM_LOAD_PAIRS"))
	if pairs <= 0 {
		pairs = 20
	}
	res, err := RunLoad(ctx, e, pairs, rate, time.Duration(secs)*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("delivery at %.0f msg/s target: %s", rate, res)
	if os.Getenv("QIM_LOAD_DUMP_METRICS") != "" {
		for name, addr := range set.Addrs.Metrics {
			dumpMetrics(t, name, addr)
		}
	}
	if res.Pushed < res.Acked {
		t.Errorf("%d ACKed messages were never pushed to an online recipient", res.Acked-res.Pushed)
	}
}

// dumpMetrics logs the qim_ summary lines (sums and counts) of one service's /metrics.
func dumpMetrics(t *testing.T, name, addr string) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Logf("%s metrics: %v", name, err)
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "qim_") && (strings.Contains(l, "_sum") || strings.Contains(l, "_count") || strings.Contains(l, "_total")) {
			t.Logf("%s %s", name, l)
		}
	}
}
