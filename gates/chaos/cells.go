package chaos

import (
	"time"

	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/gates/svc"
)

// Names of the failpoints the cells fire (services/internal/failpoint, which this package
// cannot import). A name that drifted from the service's list arms nothing, the process never
// dies, and the cell fails with ErrFaultMissed: the drift cannot pass silently.
const (
	fpWriterAfterReserve  = "writer-after-reserve"
	fpWriterAfterRecord   = "writer-after-record"
	fpWriterAfterOutbox   = "writer-after-outbox"
	fpWriterBeforeAck     = "writer-before-ack"
	fpFanoutBeforeCommit  = "fanout-before-offset-commit"
	fpMailboxBeforeWrite  = "mailbox-before-materialize"
	fpMailboxAfterWrite   = "mailbox-after-materialize"
	fpArchiverMidBatch    = "archiver-between-record-and-index"
	writerLeaseTTL        = 60 * time.Second // 3 × contract.WriterLeaseRenew
	pausePastLease        = writerLeaseTTL + 5*time.Second
	brokerDownDuringRolls = 5 * time.Second
)

// Cell is one fault scenario of the matrix.
type Cell struct {
	Name  string
	Title string
	// Class is the fault class the report marks the timeline and the matrix with (SIGKILL,
	// SIGTERM, clock step, latency, blackhole, cuts, half-open, partition, …); "" is "fault".
	Class string
	// Quick cells form the subset CI can afford: one kill of each process.
	Quick bool
	// Nightly cells are not in the default selection (the release run, `make test`): they run
	// with `--cells nightly` or by name, until they have earned their place in the release run.
	Nightly bool
	// Service and Failpoint, when set, start that service with the failpoint armed but dormant
	// (QIM_FAILPOINT_ARM=signal); the fault makes it live.
	Service, Failpoint string
	Fault              Fault
	Heal               Heal
	// Hold is how long the fault lasts before Heal (0: heal as soon as the fault took effect).
	Hold time.Duration
	// Window overrides the load window for cells whose fault lasts long.
	Window time.Duration
	// GoTest, when set, makes the cell a `go <GoTest...>` run in the repository instead of a
	// load cell: for faults only a test harness can inject (inside a Lua script).
	GoTest []string
	// GroupSize, when set, drives the cell's load to groups of that many members instead of
	// 1:1 pairs (the checker then expects every recorded member of each group).
	GroupSize int
	// RoomSize, when set, drives the cell's load to rooms of that many joined members whose
	// members rejoin when told UNAVAILABLE, and judges the rooms (cells_room.go) instead of the
	// message history, the outbox audit and the archive, which rooms never touch.
	RoomSize int
	// NeedsCQL cells act on the archive tier: on a stack without a CQL node they are reported
	// skipped, never passed.
	NeedsCQL bool
	// Instances, when above 1, deploys that many ConversationWriters, MailboxNodes and
	// SessionProjections (svc.NewInstances); the fault names the instance it hits.
	Instances int
	// Env is extra environment per service for the cell's deployment.
	Env map[string][]string
	// Links are the paths the cell proxies (netproxy.go) so its faults can shape them.
	Links []Link
	// ClientLink puts the load's own connections behind a proxied link too (linkClients), so a
	// fault can cut the clients' connections while their sends are pending.
	ClientLink bool
	// SmallDisk names the server whose data directory the cell fills: the chaos gate gives it
	// a small disk (SmallDisks).
	SmallDisk string
	// SDKPercent, when set, is the cell's share of connections driven by the SDK, instead of
	// the matrix's.
	SDKPercent int
	// Watch, when set, observes the deployment from before the load until after the judges that
	// wait for catch-up, and adds its own checks (watch.go).
	Watch func() Watch
}

// class is the fault class shown for the cell.
func (c Cell) class() string {
	if c.Class == "" {
		return "fault"
	}
	return c.Class
}

