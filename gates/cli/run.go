package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates"
	"github.com/qim-dev/qim/gates/release"
	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/loadgen"
)

type runOptions struct {
	full      bool
	reportDir string
	root      string
	withCQL   bool
	secure    bool
	shards    int
	jsonPath  string
	skip      []string
	perf      gates.PerfOptions
	perfMode  string
	chaos     gates.ChaosOptions
	// oneProcess deploys the services as one `qim all` process (perf only: the other gates
	// stop and kill single services).
	oneProcess bool
	goMaxProcs int
	instances  int
}

// ErrGatesFailed is wrapped by the error of a run (or check-history) that failed: exit status 1.
var ErrGatesFailed = gates.ErrGatesFailed

func newRunCmd(o *runOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run GATE... | --full",
		Short: "Run gates in release order on a fresh qim-it-* stack",
		Long: `Runs the named gates (or all of them with --full) in release order. Each gate writes
<report-dir>/<gate>.json; the run writes <report-dir>/report.html. The stack is started on the
first gate that needs servers and torn down when the run ends. Exit status 1 if any gate failed.
--skip GATE:REASON leaves a gate out with a stated reason: the reports list it as SKIPPED with
the reason (never as passed), and it does not fail the run.

Examples:
  qim-gate run lint
  qim-gate run tests --report-dir /tmp/gates
  qim-gate run perf --rate 500 --duration 60s --json-out out.json
  qim-gate run perf --find-max --sdk-clients 0
  qim-gate run perf --mode group --group-size 10 --rate 50 --duration 20s
  qim-gate run perf --mode group --group-size 100 --connections 1000 --find-max
  qim-gate run perf --mode room --room-size 1000 --connections 1000 --find-max
  qim-gate run --full                  # with a CQL node: the release run
  qim-gate run --full --rate 500 --skip 'chaos:run nightly, not on every change'`,
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	f := cmd.Flags()
	f.BoolVar(&o.full, "full", false, "run every gate in release order")
	f.StringVar(&o.reportDir, "report-dir", "", "report directory (default out/gates/<UTC timestamp>)")
	f.StringVar(&o.root, "root", ".", "repository root")
	f.BoolVar(&o.secure, "secure-stores", false, "start every store with TLS and credentials (Redis ACL user, Kafka SASL_SSL with SCRAM-SHA-512, Cassandra PasswordAuthenticator with client encryption); the services and the harness's own clients connect with them")
	f.BoolVar(&o.withCQL, "with-cql", false, "start the CQL node with the run's stack, and the HistoryArchiver in its deployment (the keyspace migrated first); on by default with --full")
	f.IntVar(&o.shards, "dispatch-shards", contract.MailboxShardsDefault,
		"partitions of qim.dispatch = mailbox shards of the run's stack (measure the count you deploy; a power of two)")
	f.StringVar(&o.jsonPath, "json-out", "", "also write the run summary (every gate's result) to this JSON file")
	f.StringArrayVar(&o.skip, "skip", nil, "GATE:REASON: do not run GATE, reporting it as skipped with REASON (repeatable)")
	f.IntVar(&o.instances, "instances", 1,
		"ConversationWriters, MailboxNodes, SessionProjections and gateways in the run's deployment, each on its own loopback ports with mTLS (ADR-0026; the gateways share qim.presence, ADR-0027); one FanoutCoordinator beside them; e2e spreads its clients over the gateways; the chaos cells deploy one of each")
	addPerfFlags(f, o)
	f.StringSliceVar(&o.chaos.Cells, "cells", nil, "chaos: cells to run, comma-separated (\"quick\": one kill of each process; \"nightly\": the cells kept out of the release run; default: every other cell; see qim-gate list)")
	f.IntVar(&o.chaos.Repeat, "repeat", 1, "chaos: run the selected cells this many times, pass after pass, and write each cell's stability (runs passed of runs made, recovery per run) to chaos/stability.md; the release cells take about 26 min per pass on 2 cores")
	return cmd
}

