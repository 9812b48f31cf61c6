package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/svc"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// TieredScenarios need the CQL archive (ADR-0022): a conversation whose early history the
// writer trimmed reads as one history across the tiers, and an archive that lost a record fails
// the page that needs it as a whole. They restart the writer with a short hot window, so every
// earlier scenario's history is trimmed too; each restores the writer's settings when it ends.
func TieredScenarios() []Scenario {
	return []Scenario{
		{"trimmed-history-reads-across-tiers", needs(NeedsCQL, withShortHotWindow(scenarioTrimmedHistory))},
		{"archive-record-missing-fails-the-page", needs(NeedsCQL, withShortHotWindow(scenarioArchiveMissing))},
		{"group-intervals-across-tiers", needs(NeedsCQL, withShortHotWindow(scenarioGroupIntervalsAcrossTiers))},
	}
}

// tieredHotWindow is the writer's hot window in these scenarios: long enough that messages sent
// after a trim stay hot while the scenario reads across the floor, short enough for 90 s.
const tieredHotWindow = 15 * time.Second

// shortHotWindow restarts the writer so it trims every 200 ms whatever is archived and older
// than tieredHotWindow, with a 1 ms margin (one host: no clock skew), and returns the restore
// that starts it again with the deployment's own settings, so the gates after these scenarios
// measure the deployment as configured. A writer that refuses the settings is restored at once.
func shortHotWindow(ctx context.Context, e *Env) (restore func() error, err error) {
	restore = func() error {
		if err := e.Set.Stop(svc.Writer); err != nil {
			return err
		}
		return e.Set.Start(context.WithoutCancel(ctx), svc.Writer)
	}
	if err := e.Set.Stop(svc.Writer); err != nil {
		return nil, err
	}
	if err := e.Set.Start(ctx, svc.Writer, "QIM_HISTORY_HOT_WINDOW="+tieredHotWindow.String(),
		"QIM_HISTORY_TRIM_MARGIN=1ms", "QIM_HISTORY_TRIM_INTERVAL=200ms"); err != nil {
		return nil, errors.Join(err, e.Set.Start(context.WithoutCancel(ctx), svc.Writer))
	}
	return restore, nil
}

// withShortHotWindow runs a scenario with the writer on the short hot window, then restores it.
func withShortHotWindow(run func(context.Context, *Env) error) func(context.Context, *Env) error {
	return func(ctx context.Context, e *Env) error {
		restore, err := shortHotWindow(ctx, e)
		if err != nil {
			return err
		}
		return errors.Join(run(ctx, e), restore())
	}
}

// trimmedConversation has alice send n messages to bob and waits until the writer has trimmed
// all of them (the conversation's hot floor reached the last seq), returning the ACKs.
func trimmedConversation(ctx context.Context, e *Env, ca *Client, bob contract.UserID, n int) ([]*qimv1.SendAck, error) {
	var acks []*qimv1.SendAck
	for i := range n {
		ack, err := ca.Send(ctx, bob, NewCmid(), []byte("tiered "+strconv.Itoa(i)))
		if err != nil {
			return nil, fmt.Errorf("send %d: %w", i, err)
		}
		acks = append(acks, ack)
	}
	last := acks[len(acks)-1]
	return acks, e.waitFloor(ctx, last.GetConversationId(), last.GetConversationSeq())
}

// waitFloor polls the conversation's hot floor in the core Redis (msgstore's documented layout,
// qim:hfloor:{tag}:<tenant>:<cid>) until it reaches seq.
func (e *Env) waitFloor(ctx context.Context, cid []byte, seq uint64) error {
	u, err := contract.U128FromBytes(cid)
	if err != nil {
		return err
	}
	conv := contract.ConversationID(u)
	tb := e.Tenant.Bytes()
	key := fmt.Sprintf("qim:hfloor:%s:%x:%x", contract.ConversationCommitBucket(e.Tenant, conv).KeyTag(), tb[:], cid)
	rdb, err := e.redisCore()
	if err != nil {
		return err
	}
	defer rdb.Close()
	for {
		v, err := rdb.Get(ctx, key).Uint64()
		if err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("e2e: read the hot floor: %w", err)
		}
		if v >= seq {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("e2e: the writer never trimmed seq %d (hot floor %d): %w", seq, v, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// sameHistory checks that a history read holds exactly the messages of acks, in order.
func sameHistory(got []*qimv1.HistoryMessage, acks []*qimv1.SendAck, what string) error {
	if len(got) != len(acks) {
		return fmt.Errorf("%s: %d messages, want %d", what, len(got), len(acks))
	}
	for i, m := range got {
		if !bytes.Equal(m.GetMessageId(), acks[i].GetMessageId()) || m.GetConversationSeq() != acks[i].GetConversationSeq() {
			return fmt.Errorf("%s: position %d is seq %d, want seq %d", what, i, m.GetConversationSeq(), acks[i].GetConversationSeq())
		}
	}
	return nil
}

// scenarioTrimmedHistory: 30 messages are trimmed into the archive, 5 more stay hot; the
// recipient pages the whole history both ways across the floor, every body intact, and its
// session row shows exact unread 35 with the newest message as head.
func scenarioTrimmedHistory(ctx context.Context, e *Env) error {
	alice, bob := e.User(), e.User()
	ca, _, err := e.Login(ctx, alice, "a1", 0)
	if err != nil {
		return err
	}
	defer ca.Close()
	acks, err := trimmedConversation(ctx, e, ca, bob, 30)
	if err != nil {
		return err
	}
	for i := range 5 {
		ack, err := ca.Send(ctx, bob, NewCmid(), []byte("tiered "+strconv.Itoa(30+i)))
		if err != nil {
			return err
		}
		acks = append(acks, ack)
	}
	cb, _, err := e.Login(ctx, bob, "b1", 0)
	if err != nil {
		return err
	}
	defer cb.Close()
	conv := acks[0].GetConversationId()
	for _, read := range []struct {
		dir   historyDirection
		limit uint32
	}{{historyNewer, 4}, {historyOlder, 7}, {historyNewer, 50}} {
		got, err := cb.HistoryPaged(ctx, conv, read.dir, read.limit)
		if err != nil {
			return fmt.Errorf("history %v by %d: %w", read.dir, read.limit, err)
		}
		if err := sameHistory(got, acks, fmt.Sprintf("history %v by %d", read.dir, read.limit)); err != nil {
			return err
		}
		for i, m := range got {
			if want := "tiered " + strconv.Itoa(i); string(m.GetBody()) != want {
				return fmt.Errorf("history %v: seq %d body %q, want %q", read.dir, m.GetConversationSeq(), m.GetBody(), want)
			}
		}
	}
	last := acks[len(acks)-1]
	row, err := WaitSessionRow(ctx, cb, conv, projectionWait, func(s *qimv1.SessionEntry) bool {
		return s.GetLatestConversationSeq() == last.GetConversationSeq()
	})
	if err != nil {
		return err
	}
	if row.GetUnreadCount() != 35 || !row.GetUnreadExact() || !bytes.Equal(row.GetHead().GetMessageId(), last.GetMessageId()) {
		return fmt.Errorf("session row across the floor: unread %d exact %v head %x, want 35 exact, head %x", row.GetUnreadCount(),
			row.GetUnreadExact(), row.GetHead().GetMessageId(), last.GetMessageId())
	}
	return nil
}
