package stack_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/qim-dev/qim/gates/stack"
	"github.com/testcontainers/testcontainers-go"
)

// TestContainersStack runs the containers provider where a Docker-compatible engine exists and
// skips (with the provider's reason) where none does.
func TestContainersStack(t *testing.T) {
	testcontainers.SkipIfProviderIsNotHealthy(t)
	st := stack.NewContainers(stack.WithCQL(true), itImages(t), stack.WithProgress(tWriter{t}))
	t.Cleanup(func() { _ = st.Down(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := st.Up(ctx); err != nil {
		t.Fatalf("Up: %v", err)
	}
	ep := st.Endpoints()
	redisRoundTrip(t, ep.RedisCore)
	redisRoundTrip(t, ep.RedisMailbox)
	kafkaRoundTrip(t, ep.KafkaBrokers, 5)
	cqlRoundTrip(t, ep.CQL)
	if err := st.Check(ctx); err != nil {
		t.Fatalf("Check: %v", err)
	}
}

// itImages applies QIM_IT_IMAGES: a host that cannot pull the upstream images runs local ones.
func itImages(t *testing.T) stack.Option {
	t.Helper()
	o, err := stack.WithImageList(os.Getenv("QIM_IT_IMAGES"))
	if err != nil {
		t.Fatalf("QIM_IT_IMAGES: %v", err)
	}
	return o
}