// addPerfFlags registers the perf gate's flags (run and ab share them).
func addPerfFlags(f *pflag.FlagSet, o *runOptions) {
	f.Float64Var(&o.perf.Rate, "rate", 250, "perf and soak: target arrival rate, msg/s (open model); the default is conservative for a 2-core machine, pass your target's")
	f.DurationVar(&o.perf.Duration, "duration", contract.SLODuration, "perf: measured window; soak: the length of its load (default there 1h)")
	f.BoolVar(&o.perf.FindMax, "find-max", false, "perf: search in 30 s steps (from 100 msg/s, doubling until a step fails, then bisecting to within 10 %) and report the highest rate within the SLO")
	f.IntVar(&o.perf.Connections, "connections", 400, "perf: message connections, in 1:1 pairs (group mode: whole groups of --group-size)")
	f.IntVar(&o.perf.SDKClients, "sdk-clients", 5, "perf: percent of connections driven by the SDK lane (0 disables; group mode: off)")
	f.Float64Var(&o.perf.WebSDKShare, "web-sdk-share", 0.3, "perf: fraction of the SDK lane's pairs driven by the TypeScript SDK under node instead of the Go SDK (0: Go SDK only; needs node and npm)")
	f.StringVar(&o.perfMode, "mode", string(loadgen.ModeDirect),
		"perf: direct (1:1 pairs), group (--rate group messages/s to groups of --group-size members, created at setup) or room (--rate events/s into rooms of --room-size joined connections); the SDK lane is off in group and room mode")
	f.IntVar(&o.perf.GroupSize, "group-size", 0, fmt.Sprintf("perf: group mode: members per group, 1..%d (at most --connections)", contract.GroupMaxMembers))
	f.IntVar(&o.perf.RoomSize, "room-size", 0, "perf: room mode: joined connections per room (at most --connections; --rate is room events published per second)")
	f.Float64Var(&o.perf.CPUBudget, "cpu-budget", 0,
		"perf: fail when CPU per ACKed message (ms, all accounted processes) exceeds this; judged at the capacity rate with --find-max (0: report only)")
	f.BoolVar(&o.perf.ConnectWebhook, "connect-webhook", false, "perf: log the frame lane in with opaque tokens through the deployment's connect webhook, and report the webhook's latency")
	f.BoolVar(&o.perf.ModerationHook, "moderation-hook", false, "perf: send the frame lane's messages in the tenant the writers put to the moderation stand-in, and report the hook's latency")
	f.BoolVar(&o.perf.Profile, "profile", false, "perf: CPU-profile every service in the middle of the window (pprof-<service>.pb.gz + .txt in the report dir)")
	f.IntVar(&o.goMaxProcs, "gomaxprocs", 0,
		"GOMAXPROCS of each service process (0: the machine's cores ÷ the service processes, at least 1, and every core for --one-process; -1: Go's default)")
	f.BoolVar(&o.oneProcess, "one-process", false,
		"perf: deploy the writer, mailbox, fanout, session and gateway as one qim all process (the small-deployment topology; the HistoryArchiver stays apart)")
}

// errOneProcess is returned for --one-process with what it cannot serve.
var errOneProcess = errors.New("qim-gate: --one-process")

// checkOneProcess refuses --one-process beside gates that stop or kill single services (they
// would end all five) and beside --profile (one Go runtime runs one CPU profile at a time).
func (o *runOptions) checkOneProcess(gs []gates.Gate) error {
	if !o.oneProcess {
		return nil
	}
	if o.perf.Profile {
		return fmt.Errorf("%w: --profile needs a process per service (one Go runtime runs one CPU profile at a time)", errOneProcess)
	}
	for _, g := range gs {
		if g.Name() != "perf" {
			return fmt.Errorf("%w is for the perf gate: %s stops or kills single services (run: qim-gate run perf --one-process)", errOneProcess, g.Name())
		}
	}
	return nil
}

// checkInstances refuses an instance count the deployment cannot run: none, or several beside
// --one-process (one `qim all` process runs one of each service).
func (o *runOptions) checkInstances() error {
	if o.instances < 1 || (o.instances > 1 && o.oneProcess) {
		return fmt.Errorf("qim-gate: --instances %d: want at least 1, and 1 with --one-process (one `qim all` runs one of each)", o.instances)
	}
	return nil
}

func (o *runOptions) selected(args []string) ([]gates.Gate, error) {
	if o.full == (len(args) > 0) {
		return nil, fmt.Errorf("qim-gate: name gates or pass --full (not both)")
	}
	if o.full {
		return release.Registry(), nil
	}
	want := map[string]bool{}
	for _, a := range args {
		if _, ok := release.Lookup(a); !ok {
			return nil, fmt.Errorf("qim-gate: unknown gate %q (see qim-gate list)", a)
		}
		want[a] = true
	}
	var gs []gates.Gate // release order regardless of argument order, the on-demand gates after
	for _, g := range append(release.Registry(), gates.OnDemand()...) {
		if want[g.Name()] {
			gs = append(gs, g)
		}
	}
	return gs, nil
}

