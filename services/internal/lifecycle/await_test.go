package lifecycle

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

var (
	errFenced  = errors.New("metadata for qim.outbox lists no brokers")
	errMissing = errors.New("topic qim.outbox does not exist")
)

func refusedIfMissing(err error) bool { return errors.Is(err, errMissing) }

// fastAwait retries without delay worth waiting for and never gives up on its own: the tests
// count attempts instead of timing them.
func fastAwait(p *Process) *Process {
	p.await = awaitPolicy{max: time.Hour, attempt: time.Hour, minDelay: time.Microsecond, maxDelay: time.Microsecond, logEvery: time.Hour}
	return p
}

func healthzBody(t *testing.T, p *Process) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + p.MetricsAddr() + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestAwaitRetriesUntilTheDependencyAnswers: failures that are not refusals are retried until
// the check passes, /healthz answers 503 naming the dependency before the first answer and the
// last error after it, and once start-up finished it is ready.
func TestAwaitRetriesUntilTheDependencyAnswers(t *testing.T) {
	p := fastAwait(newProcess())
	ctx, cancel := context.WithCancel(context.Background())
	attempts := 0
	err := p.Run(ctx, func(ctx context.Context) error {
		return p.Await(ctx, "the broker (qim.outbox)", func(context.Context) error {
			attempts++
			code, body := healthzBody(t, p)
			want := "waiting for the broker (qim.outbox)"
			if attempts > 1 {
				want = errFenced.Error()
			}
			if code != http.StatusServiceUnavailable || !strings.Contains(body, want) {
				t.Errorf("attempt %d: /healthz %d %q, want 503 naming %q", attempts, code, body, want)
			}
			if attempts < 3 {
				return errFenced
			}
			cancel() // Run returns once start-up is over
			return nil
		}, refusedIfMissing)
	}, ready)
	if err != nil || attempts != 3 {
		t.Fatalf("Run = %v after %d attempts, want nil after 3", err, attempts)
	}
}

// TestAwaitReadyAfterStart: once Await passed and start-up returned, /healthz is the service's
// own readiness again (the waiting note does not stick).
func TestAwaitReadyAfterStart(t *testing.T) {
	p := fastAwait(newProcess())
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	err := p.Run(ctx, func(ctx context.Context) error {
		if err := p.Await(ctx, "core Redis", func(context.Context) error {
			if n++; n == 1 {
				return errFenced
			}
			return nil
		}, refusedIfMissing); err != nil {
			return err
		}
		p.OnStarted(func() {
			if code, body := healthzBody(t, p); code != http.StatusOK {
				t.Errorf("/healthz after start-up: %d %q", code, body)
			}
			cancel()
		})
		return nil
	}, ready)
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
}

// TestAwaitReturnsARefusalAtOnce: a refusal is not waited for; it is returned as it was.
func TestAwaitReturnsARefusalAtOnce(t *testing.T) {
	p := fastAwait(newProcess())
	attempts := 0
	err := p.Run(context.Background(), func(ctx context.Context) error {
		return p.Await(ctx, "the broker", func(context.Context) error { attempts++; return errMissing }, refusedIfMissing)
	}, ready)
	if !errors.Is(err, errMissing) || attempts != 1 {
		t.Fatalf("Run = %v after %d attempts, want the refusal after 1", err, attempts)
	}
	var we *WaitError
	if errors.As(err, &we) {
		t.Fatalf("a refusal reported as a wait: %v", err)
	}
}

// TestAwaitGivesUpAfterItsBound: past the bound the last error is returned inside a *WaitError
// that names the dependency and the attempts.
func TestAwaitGivesUpAfterItsBound(t *testing.T) {
	p := fastAwait(newProcess())
	p.await.max = 0 // the bound is spent by the first failure
	err := p.Run(context.Background(), func(ctx context.Context) error {
		return p.Await(ctx, "the broker", func(context.Context) error { return errFenced }, refusedIfMissing)
	}, ready)
	var we *WaitError
	if !errors.As(err, &we) || we.Attempts != 1 || we.What != "the broker" || !errors.Is(err, errFenced) {
		t.Fatalf("Run = %v, want a *WaitError for the broker after 1 attempt wrapping the last error", err)
	}
}

// TestAwaitBoundsEachAttempt: an attempt that never answers (a SIGSTOPped broker accepts the
// connection and stays silent) ends at its own bound and the next attempt runs.
func TestAwaitBoundsEachAttempt(t *testing.T) {
	p := fastAwait(newProcess())
	p.await.attempt = time.Millisecond
	attempts := 0
	err := p.Run(context.Background(), func(ctx context.Context) error {
		err := p.Await(ctx, "the broker", func(actx context.Context) error {
			if attempts++; attempts == 1 {
				<-actx.Done() // silent peer
				return actx.Err()
			}
			return nil
		}, refusedIfMissing)
		if err != nil {
			return err
		}
		return errors.New("started") // end Run without running loops
	}, ready)
	if err == nil || err.Error() != "started" || attempts != 2 {
		t.Fatalf("Run = %v after %d attempts, want start-up to pass on attempt 2", err, attempts)
	}
}

// TestAwaitStopsWithTheProcess: a stop during the wait ends it with the context's error.
func TestAwaitStopsWithTheProcess(t *testing.T) {
	p := fastAwait(newProcess())
	ctx, cancel := context.WithCancel(context.Background())
	err := p.Run(ctx, func(ctx context.Context) error {
		return p.Await(ctx, "the broker", func(context.Context) error { cancel(); return errFenced }, refusedIfMissing)
	}, ready)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "the broker") {
		t.Fatalf("Run = %v, want the cancellation naming the dependency", err)
	}
}
