// Package cli holds the cobra command of qim-loadgen; cmd/qim-loadgen only wires it to os.Args.
// It runs loadgen against endpoints the user gives (a deployment, a `qim all` on a laptop),
// where gate 5 runs it against the deployment it started itself.
package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/contract/devtoken"
	"github.com/qim-dev/qim/loadgen"
	"github.com/qim-dev/qim/loadgen/sdklane"
	"github.com/qim-dev/qim/services/cmdline"
)

// ErrFailed is returned (exit status 1) when a check of the run failed.
var ErrFailed = cmdline.Failure(errors.New("one or more checks failed"))

type options struct {
	gateway     string
	more        []string
	secretFile  string
	mode        string
	groupSize   int
	roomSize    int
	roomSenders int
	rate        float64
	duration    time.Duration
	connections int
	pings       int
	bodyBytes   int
	sdkClients  int
	sdkDataDir  string
	jsonPath    string
	htmlPath    string
	cpuPids     []string
	cpuBudget   float64
	quietWithin time.Duration
}

// NewRootCmd builds the qim-loadgen command.
func NewRootCmd() *cobra.Command {
	o := &options{}
	cmd := &cobra.Command{
		Use:   "qim-loadgen --gateway HOST:PORT",
		Short: "Open-model 1:1 load against a Q-IM gateway, with HDR latency segments and a loss check",
		Long: `qim-loadgen offers 1:1 messages to a gateway at a fixed ARRIVAL rate (the schedule never
waits for answers), measures send→ACK, send→push, send→pull (end to end), PING RTT of a control
group and generator lag in HDR histograms with a 5 s time series, then verifies that every ACKed
message was pulled by its recipient exactly once after dedup. It prints a progress line every
5 s and the verdicts at the end; --json-out and --html-out write the full report (the HTML page is
self-contained). Exit status 1 when a check failed.

The dev-token signing secret comes from the file --secret-file names or, without it, from
QIM_TOKEN_SECRET; never from a flag's value, which every user of the machine sees in ps.
CPU per message needs the pids of the system under test: --cpu-pid gateway=1234 (repeatable). It
is always reported, split by process; it is judged only against --cpu-budget (ms per message),
and only meaningfully at the capacity rate: below saturation it mostly measures idle time.

--sdk-clients P drives P % of the connections with the real client SDK (package sdk, one file
store per client under a temporary directory in --sdk-data-dir): paired clients send on the
same open schedule and the "sdk lane" check passes only when every send was committed and every
ordinal reached the peer exactly once. The stores are removed after a pass and kept (the path is
in the check's detail) after a failure.

--mode group --group-size N partitions the connections into groups of N members (at least N
connections; whole groups only), creates each group at setup, and offers --rate group messages
per second, senders round-robin over the groups and their members. Delivery is judged per
(message, member), the sender's own copy included: the report adds delivered mailbox entries
per second, lost entries and CPU per delivered entry. The SDK lane drives 1:1 pairs and is off
in group mode (--sdk-clients defaults to 0 there; a non-zero value is refused).

--mode room --room-size N joins the connections to rooms of N (whole rooms only) and has
--room-senders of each room publish --rate events per second in all; every member reads every
event. The report adds delivered events per second, broadcast latency (publish → member read),
room_seq gaps, members dropped as slow consumers and CPU per delivered event. The SDK lane is off.

Examples:
  QIM_TOKEN_SECRET=... qim-loadgen --gateway 127.0.0.1:7000 --rate 500 --duration 60s --html-out out.html
  qim-loadgen --gateway 10.0.0.5:7000 --secret-file /etc/qim/token-secret --rate 2000 \
      --connections 1200 --cpu-pid gateway=4242 --cpu-pid redis=4100 --json-out run.json --sdk-clients 0
  qim-loadgen --gateway 127.0.0.1:7000 --mode group --group-size 50 --connections 500 --rate 40
  qim-loadgen --gateway 127.0.0.1:7000 --mode room --room-size 1000 --connections 1000 --rate 20`,
		SilenceUsage: true,
		RunE:         func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	f.StringVar(&o.gateway, "gateway", "", "gateway TCP address host:port (required)")
	f.StringSliceVar(&o.more, "more-gateways", nil, "the other gateways of a deployment with several: connections are spread over all by user id, so a pair's two users may sit on different gateways")
	f.StringVar(&o.secretFile, "secret-file", "", "file holding the dev-token signing secret (default: $QIM_TOKEN_SECRET)")
	f.StringVar(&o.mode, "mode", string(loadgen.ModeDirect), "direct (1:1 pairs), group (groups of --group-size members) or room (rooms of --room-size joined connections)")
	f.IntVar(&o.groupSize, "group-size", 0, fmt.Sprintf("group mode: members per group, 1..%d", contract.GroupMaxMembers))
	f.IntVar(&o.roomSize, "room-size", 0, "room mode: joined connections per room (at most --connections)")
	f.IntVar(&o.roomSenders, "room-senders", 0, "room mode: members of each room that publish (default min(4, --room-size))")
	f.Float64Var(&o.rate, "rate", 500, "target arrival rate, msg/s (group mode: messages to groups)")
	f.DurationVar(&o.duration, "duration", 60*time.Second, "measured window")
	f.IntVar(&o.connections, "connections", 400, "message connections, in 1:1 pairs (group mode: whole groups)")
	f.IntVar(&o.pings, "ping-connections", 4, "PING control-group connections")
	f.IntVar(&o.bodyBytes, "body-bytes", 64, "message body size (at least 32)")
	f.IntVar(&o.sdkClients, "sdk-clients", 5, "percent of connections driven by the SDK lane (0 disables; group mode: 0)")
	f.StringVar(&o.sdkDataDir, "sdk-data-dir", "", "parent of the SDK lane's client stores (default: the system temp dir)")
	f.StringVar(&o.jsonPath, "json-out", "", "write the JSON report to this file")
	f.StringVar(&o.htmlPath, "html-out", "", "write the self-contained HTML report to this file")
	f.StringArrayVar(&o.cpuPids, "cpu-pid", nil, "NAME=PID of a process of the system under test (repeatable)")
	f.Float64Var(&o.cpuBudget, "cpu-budget", 0, "fail when CPU per ACKed message exceeds this many ms (0: report only)")
	f.DurationVar(&o.quietWithin, "wait-quiet", 0, "first wait up to this long for a quiet machine (0: do not wait)")
	_ = cmd.MarkFlagRequired("gateway")
	cmdline.Setup(cmd)
	return cmd
}

func (o *options) run(cmd *cobra.Command) error {
	secretBytes, err := devtoken.ReadSecret(o.secretFile, os.Getenv)
	if err != nil {
		return fmt.Errorf("qim-loadgen: %w", err)
	}
	secret := secretBytes
	procs, err := parsePids(o.cpuPids)
	if err != nil {
		return err
	}
	mode, err := o.modeOf(cmd)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	cfg := loadgen.Config{
		Gateway: o.gateway, MoreGateways: o.more, TokenSecret: secret, Mode: mode, GroupSize: o.groupSize, RoomSize: o.roomSize, RoomSenders: o.roomSenders, Rate: o.rate, Duration: o.duration,
		Connections: o.connections, PingConnections: o.pings, BodyBytes: o.bodyBytes, SDKClientsPercent: o.sdkClients,
		CPU: procs, Thresholds: loadgen.Thresholds{CPUMsPerMessage: o.cpuBudget}, Progress: out, Label: o.label(mode),
	}
	if err := cfg.Validate(); err != nil { // before the quiet wait and the lane's stores
		return err
	}
	if o.quietWithin > 0 {
		q := loadgen.WaitQuiet(cmd.Context(), loadgen.QuietOptions{Within: o.quietWithin}, func(s string) { fmt.Fprintln(out, s) })
		fmt.Fprintln(out, q.Detail)
	}
	if cfg.SDKLane, err = o.lane(); err != nil {
		return err
	}
	rep, err := loadgen.Run(cmd.Context(), cfg)
	if err != nil {
		return err
	}
	if err := o.write(rep); err != nil {
		return err
	}
	printSummary(out, rep)
	if !loadgen.Passed(rep.Verdicts) {
		return ErrFailed
	}
	return nil
}

// modeOf reads --mode; in group mode an --sdk-clients left at its default becomes 0 (the lane
// drives 1:1 pairs), and one given explicitly is refused by loadgen's validation.
func (o *options) modeOf(cmd *cobra.Command) (loadgen.Mode, error) {
	mode, err := loadgen.ParseMode(o.mode)
	if err != nil {
		return "", fmt.Errorf("qim-loadgen: --mode: %w", err)
	}
	if mode != loadgen.ModeDirect && !cmd.Flags().Changed("sdk-clients") {
		o.sdkClients = 0
	}
	return mode, nil
}

func (o *options) label(mode loadgen.Mode) string {
	if mode == loadgen.ModeGroup {
		return fmt.Sprintf("%.0f msg/s to groups of %d for %s against %s", o.rate, o.groupSize, o.duration, o.gateway)
	}
	if mode == loadgen.ModeRoom {
		return fmt.Sprintf("%g events/s into rooms of %d for %s against %s", o.rate, o.roomSize, o.duration, o.gateway)
	}
	return fmt.Sprintf("%.0f msg/s for %s against %s", o.rate, o.duration, o.gateway)
}

// lane is the SDK lane of the run, nil when --sdk-clients is 0.
func (o *options) lane() (loadgen.Lane, error) {
	if o.sdkClients == 0 {
		return nil, nil
	}
	l, err := sdklane.NewWith(sdklane.Config{Dir: o.sdkDataDir})
	if err != nil {
		return nil, fmt.Errorf("qim-loadgen: %w", err)
	}
	return l, nil
}

func (o *options) write(rep *loadgen.Report) error {
	if o.jsonPath != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return fmt.Errorf("qim-loadgen: encode report: %w", err)
		}
		if err := os.WriteFile(o.jsonPath, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("qim-loadgen: %w", err)
		}
	}
	if o.htmlPath != "" {
		if err := os.WriteFile(o.htmlPath, loadgen.RenderHTML(rep), 0o644); err != nil {
			return fmt.Errorf("qim-loadgen: %w", err)
		}
	}
	return nil
}

