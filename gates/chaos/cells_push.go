package chaos

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/e2e"
	"github.com/qim-dev/qim/loadgen"
)

// The push cell (ADR-0036): the FCM provider answers 503 for providerDownFor under load while a
// side sender keeps writing to users whose only devices are offline and registered. Judged like
// every message cell (the load's history, orphan audit, invariants) and by the stand-in: every
// message the side sender was acknowledged woke its device exactly once after the heal (retried,
// never lost, never doubled), and no SEND waited for the provider (the side sender's all
// acknowledged, the load's SLO judged as always).
const (
	providerDownFor = 5 * time.Second
	pushSideUsers   = 4
	pushSideEvery   = 100 * time.Millisecond
	pushDrainWithin = time.Minute // after the load: retries back off to at most 6.4 s here
)

func pushCell() Cell {
	return Cell{Name: "push-provider-failing",
		Title: "the FCM provider answers 503 for 5 s under load: notifications retried and each delivered once after the heal, SENDs unaffected",
		Fault: providerDown(true), Hold: providerDownFor, Heal: func(ctx context.Context, t *Target) error {
			_, err := providerDown(false)(ctx, t)
			return err
		},
		Watch: func() Watch { return &pushWatch{} }}
}

// providerDown makes the Set's FCM stand-in answer 503 (true) or accept again.
func providerDown(down bool) Fault {
	return func(_ context.Context, t *Target) (time.Time, error) {
		p := t.Set.Push()
		if p == nil || !t.Set.Notifies() {
			return time.Time{}, fmt.Errorf("chaos: the deployment has no NotificationService with push stand-ins")
		}
		if down {
			p.FCM.Fail(http.StatusServiceUnavailable, "UNAVAILABLE")
		} else {
			p.FCM.Heal()
		}
		return time.Now(), nil
	}
}

// pushWatch registers offline devices, sends to them through the whole load, and judges the
// stand-in's deliveries.
type pushWatch struct {
	t      *Target
	stop   context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	acked  map[string]string // message id (hex) → the recipient's token
	failed []error
}

func (w *pushWatch) start(ctx context.Context, t *Target) {
	w.t, w.acked, w.done = t, map[string]string{}, make(chan struct{})
	sctx, stop := context.WithCancel(ctx)
	w.stop = stop
	ep := t.Stack.Endpoints()
	e := e2e.NewEnv(t.Set.Addrs.GatewayTCP, []byte(t.Set.Addrs.TokenSecret), ep.KafkaBrokers, ep.DispatchShards, t.Set)
	go func() {
		defer close(w.done)
		if err := w.run(sctx, e); err != nil && sctx.Err() == nil {
			w.fail(err)
		}
	}()
}

func (w *pushWatch) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.failed = append(w.failed, err)
}

// run registers pushSideUsers offline FCM devices, then sends to them round robin until stopped.
func (w *pushWatch) run(ctx context.Context, e *e2e.Env) error {
	users, tokens := make([]contract.UserID, pushSideUsers), make([]string, pushSideUsers)
	for i := range users {
		users[i] = e.User()
		tokens[i] = fmt.Sprintf("chaos-fcm-%d", users[i])
		c, _, err := e.Login(ctx, users[i], "phone", 0)
		if err != nil {
			return err
		}
		_, err = c.RegisterPushToken(ctx, contract.PushFCM, tokens[i], "")
		_ = c.Close() // offline from here: the device is reached by push only
		if err != nil {
			return err
		}
	}
	sender, _, err := e.Login(ctx, e.User(), "desk", 0)
	if err != nil {
		return err
	}
	defer sender.Close()
	if err := w.settle(ctx, sender, users, tokens); err != nil {
		return err
	}
	tick := time.NewTicker(pushSideEvery)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		k := i % pushSideUsers
		ack, err := sender.Send(ctx, users[k], e2e.NewCmid(), fmt.Appendf(nil, "side %d", i))
		if err != nil {
			return fmt.Errorf("side SEND %d: %w", i, err)
		}
		w.mu.Lock()
		w.acked[hex.EncodeToString(ack.GetMessageId())] = tokens[k]
		w.mu.Unlock()
	}
}

// settle sends each user probes until one wakes its device: the NotificationService learns
// from qim.presence a moment after a connection closed that the device is offline, and only the
// messages sent after that are judged. It runs before the fault (8 s into the load).
func (w *pushWatch) settle(ctx context.Context, sender *e2e.Client, users []contract.UserID, tokens []string) error {
	fcm := w.t.Set.Push().FCM
	for k, u := range users {
		delivered := false
		for i := 0; i < 20 && !delivered; i++ {
			ack, err := sender.Send(ctx, u, e2e.NewCmid(), fmt.Appendf(nil, "probe %d", i))
			if err != nil {
				return fmt.Errorf("probe SEND: %w", err)
			}
			mid := hex.EncodeToString(ack.GetMessageId())
			for end := time.Now().Add(time.Second); !delivered && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
				delivered = fcm.Count(mid, tokens[k]) > 0
			}
		}
		if !delivered {
			return fmt.Errorf("user %d: no probe pushed after 20 messages", u)
		}
	}
	return nil
}

func (w *pushWatch) judge(ctx context.Context, res *CellResult, _ *faultRun, _ *loadgen.Report) {
	w.stop()
	<-w.done
	w.mu.Lock()
	acked, failed := w.acked, w.failed
	w.mu.Unlock()
	res.check("side SENDs acknowledged while the provider failed", len(failed) == 0 && len(acked) > 0,
		"%d acknowledged, failures: %v", len(acked), failed)
	fcm := w.t.Set.Push().FCM
	missing, doubled := w.deliveries(ctx, acked)
	res.check("the provider was failing and retried", fcm.Attempts() > len(fcm.Deliveries()),
		"%d requests for %d accepted deliveries", fcm.Attempts(), len(fcm.Deliveries()))
	res.check("every acknowledged message woke its device exactly once", missing == 0 && doubled == 0,
		"%d messages: %d never delivered within %v, %d delivered more than once", len(acked), missing, pushDrainWithin, doubled)
}

// deliveries waits until every acknowledged message reached the stand-in (or pushDrainWithin
// passed), then counts the ones missing and the ones delivered twice.
func (w *pushWatch) deliveries(ctx context.Context, acked map[string]string) (missing, doubled int) {
	fcm := w.t.Set.Push().FCM
	deadline := time.Now().Add(pushDrainWithin)
	for {
		missing, doubled = 0, 0
		for mid, tok := range acked {
			switch n := fcm.Count(mid, tok); {
			case n == 0:
				missing++
			case n > 1:
				doubled++
			}
		}
		if missing == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return missing, doubled
		}
		time.Sleep(200 * time.Millisecond)
	}
}
