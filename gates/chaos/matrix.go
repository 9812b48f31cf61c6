package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qim-dev/qim/audit"
	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/services/fanout"
)

// matrix is one run of the selected cells, in order, on one stack.
//
// Invariants: cells run one at a time (each owns the whole machine, and a fault on a shared
// server would otherwise land in another cell's window); every cell gets a fresh deployment of
// the services, so a crash one cell caused cannot leak into the next; a stack server left dead
// by a cell stops the matrix (the remaining cells are reported as not run), because restarting
// it silently would heal a fault no cell injected.
//
// Rejected alternative: a fresh stack per cell. It costs a Kafka start (15–30 s here) per cell,
// over half of a cell's time, and buys nothing the per-cell Outbox range and per-run user ids do
// not already give: cells never see each other's messages.
type matrix struct {
	opts   Options
	faults stack.Faults
	dir    string
	broken error
	pass   int // the pass of a repeated run now running, from 1
	// logFrom is where each service's log stood when the current cell deployed (cells run one
	// at a time, so one map serves).
	logFrom map[string]int64
	// net are the current cell's proxied links (nil when it has none or none is running).
	net *netLinks
	// clientGateway is where the current cell's load dials when it has a ClientLink.
	clientGateway string
}

// Run runs the selected cells and writes chaos.json and chaos.html into ReportDir/chaos.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	cells, err := Select(opts.Cells)
	if err != nil {
		return nil, err
	}
	m := &matrix{opts: opts, faults: opts.Stack.(stack.Faults), dir: filepath.Join(opts.ReportDir, "chaos")}
	if err := os.MkdirAll(m.dir, 0o755); err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	rep := &Report{SchemaVersion: reportSchema, StartedAt: time.Now().UTC(), Options: reportOptions(opts), Source: opts.Source}
	for m.pass = 1; m.pass <= opts.Repeat; m.pass++ {
		if err := m.runPass(ctx, cells, rep); err != nil {
			return nil, err
		}
	}
	rep.finish()
	for _, s := range rep.Stability {
		if s.Skipped == "" {
			m.logf("%s: %d of %d passed; recovery ms per run: %s", s.Name, s.Passed, s.Runs, recoveries(s.RecoveryMs))
		}
	}
	if err := rep.write(m.dir); err != nil {
		return rep, err
	}
	return rep, nil
}

// runPass runs every selected cell once, in order, appending their results to rep.
func (m *matrix) runPass(ctx context.Context, cells []Cell, rep *Report) error {
	of := ""
	if m.opts.Repeat > 1 {
		of = fmt.Sprintf(" (pass %d/%d)", m.pass, m.opts.Repeat)
	}
	passed := 0
	for i, c := range cells {
		var r *CellResult
		switch {
		case m.broken != nil:
			r = notRun(c, m.broken)
		case c.NeedsCQL && m.opts.Stack.Endpoints().CQL == "":
			m.logf("cell %d/%d%s %s: SKIPPED (no CQL node on this stack; run with --with-cql)", i+1, len(cells), of, c.Name)
			r = skipped(c, "no CQL node on this stack: the archive tier is not deployed (run with --with-cql)")
		default:
			m.logf("cell %d/%d%s %s: %s", i+1, len(cells), of, c.Name, c.Title)
			if len(c.GoTest) > 0 {
				r = m.runGoTest(ctx, c)
			} else {
				r = m.runCell(ctx, c)
			}
			m.logf("cell %d/%d%s %s: %s in %.0fs — %s", i+1, len(cells), of, c.Name, passWord(r.Passed), r.DurationS, r.Summary())
		}
		r.Pass = m.pass
		if r.Passed {
			passed++
		}
		rep.Cells = append(rep.Cells, r)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if m.opts.Repeat > 1 {
		m.logf("pass %d/%d: %d of %d cells passed", m.pass, m.opts.Repeat, passed, len(cells))
	}
	return nil
}

func (m *matrix) logf(format string, args ...any) {
	if m.opts.Progress != nil {
		fmt.Fprintf(m.opts.Progress, "  · chaos "+format+"\n", args...)
	}
}

// auditConfig is the orphan audit over the matrix's stack.
func (m *matrix) auditConfig() (audit.Config, *redis.Client, error) {
	ep := m.opts.Stack.Endpoints()
	shards, err := contract.NewShardCount(ep.DispatchShards)
	if err != nil {
		return audit.Config{}, nil, fmt.Errorf("chaos: stack dispatch shards: %w", err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: ep.RedisMailbox})
	return audit.Config{Brokers: ep.KafkaBrokers, Shards: shards, Mailbox: rdb}, rdb, nil
}

// outboxEnd is the Outbox's end offset: the first offset the cell can write.
func (m *matrix) outboxEnd(ctx context.Context) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(m.opts.Stack.Endpoints().KafkaBrokers...))
	if err != nil {
		return 0, fmt.Errorf("chaos: %w", err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, contract.TopicOutbox)
	if err != nil {
		return 0, fmt.Errorf("chaos: outbox end offset: %w", err)
	}
	o, ok := ends.Lookup(contract.TopicOutbox, 0)
	if !ok || o.Err != nil {
		return 0, fmt.Errorf("chaos: outbox end offset: %v", o.Err)
	}
	return o.Offset, nil
}

// judgeAudit runs the orphan audit over the cell's Outbox range once the fanout and the
// MailboxNode caught up with it, and returns the range's end (-1 when it has none).
func (m *matrix) judgeAudit(ctx context.Context, res *CellResult, from int64) int64 {
	cfg, rdb, err := m.auditConfig()
	if err != nil {
		res.check("orphan audit", false, "%v", err)
		return -1
	}
	defer rdb.Close()
	ends, err := audit.WaitCaughtUp(ctx, cfg, fanout.DefaultConfig().Group, 90*time.Second)
	if err != nil {
		res.check("orphan audit", false, "fanout and mailbox did not catch up: %v", err)
		return -1
	}
	res.AuditRecords = ends.Outbox - from
	ar, err := audit.Run(ctx, cfg, audit.Range{From: from, Ends: ends})
	if err != nil {
		res.check("orphan audit", false, "%v", err)
		return ends.Outbox
	}
	res.check("orphan audit", ar.Passed(), "outbox [%d, %d): %s", from, ends.Outbox, errOr(ar.Err(), "0 orphans, complete"))
	return ends.Outbox
}

func errOr(err error, ok string) string {
	if err != nil {
		return err.Error()
	}
	return ok
}

func firstLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func passWord(ok bool) string {
	if ok {
		return "PASSED"
	}
	return "FAILED"
}