func parsePids(specs []string) ([]loadgen.Proc, error) {
	var out []loadgen.Proc
	for _, s := range specs {
		name, pid, ok := strings.Cut(s, "=")
		n, err := strconv.Atoi(pid)
		if !ok || name == "" || err != nil || n <= 0 {
			return nil, fmt.Errorf("qim-loadgen: --cpu-pid %q: want NAME=PID", s)
		}
		out = append(out, loadgen.Proc{Name: name, Pid: n})
	}
	return out, nil
}

func printSummary(w io.Writer, rep *loadgen.Report) {
	fmt.Fprintf(w, "\ntarget %.1f msg/s, achieved %.1f (%.2f %%), acked %.1f msg/s\n", rep.TargetRate, rep.AchievedSendRate,
		100*rep.ArrivalRatio, rep.AckRate)
	if g := rep.Group; g != nil {
		fmt.Fprintf(w, "%d groups of %d: %.1f delivered entries/s; %d of %d expected entries delivered, %d lost (%d own copies); %.4f ms CPU per entry\n",
			g.Groups, g.GroupSize, g.EntryRate, g.ExpectedEntries-g.LostEntries, g.ExpectedEntries, g.LostEntries, g.LostOwnCopies,
			rep.CPU.MsPerEntry)
	}
	if g := rep.Room; g != nil {
		fmt.Fprintf(w, "%d rooms of %d: %.0f delivered events/s; %d of %d expected deliveries read, %d room_seq gaps, %d members dropped; %.4f ms CPU per delivered event\n",
			g.Rooms, g.RoomSize, g.DeliveredRate, g.DeliveredEvents, g.ExpectedEvents, g.Gaps, g.SlowConsumerDrops, g.CPUMsPerEvent)
	}
	fmt.Fprintf(w, "%-14s %8s %9s %9s %9s %9s\n", "segment", "count", "p50 ms", "p99 ms", "p99.9 ms", "max ms")
	for _, name := range []string{"send_ack", "send_push", "end_to_end", "broadcast", "ping_rtt", "generator_lag"} {
		s := rep.Segments[name]
		fmt.Fprintf(w, "%-14s %8d %9.2f %9.2f %9.2f %9.2f\n", name, s.Count, s.P50Ms, s.P99Ms, s.P999Ms, s.MaxMs)
	}
	for _, v := range rep.Verdicts {
		res := "pass"
		if !v.Passed {
			res = "FAIL"
		}
		fmt.Fprintf(w, "%-4s %-22s %s\n", res, v.Name, v.Detail)
	}
}
