package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/qim-dev/qim/gates/svc"
	"github.com/qim-dev/qim/loadgen"
)

// Moderation cells (ADR-0035): the product's pre-send hook goes down under load, with each
// policy. The load runs in the tenant the writers moderate (the load's tenant 0 replaces the
// Set's moderated tenant), so every SEND waits for the stand-in hook; the fault makes it answer
// 503 for hookDownFor. Both cells are judged like every message cell (history checker, orphan
// audit, invariants) and by the writers' counters:
//   - fail-closed: the hook's outage refused SENDs UNAVAILABLE (calls counted unavailable), none
//     was committed unchecked, and nothing a client was told is committed is lost;
//   - fail-open: SENDs went on through the outage, committed unchecked (counted), none refused.
const hookDownFor = 5 * time.Second

func moderationCell(name, title string, failOpen bool) Cell {
	env := []string{"QIM_MODERATION_TENANTS=0"}
	if failOpen {
		env = append(env, "QIM_MODERATION_FAIL_OPEN=true")
	}
	return Cell{Name: name, Title: title,
		Fault: hookDown(true), Hold: hookDownFor, Heal: func(ctx context.Context, t *Target) error {
			_, err := hookDown(false)(ctx, t)
			return err
		},
		Env:   map[string][]string{svc.Writer: env},
		Watch: func() Watch { return &moderationWatch{failOpen: failOpen} }}
}

func moderationCells() []Cell {
	return []Cell{
		moderationCell("moderation-hook-down-fail-closed",
			"the moderation hook answers 503 for 5 s under load (fail-closed): SENDs refused UNAVAILABLE, none committed unchecked, nothing acknowledged lost", false),
		moderationCell("moderation-hook-down-fail-open",
			"the moderation hook answers 503 for 5 s under load (fail-open): SENDs go on unchecked and counted, none refused", true),
	}
}

// hookDown switches the Set's stand-in hook off (true) or on.
func hookDown(down bool) Fault {
	return func(_ context.Context, t *Target) (time.Time, error) {
		h := t.Set.Moderation()
		if h == nil {
			return time.Time{}, fmt.Errorf("chaos: the deployment has no moderation stand-in")
		}
		h.SetDown(down)
		return time.Now(), nil
	}
}

// moderationWatch judges the writers' hook counters after the load.
type moderationWatch struct {
	failOpen bool
	set      *svc.Set
}

func (w *moderationWatch) start(_ context.Context, t *Target) { w.set = t.Set }

func (w *moderationWatch) judge(ctx context.Context, res *CellResult, _ *faultRun, rep *loadgen.Report) {
	var unavailable, allowed, failOpen float64
	for _, name := range w.set.Instance(svc.Writer) {
		fams, err := svc.ScrapeMetrics(ctx, w.set.Addrs.Metrics[name])
		if err != nil {
			res.check("writer hook counters", false, "scrape %s: %v", name, err)
			return
		}
		for _, m := range fams["qim_writer_moderation_calls_total"].GetMetric() {
			for _, l := range m.GetLabel() {
				switch {
				case l.GetName() != "outcome":
				case l.GetValue() == "unavailable":
					unavailable += m.GetCounter().GetValue()
				case l.GetValue() == "allow":
					allowed += m.GetCounter().GetValue()
				}
			}
		}
		for _, m := range fams["qim_writer_moderation_fail_open_total"].GetMetric() {
			failOpen += m.GetCounter().GetValue()
		}
	}
	refused := rep.FailuresByCode["UNAVAILABLE"]
	res.check("the hook was asked and went down", allowed > 0 && unavailable > 0,
		"%.0f hook calls allowed, %.0f found it unavailable", allowed, unavailable)
	if w.failOpen {
		res.check("fail-open: committed unchecked, none refused", failOpen == unavailable && refused == 0,
			"%.0f SENDs committed unchecked for %.0f unavailable calls; %d refused UNAVAILABLE", failOpen, unavailable, refused)
		return
	}
	res.check("fail-closed: refused, none committed unchecked", failOpen == 0 && refused > 0,
		"%d SENDs refused UNAVAILABLE, %.0f committed unchecked", refused, failOpen)
}
