//go:build failpoints

package luascripttest

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/services/internal/luascript"
)

// Case is one code path of one mutating script, driven through its store's Go API.
//
// The property Matrix.Check proves for it: Redis does not roll back the writes a script made
// before it raised an error, so for every k — the script dies before its first write (k = 0) or
// right after its k-th (1 ≤ k ≤ Writes) — either nothing was written (all-or-nothing) or Op run
// again without the fault, with the same arguments (the caller's retry), leaves exactly the
// keyspace of a fault-free Op and returns what a fault-free Op or a fault-free retry of it
// returns (convergence). The retry's own answer is admissible because a caller already gets it
// after a transport error hid a reply (ADR-0006: every script answers a repeat).
type Case struct {
	Name   string
	Script string // the script file the fault targets, e.g. "reserve_and_record.lua"
	// Writes is the number of write commands the path performs. Check discovers it (the first k
	// at which the armed call runs to its end) and fails when it differs, so a changed path shows.
	Writes int
	// Setup brings a flushed database to the path's precondition, without faults. Optional.
	Setup func(ctx context.Context) error
	// Op runs the operation as its caller does, with arguments fixed by the case (ids, times), so
	// every run gets the same ones. Its result must compare with reflect.DeepEqual; per-item
	// errors of a batch belong in the error (errors.Join).
	Op func(ctx context.Context) (any, error)
}

// Matrix runs Cases on one database.
type Matrix struct {
	// RDB is a client on a database of its own (never 0): Check flushes it before every run.
	RDB *redis.Client
	// Tolerance bounds how far apart two expiries may be and still agree (relative TTLs set by
	// two runs a moment apart); 0 means 5 s.
	Tolerance time.Duration
}

// run is one execution of a case's Op and the keyspace around it.
type run struct {
	res    any
	err    error
	before Keyspace // after Setup
	after  Keyspace // after Op
}

// reply renders the result for a report, cut short: the keyspace diff carries the detail.
func (r run) reply() string {
	s := fmt.Sprintf("%+v / err %v", r.res, r.err)
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return s
}

func sameReply(a, b run) bool {
	if (a.err == nil) != (b.err == nil) || (a.err != nil && a.err.Error() != b.err.Error()) {
		return false
	}
	return reflect.DeepEqual(a.res, b.res)
}

// Check runs c: a control (Setup, Op, and Op again to learn the retry's answer), then for
// k = 0, 1, … a fresh Setup, Op with the fault after write k, and Op again without it, until the
// armed call runs to its end.
func (m Matrix) Check(t *testing.T, ctx context.Context, c Case) {
	t.Helper()
	if m.RDB.Options().DB == 0 {
		t.Fatal("luascripttest: the matrix flushes its database; give it one other than 0")
	}
	tol := m.Tolerance
	if tol == 0 {
		tol = 5 * time.Second
	}
	control := m.exec(t, ctx, c, ctx)
	again := m.again(t, ctx, c)
	if d := Diff(control.after, again.after, tol); len(d) > 0 {
		t.Errorf("%s: a fault-free retry changes the keyspace (the script is not idempotent):\n%s", c.Name, strings.Join(d, "\n"))
	}
	var summary []string
	for k := 0; ; k++ {
		f := &luascript.Fault{Script: c.Script, After: k}
		faulted := m.exec(t, ctx, c, luascript.WithFault(ctx, f))
		if !f.Used() {
			t.Fatalf("%s: Op never called %s", c.Name, c.Script)
		}
		if !luascript.IsInjectedFault(faulted.err) {
			// The armed call ran to its end: the path performs k-1 writes (none for k = 0), and
			// the rewritten source must behave like the script itself.
			if w := max(k-1, 0); w != c.Writes {
				t.Errorf("%s: the path performs %d writes, the case says %d", c.Name, w, c.Writes)
			}
			if !sameReply(faulted, control) || len(Diff(control.after, faulted.after, tol)) > 0 {
				t.Errorf("%s: with a fault beyond its last write the call differs from the control: %s vs %s",
					c.Name, faulted.reply(), control.reply())
			}
			break
		}
		if k > c.Writes {
			t.Fatalf("%s: the fault after write %d fired, the case says %d writes", c.Name, k, c.Writes)
		}
		left := Diff(faulted.before, faulted.after, tol)
		retry := run{before: faulted.after}
		retry.res, retry.err = c.Op(ctx)
		retry.after = m.dump(t, ctx)
		diverge := Diff(control.after, retry.after, tol)
		replyOK := sameReply(retry, control) || sameReply(retry, again)
		converged := len(diverge) == 0 && replyOK
		outcome := "keyspace unchanged"
		if len(left) > 0 {
			outcome = fmt.Sprintf("%d keys changed", len(left))
		}
		switch {
		case converged && sameReply(retry, control):
			outcome += ", retry converged"
		case converged:
			outcome += ", retry converged (answered as a repeat)"
		}
		if !converged {
			var b strings.Builder
			fmt.Fprintf(&b, "%s: fault at k=%d (%v)\n  left behind by the fault:\n    %s\n  after the retry, against the control:\n    %s",
				c.Name, k, faulted.err, lines(left), lines(diverge))
			if !replyOK {
				fmt.Fprintf(&b, "\n  retry reply:   %s\n  control reply: %s\n  control retry: %s", retry.reply(), control.reply(), again.reply())
			}
			t.Errorf("DIVERGES %s", b.String())
			outcome += ", DIVERGES"
		}
		summary = append(summary, fmt.Sprintf("k=%d %s", k, outcome))
	}
	if len(summary) == 0 {
		summary = []string{"no write to fault"}
	}
	t.Logf("%s (%s, %d writes): %s", c.Name, c.Script, c.Writes, strings.Join(summary, "; "))
}

// exec flushes the database, runs Setup and runs Op under opCtx.
func (m Matrix) exec(t *testing.T, ctx context.Context, c Case, opCtx context.Context) run {
	t.Helper()
	if err := m.RDB.FlushDB(ctx).Err(); err != nil {
		t.Fatalf("flushdb: %v", err)
	}
	if c.Setup != nil {
		if err := c.Setup(ctx); err != nil {
			t.Fatalf("%s: setup: %v", c.Name, err)
		}
	}
	r := run{before: m.dump(t, ctx)}
	r.res, r.err = c.Op(opCtx)
	r.after = m.dump(t, ctx)
	return r
}

// again runs Op once more on the control's keyspace.
func (m Matrix) again(t *testing.T, ctx context.Context, c Case) run {
	t.Helper()
	r := run{before: m.dump(t, ctx)}
	r.res, r.err = c.Op(ctx)
	r.after = m.dump(t, ctx)
	return r
}

func (m Matrix) dump(t *testing.T, ctx context.Context) Keyspace {
	t.Helper()
	ks, err := Dump(ctx, m.RDB)
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

func lines(d []string) string {
	if len(d) == 0 {
		return "(none)"
	}
	return strings.Join(d, "\n    ")
}