// Cells is the whole matrix in run order.
func Cells() []Cell {
	cells := []Cell{
		failpointCell("writer-kill-after-reserve", "SIGKILL the writer after RESERVED", svc.Writer, fpWriterAfterReserve, false),
		failpointCell("writer-kill-after-record", "SIGKILL the writer after RECORDED", svc.Writer, fpWriterAfterRecord, false),
		failpointCell("writer-kill-after-outbox", "SIGKILL the writer after OUTBOXED, before COMMITTED", svc.Writer, fpWriterAfterOutbox, true),
		failpointCell("writer-kill-before-ack", "SIGKILL the writer after COMMITTED, before the SEND_ACK", svc.Writer, fpWriterBeforeAck, false),
		failpointCell("fanout-kill-mid-batch", "SIGKILL the FanoutCoordinator after producing a batch's dispatches, before committing its Outbox position", svc.Fanout, fpFanoutBeforeCommit, true),
		failpointCell("mailbox-kill-before-materialize", "SIGKILL the MailboxNode with a batch polled and checked, nothing written", svc.Mailbox, fpMailboxBeforeWrite, false),
		failpointCell("mailbox-kill-mid-materialize", "SIGKILL the MailboxNode after a batch's entries and watermark are durable, before its pushes", svc.Mailbox, fpMailboxAfterWrite, true),
		{Name: "session-kill", Title: "SIGKILL the SessionProjection", Quick: true,
			Fault: killService(svc.Session), Heal: restartService(svc.Session)},
		{Name: "gateway-kill", Title: "SIGKILL the gateway: clients reconnect and reconcile", Quick: true,
			Fault: killService(svc.Gateway), Heal: restartService(svc.Gateway)},
		{Name: "kafka-kill", Title: "SIGKILL the Kafka broker and restart it", Quick: true,
			Fault: killServer(stack.ServerKafka), Heal: restartServer(stack.ServerKafka),
			Window: 45 * time.Second}, // the restart took 13–20 s here: leave load after the heal
		{Name: "redis-core-kill", Title: "SIGKILL redis-core and restart it from its AOF (appendfsync always)", Quick: true,
			Fault: killServer(stack.ServerRedisCore), Heal: restartServer(stack.ServerRedisCore)},
		{Name: "redis-mailbox-kill", Title: "SIGKILL redis-mailbox and restart it (everysec: the dispatch log rebuilds what it lost)", Quick: true,
			Fault: killServer(stack.ServerRedisMailbox), Heal: restartServer(stack.ServerRedisMailbox)},
		{Name: "redis-mailbox-crash-lose-tail", Title: "SIGKILL redis-mailbox and cut the last ~second of writes off its AOF (a host crash under everysec), restart: the MailboxNode rebuilds from the dispatch log",
			Fault: killServerLosingTail(stack.ServerRedisMailbox, aofTailLoss), Heal: restartServer(stack.ServerRedisMailbox)},
		{Name: "writer-pause-past-lease", Title: "SIGSTOP the writer past its lease, SIGCONT: it must fence itself; restart",
			Fault: pauseService(svc.Writer), Hold: pausePastLease, Heal: resumeFenced(svc.Writer),
			Window: pausePastLease + 40*time.Second},
		{Name: "rolling-restart-broker-down", Title: "graceful rolling restart of every service while the broker is unreachable (SIGSTOP)",
			Fault: rollingRestartBrokerDown(), Hold: brokerDownDuringRolls, Heal: resumeBrokerAndServices(),
			Window: 60 * time.Second},
		groupCell(failpointCell("group-writer-kill-after-outbox", "groups of 10: SIGKILL the writer after OUTBOXED, before COMMITTED",
			svc.Writer, fpWriterAfterOutbox, false)),
		groupCell(failpointCell("group-mailbox-kill-mid-materialize", "groups of 10: SIGKILL the MailboxNode after a batch's entries are durable, before its pushes",
			svc.Mailbox, fpMailboxAfterWrite, true)),
		writerTakeoverCell(),
		roomWriterKillCell(),
		roomWriterIsolationCell(),
		archiverKillCell(),
		cqlKillCell(),
		luaFaultCell(),
	}
	cells = append(append(cells, moderationCells()...), pushCell())
	cells = append(append(cells, gracefulCells()...), clockCells()...)
	cells = append(cells, networkCells()...)
	return append(cells, diskCells()...)
}

// chaosGroupSize is the group size of the group cells: every connection a member, several
// groups, each message a fan-out to ten mailboxes.
const chaosGroupSize = 10

func groupCell(c Cell) Cell {
	c.GroupSize = chaosGroupSize
	return c
}

func failpointCell(name, title, service, fp string, quick bool) Cell {
	return Cell{Name: name, Title: title, Class: "SIGKILL", Quick: quick, Service: service, Failpoint: fp,
		Fault: fireFailpoint(service), Heal: restartService(service)}
}

// Select returns the cells named (every cell but the nightly ones when names is empty; "quick"
// selects the quick subset, "nightly" the nightly cells) or an error naming the unknown ones.
func Select(names []string) ([]Cell, error) {
	all := Cells()
	if len(names) == 0 {
		var release []Cell
		for _, c := range all {
			if !c.Nightly {
				release = append(release, c)
			}
		}
		return release, nil
	}
	byName := map[string]Cell{}
	for _, c := range all {
		byName[c.Name] = c
	}
	var out []Cell
	var unknown []string
	for _, n := range names {
		if n == "quick" || n == "nightly" {
			for _, c := range all {
				if (n == "quick" && c.Quick) || (n == "nightly" && c.Nightly) {
					out = append(out, c)
				}
			}
			continue
		}
		c, ok := byName[n]
		if !ok {
			unknown = append(unknown, n)
			continue
		}
		out = append(out, c)
	}
	if len(unknown) > 0 {
		return nil, &UnknownCellsError{Names: unknown, Known: cellNames(all)}
	}
	return out, nil
}

// luaFaultCell runs the script-level fault tests: a Redis error injected after each write
// command of every mutating Lua script path must leave nothing behind or converge on retry.
// Redis scripts are atomic against other clients but not against their own errors, so this is
// the fault a server process kill cannot produce.
func luaFaultCell() Cell {
	return Cell{Name: "lua-script-fault", Title: "a Redis error injected between the write commands of each mutating Lua script path (all or nothing, or convergent retry)",
		GoTest: []string{"test", "-v", "-count=1", "-tags", "failpoints", "-run", "TestLuaFault", "./services/..."}}
}
