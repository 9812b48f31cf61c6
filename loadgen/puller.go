package loadgen

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/chaos/history"
	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

// pullLoop is the recipient side of delivery, and the only place end to end is measured: a
// message counts as delivered when the MAILBOX_BATCH that carries it is read, because pull is
// the durable path (the cursor moves only through it) while a push may be dropped.
//
// A round starts when a push brought a peer event (or the settle loop asks for one) and pulls
// until has_more is false; pushes that arrive during a round coalesce into one more round, so
// the pull rate follows the message rate without a goroutine or a request per message.
// Own-copy pushes (the sender's mailbox copy of its own message) do not start rounds: the
// measurement needs only the peer's messages, and the next round picks own copies up anyway.
//
// The worker outlives links: a round cut short by a lost link is abandoned, the cursor stays
// here in memory, and the supervisor asks for a round as soon as the next link is up.
func (c *lgConn) pullLoop(ctx context.Context) {
	var cursor uint64
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.gone:
			return
		case <-c.pullNeeded:
		}
		for {
			more, err := c.pullOnce(ctx, &cursor, timer)
			if err != nil {
				atomic.AddInt64(&c.r.live.PullErrors, 1)
				c.r.noteError(err)
				break
			}
			if !more {
				break
			}
		}
	}
}

// pullOnce sends one PULL_MAILBOX from cursor on the live link and applies its answer; without
// a live link the round ends at once (the next link starts a new one).
func (c *lgConn) pullOnce(ctx context.Context, cursor *uint64, timer *time.Timer) (bool, error) {
	l := c.current()
	if l == nil {
		return false, nil
	}
	payload, err := proto.Marshal(&qimv1.PullMailbox{Cursor: &qimv1.MailboxCursor{MailboxSeq: *cursor}})
	if err != nil {
		return false, fmt.Errorf("loadgen: encode PULL_MAILBOX: %w", err)
	}
	select {
	case <-c.batches: // an answer that raced the previous round's timeout
	default:
	}
	id := c.nextID.Add(1)
	c.pullID.Store(id)
	defer c.pullID.CompareAndSwap(id, 0)
	if err := l.w.Send(ctx, wire.Message{Opcode: contract.OpPullMailbox, RequestID: id, Payload: payload}); err != nil {
		if l.down() || c.r.stopping.Load() {
			return false, nil // the link was lost under the round: the supervisor reports it
		}
		return false, fmt.Errorf("loadgen: send PULL_MAILBOX: %w", err)
	}
	atomic.AddInt64(&c.r.live.Pulls, 1)
	timer.Reset(c.r.cfg.AckTimeout)
	var a pullAnswer
	select {
	case a = <-c.batches:
		timer.Stop() // Go ≥ 1.23 timers: no stale tick can be left in the channel
	case <-timer.C:
		return false, fmt.Errorf("loadgen: PULL_MAILBOX of user %d unanswered for %s", c.user, c.r.cfg.AckTimeout)
	case <-ctx.Done():
		return false, nil
	case <-l.closed:
		return false, nil
	}
	if a.err != nil {
		return false, a.err
	}
	var b qimv1.MailboxBatch
	if err := proto.Unmarshal(a.m.Payload, &b); err != nil {
		return false, fmt.Errorf("loadgen: undecodable MAILBOX_BATCH: %w", err)
	}
	c.apply(&b, a.at)
	if b.GetCursorExpired() {
		atomic.AddInt64(&c.r.live.CursorExpired, 1)
	}
	if n := b.GetNextCursor().GetMailboxSeq(); n > *cursor {
		*cursor = n
	}
	return b.GetHasMore(), nil
}

// apply records the peer's messages of one batch: the first pulled delivery of an ordinal is
// an end-to-end sample, later ones are duplicates (raw or surviving dedup, flow decides). In
// group mode the same holds per member (groupFlow decides), own copies are checked as entries
// and the group's CONTROL messages are counted and skipped. The
// history gets every entry of this run, own copies and repeats included: what counts as a
// duplicate is the checker's call, not the recorder's.
func (c *lgConn) apply(b *qimv1.MailboxBatch, at time.Time) {
	atUs := at.UnixMicro()
	for _, ev := range b.GetEntries() {
		if c.member() != nil {
			c.groupEvent(history.Deliver, ev, at)
			continue
		}
		if contract.UserID(ev.GetSenderUserId()) == c.user {
			atomic.AddInt64(&c.r.live.OwnCopies, 1)
			c.recordOwnCopy(history.Deliver, ev, at)
			continue
		}
		h, ok := c.fromPeer(ev)
		if !ok {
			continue
		}
		c.recordMailbox(history.Deliver, ev, h, at)
		if first, sincePush := c.direct().in.pulled(h.ordinal, ev.GetMessageId(), atUs); first {
			c.r.rec.Record(SegEndToEnd, atUs-h.sentUs)
			if sincePush >= 0 {
				c.r.rec.Record(SegPushPull, sincePush)
			}
			c.r.rec.CountDelivered()
			c.r.probe.delivered.Add(1)
		}
	}
}
