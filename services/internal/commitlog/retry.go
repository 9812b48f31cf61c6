package commitlog

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/qim-dev/qim/services/internal/backoff"
)

// Retry budget for admin calls (offset listing, group offset commit and fetch). A broker that
// just started, or whose partition leadership or group coordinator is moving, answers with
// retriable errors (NOT_LEADER_FOR_PARTITION, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_
// PROGRESS, NOT_COORDINATOR) for a few seconds; franz-go leaves per-partition errors to the
// caller. These are retried with backoff for about 8 s in total (and never past ctx); everything
// else — authorization, a missing topic, an out-of-range position — is returned at once.
const (
	retryAttempts   = 20
	retryBackoffMin = 20 * time.Millisecond
	retryBackoffMax = 500 * time.Millisecond
)

// withRetry runs fn until it succeeds, fails with a non-retriable error, exhausts the budget or
// ctx ends; it returns fn's last error.
func withRetry(ctx context.Context, fn func() error) error {
	delay := backoff.New(retryBackoffMin, retryBackoffMax)
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil || !kerr.IsRetriable(err) || attempt == retryAttempts || !delay.Wait(ctx) {
			return err
		}
	}
}
