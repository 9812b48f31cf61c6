package svc_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"

	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/gates/svc"
	"github.com/qim-dev/qim/loadgen"
)

// TestContainerDeployment runs compose.integration.yml's topology through testcontainers: a
// containers stack on its own network and ContainerDeployment(2) beside it (two of each scaled
// service, mTLS, two gateways), then offers messages over both gateways: every one acknowledged
// and pulled exactly once, pairs straddling gateways, so pushes cross them through
// qim.presence. It needs an engine and the Q-IM image: QIM_IMAGE names one built by
// scripts/image.sh (make test-containers runs this test); without either it skips.
func TestContainerDeployment(t *testing.T) {
	testcontainers.SkipIfProviderIsNotHealthy(t)
	image := os.Getenv("QIM_IMAGE")
	if image == "" {
		t.Skip("QIM_IMAGE is unset: build the image with scripts/image.sh and name it there")
	}
	images, err := stack.WithImageList(os.Getenv("QIM_IT_IMAGES"))
	if err != nil {
		t.Fatal(err)
	}
	st := stack.NewContainers(stack.WithNetwork(true), images, stack.WithProgress(testLog{t}))
	t.Cleanup(func() { _ = st.Down(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	if err := st.Up(ctx); err != nil {
		t.Fatalf("Up: %v", err)
	}
	c, err := svc.StartContainers(ctx, st, 2, image, testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) }) // before the stack's Down: it frees the network
	if len(c.Gateways) != 2 {
		t.Fatalf("gateways %v, want 2", c.Gateways)
	}
	rep, err := loadgen.Run(ctx, loadgen.Config{Gateway: c.Gateways[0], MoreGateways: c.Gateways[1:],
		TokenSecret: []byte(c.TokenSecret), Rate: 20, Duration: 10 * time.Second, Connections: 16})
	if err != nil {
		t.Fatalf("loadgen: %v", err)
	}
	if rep.Counts.Acked == 0 {
		t.Fatalf("nothing acknowledged: %+v", rep.Counts)
	}
	for _, v := range rep.Verdicts {
		if !v.Passed {
			t.Errorf("%s: %s", v.Name, v.Detail)
		}
	}
	if err := c.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// testLog sends progress lines to the test log.
type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}
