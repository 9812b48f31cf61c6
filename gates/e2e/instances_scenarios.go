package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/svc"
)

// InstancesScenarios run on a deployment of several instances (qim-gate run e2e --instances 2)
// and are skipped, with the reason, on one of each.
func InstancesScenarios() []Scenario {
	return []Scenario{
		{"cross-gateway-online-push-both-ways", needs(NeedsInstances, scenarioCrossGatewayOnline)},
		{"cross-gateway-offline-recipient-logs-in-elsewhere", needs(NeedsInstances, scenarioCrossGatewayOffline)},
		{"duplicate-login-across-gateways-kicks-old", needs(NeedsInstances, scenarioCrossGatewayKick)},
		{"mailbox-shards-moved-to-another-node", needs(NeedsInstances, scenarioShardsMoved)},
	}
}

// userOn returns a fresh user whose mailbox shard instance i of n serves.
func userOn(e *Env, i, n int) contract.UserID {
	shards := contract.ShardCount(e.Shards)
	for {
		u := e.User()
		if shards.ShardInstance(shards.UserShard(e.Tenant, u), n) == i {
			return u
		}
	}
}

// scenarioShardsMoved moves MailboxNode 2's shards to MailboxNode 1 with restarts, as an
// operator would (docs/deployment.md): mailbox-2 stops, mailbox restarts owning both ranges, the
// gateway restarts with mailbox's address in mailbox-2's place. A recipient on those shards gets
// what was sent before the move, while no node owned them, and after, each exactly once. The
// deployment is put back as it was, so later gates judge the usual one.
func scenarioShardsMoved(ctx context.Context, e *Env) (err error) {
	set, n := e.Set, e.Set.Instances()
	moved := svc.InstanceName(svc.Mailbox, 2)
	alice, bob := userOn(e, 0, n), userOn(e, 1, n) // alice's own node stays up
	var mids [][]byte
	send := func(label string, count int) error {
		c, _, err := e.Login(ctx, alice, "a-"+label, 0)
		if err != nil {
			return fmt.Errorf("%s: %w", label, err)
		}
		defer c.Close()
		for i := 0; i < count; i++ {
			ack, err := c.Send(ctx, bob, NewCmid(), []byte(fmt.Sprintf("%s %d", label, i)))
			if err != nil {
				return fmt.Errorf("%s: send %d: %w", label, i, err)
			}
			mids = append(mids, ack.GetMessageId())
		}
		return nil
	}
	if err := send("before", 10); err != nil {
		return err
	}
	if err := deliveredOnce(ctx, e, bob, mids...); err != nil { // mailbox-2 served them
		return fmt.Errorf("before the move: %w", err)
	}
	defer func() { err = errors.Join(err, restoreShards(ctx, set)) }() // even after a timeout
	if err := set.Stop(moved); err != nil {
		return err
	}
	if err := send("unowned", 10); err != nil { // committed; the dispatches wait in the log
		return err
	}
	if err := takeOverShards(ctx, e); err != nil {
		return err
	}
	if err := send("after", 10); err != nil {
		return err
	}
	return deliveredOnce(ctx, e, bob, mids...)
}

// takeOverShards restarts MailboxNode 1 owning its own range and instance 2's (contiguous, so
// one range) and the gateway routing instance 2's entry to it; with more instances the others
// keep theirs, so no shard ever has two owners.
func takeOverShards(ctx context.Context, e *Env) error {
	set, n := e.Set, e.Set.Instances()
	shards := contract.ShardCount(e.Shards)
	first, _, _ := shards.InstanceShards(0, n)
	_, last, _ := shards.InstanceShards(1, n)
	if err := set.Stop(svc.Mailbox); err != nil {
		return err
	}
	both := fmt.Sprintf("QIM_MAILBOX_OWNED_SHARDS=%d-%d", first, last)
	if err := set.Start(ctx, svc.Mailbox, both); err != nil {
		return fmt.Errorf("mailbox owning its shards and mailbox-2's: %w", err)
	}
	addrs := make([]string, n)
	for i, name := range set.Instance(svc.Mailbox) {
		addrs[i] = set.Addrs.RPC[name]
	}
	addrs[1] = set.Addrs.Mailbox
	for _, gw := range set.Instance(svc.Gateway) {
		if err := set.Stop(gw); err != nil {
			return err
		}
		if err := set.Start(ctx, gw, "QIM_MAILBOX_ADDRS="+strings.Join(addrs, ",")); err != nil {
			return fmt.Errorf("%s routing mailbox-2's shards to mailbox: %w", gw, err)
		}
	}
	return nil
}

// restoreWithin bounds restoreShards: a start takes at most a minute.
const restoreWithin = 5 * time.Minute

// restoreShards puts the usual deployment back: mailbox with its own range first, then
// mailbox-2 (never two owners of a shard at once), then the gateways with the usual lists.
func restoreShards(ctx context.Context, set *svc.Set) error {
	// The scenario's own deadline may be what failed it; the later scenarios need the restore.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), restoreWithin)
	defer cancel()
	gateways := set.Instance(svc.Gateway)
	for _, name := range append([]string{svc.Mailbox}, gateways...) {
		if set.Running(name) {
			if err := set.Stop(name); err != nil {
				return err
			}
		}
	}
	for _, name := range append([]string{svc.Mailbox, svc.InstanceName(svc.Mailbox, 2)}, gateways...) {
		if !set.Running(name) {
			if err := set.Start(ctx, name); err != nil {
				return fmt.Errorf("restore %s: %w", name, err)
			}
		}
	}
	return nil
}