// soakOf is the soak gate's options: its own default length unless --duration was given.
func (o *runOptions) soakOf(cmd *cobra.Command) gates.SoakOptions {
	s := gates.SoakOptions{Rate: o.perf.Rate}
	if cmd.Flags().Changed("duration") {
		s.Duration = o.perf.Duration
	}
	return s
}

func (o *runOptions) run(cmd *cobra.Command, args []string) error {
	gs, err := o.selected(args)
	if err != nil {
		return err
	}
	skip, err := parseSkips(o.skip)
	if err != nil {
		return err
	}
	if err := o.checkOneProcess(gs); err != nil {
		return err
	}
	if err := o.checkInstances(); err != nil {
		return err
	}
	if _, err := contract.NewShardCount(o.shards); err != nil {
		return fmt.Errorf("qim-gate: --dispatch-shards: %w", err)
	}
	if err := o.perfModeOf(cmd); err != nil {
		return err
	}
	if o.reportDir == "" {
		o.reportDir = filepath.Join(o.root, "out", "gates", time.Now().UTC().Format("20060102T150405Z"))
	}
	o.cqlOf(cmd)
	o.chaos.CQL = o.withCQL
	sum, err := gates.Run(cmd.Context(), gs, gates.RunOptions{
		Root:       o.root,
		OneProcess: o.oneProcess,
		GoMaxProcs: o.goMaxProcs,
		Instances:  o.instances,
		ReportDir:  o.reportDir,
		Progress:   os.Stderr,
		NewStack: func() stack.Stack {
			return stack.NewProcess(stack.WithCQL(o.withCQL), stack.WithSecureStores(o.secure), stack.WithDispatchShards(o.shards), stack.WithProgress(os.Stderr))
		},
		Perf:  o.perf,
		Chaos: o.chaos,
		Soak:  o.soakOf(cmd),
		Skip:  skip,
	})
	if err != nil {
		return err
	}
	if o.jsonPath != "" {
		if err := writeSummary(o.jsonPath, sum); err != nil {
			return err
		}
	}
	return sum.Err()
}

// cqlOf makes --full imply --with-cql: the release run judges the production topology (tiered
// backend, HistoryArchiver), where gate 7 can pass and the archive's e2e scenarios and chaos
// cells run. An explicit --with-cql=false keeps the redis backend (gate 7 then fails by design).
func (o *runOptions) cqlOf(cmd *cobra.Command) {
	if o.full && !cmd.Flags().Changed("with-cql") {
		o.withCQL = true
	}
}

// perfModeOf reads --mode into the perf options; in group mode an --sdk-clients left at its
// default becomes 0 (the SDK lane drives 1:1 pairs), one given explicitly fails the gate's
// config check with the reason.
func (o *runOptions) perfModeOf(cmd *cobra.Command) error {
	mode, err := loadgen.ParseMode(o.perfMode)
	if err != nil {
		return fmt.Errorf("qim-gate: --mode: %w", err)
	}
	o.perf.Mode = mode
	if mode != loadgen.ModeDirect && !cmd.Flags().Changed("sdk-clients") {
		o.perf.SDKClients = 0
	}
	return nil
}

// parseSkips reads --skip GATE:REASON values; an unknown gate or an empty reason is an error.
func parseSkips(vals []string) (map[string]string, error) {
	skip := map[string]string{}
	for _, v := range vals {
		name, reason, _ := strings.Cut(v, ":")
		name, reason = strings.TrimSpace(name), strings.TrimSpace(reason)
		if _, ok := release.Lookup(name); !ok {
			return nil, fmt.Errorf("qim-gate: --skip %q: unknown gate %q (see qim-gate list)", v, name)
		}
		if reason == "" {
			return nil, fmt.Errorf("qim-gate: --skip %q: say why (GATE:REASON); the reason goes into every report", v)
		}
		skip[name] = reason
	}
	return skip, nil
}

func writeSummary(path string, sum gates.Summary) error {
	b, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return fmt.Errorf("qim-gate: encode summary: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("qim-gate: write %s: %w", path, err)
	}
	return nil
}
