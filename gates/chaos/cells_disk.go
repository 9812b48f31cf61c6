package chaos

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/qim-dev/qim/gates/stack"
)

// The disk cells (issue 42, item 4): a server's data directory is a small tmpfs
// (stack.WithSmallDisk, which the chaos gate asks for only when a selected cell fills it), and
// the fault fills it to the last page while the load runs. The server's writes then fail with
// ENOSPC: redis-mailbox refuses writes (MISCONF) once its AOF write failed, and the MailboxNode
// stops its shard rather than guess; the broker takes its only log directory offline and halts.
// The services must fail closed, nothing acknowledged may be lost, and after FreeDisk (and,
// for a halted broker, a restart on the same data) everything must catch up.
//
// Nightly: a tmpfs mount needs root, and each filled disk costs its size in memory.
// Not yet: the CQL node's data directory.

// Sizes of the small disks: room for a nightly run's data, small enough to fill in a moment.
const (
	smallDiskRedis = 512 << 20
	smallDiskKafka = 1 << 30
	diskFullHold   = 20 * time.Second
)

func diskCells() []Cell {
	return []Cell{
		{Name: "redis-mailbox-disk-full", Class: "disk full", Nightly: true, SmallDisk: stack.ServerRedisMailbox,
			Title: "redis-mailbox's disk full for 20 s under load (its AOF writes fail with ENOSPC), then space returns",
			Fault: fillDisk(stack.ServerRedisMailbox), Hold: diskFullHold, Heal: freeDisk(stack.ServerRedisMailbox),
			Window: diskFullHold + netSettle},
		{Name: "kafka-disk-full", Class: "disk full", Nightly: true, SmallDisk: stack.ServerKafka,
			Title: "the broker's log dir full for 20 s under load, then space returns (a broker that halted is restarted on its data)",
			Fault: fillDisk(stack.ServerKafka), Hold: diskFullHold, Heal: freeDisk(stack.ServerKafka),
			Window: diskFullHold + 45*time.Second}, // a broker restart takes 13–20 s here
	}
}

// SmallDisks are the servers whose data directory the selected cells fill: the chaos gate gives
// each a small disk.
func SmallDisks(names []string) ([]string, error) {
	cells, err := Select(names)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range cells {
		if c.SmallDisk != "" {
			out = append(out, c.SmallDisk)
		}
	}
	return out, nil
}

// SmallDiskSize is the size the chaos gate gives server's small disk.
func SmallDiskSize(server string) int64 {
	if server == stack.ServerKafka {
		return smallDiskKafka
	}
	return smallDiskRedis
}

func diskFaults(t *Target) (stack.DiskFaults, error) {
	d, ok := t.Stack.(stack.DiskFaults)
	if !ok {
		return nil, fmt.Errorf("%w: this stack cannot fill a disk", ErrFaultMissed)
	}
	return d, nil
}

// fillDisk fills server's small disk.
func fillDisk(server string) Fault {
	return func(_ context.Context, t *Target) (time.Time, error) {
		d, err := diskFaults(t)
		if err != nil {
			return time.Time{}, err
		}
		if err := d.FillDisk(server); err != nil {
			return time.Time{}, err
		}
		return time.Now(), nil
	}
}

// freeDisk frees server's small disk and restarts the server when the full disk stopped it.
func freeDisk(server string) Heal {
	return func(ctx context.Context, t *Target) error {
		d, err := diskFaults(t)
		if err != nil {
			return err
		}
		if err := d.FreeDisk(server); err != nil {
			return err
		}
		var died *stack.ServerDiedError
		if err := t.Stack.Check(ctx); errors.As(err, &died) && died.Server == server {
			t.logf("%s stopped on its full disk (%s); restarting it on its data", server, died.Detail)
			return t.Faults.Restart(ctx, server)
		}
		return nil
	}
}
