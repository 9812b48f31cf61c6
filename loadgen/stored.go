package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/chaos/history"
	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

// historyNewer is PullHistory.direction NEWER (history.proto): records with seq > anchor_seq.
const historyNewer = 2

// storedAttempts bounds the tries for one page, alternating between the pair's two
// connections: enough to ride out one lost link, few enough that a conversation the server
// cannot read ends the run instead of stalling it.
const storedAttempts = 4

// readStored reads, after the settle wait, each pair's conversation from its durable history
// (PULL_HISTORY) and records one Stored event per record: the checker's view of what the
// system kept, independent of what any mailbox delivered. Pairs are read concurrently, at most
// DialConcurrency at a time, each over its own two connections.
//
// A page that fails (ERROR, no answer, lost link) is a run error and is tried again on the
// pair's other connection; a pair whose history could not be read to the end is counted
// (stored_incomplete), because a checker must not mistake a partial read for loss.
func (r *runState) readStored(ctx context.Context, conns []*lgConn) {
	var g errgroup.Group
	g.SetLimit(r.cfg.DialConcurrency)
	for i := 0; i+1 < len(conns); i += 2 {
		a, b := conns[i], conns[i+1]
		g.Go(func() error {
			if !r.readPair(ctx, [2]*lgConn{a, b}) {
				r.ctr.storedIncomplete.Add(1)
			}
			return nil
		})
	}
	_ = g.Wait()
}

// readPair pages through one pair's conversation NEWER from seq 0 until an empty page (has_more
// is not trusted to end the read: a short page is not proof there is nothing after it). A pair
// whose every send ended unknown named no conversation; its id is derived as the server does,
// because an unknown send may still have committed.
func (r *runState) readPair(ctx context.Context, pair [2]*lgConn) bool {
	conv, ok := pair[0].pair.conversation()
	if !ok {
		conv = contract.DirectConversationID(r.cfg.Tenant, pair[0].user, pair[1].user)
	}
	var anchor uint64
	for {
		b, at, ok := r.storedPage(ctx, pair, conv, anchor)
		if !ok {
			return false
		}
		recs := b.GetRecords()
		if len(recs) == 0 {
			return true
		}
		for _, rec := range recs {
			r.recordStored(pair, rec, at)
		}
		last := recs[len(recs)-1].GetConversationSeq()
		if last <= anchor {
			r.noteError(fmt.Errorf("loadgen: PULL_HISTORY of %s did not advance past seq %d", conv, anchor))
			return false
		}
		anchor = last
	}
}

// storedPage fetches one page, trying the pair's connections in turn, with a pause that doubles
// from reconnectMin between tries: an UNAVAILABLE read of a service that is coming back gets a
// moment to recover instead of four refusals in a row.
func (r *runState) storedPage(ctx context.Context, pair [2]*lgConn, conv contract.ConversationID,
	anchor uint64) (*qimv1.HistoryBatch, time.Time, bool) {
	for attempt := range storedAttempts {
		if attempt > 0 && !sleepCtx(ctx, reconnectMin<<(attempt-1)) {
			return nil, time.Time{}, false
		}
		b, at, err := pair[attempt%2].pullHistory(ctx, conv, anchor)
		if err == nil {
			return b, at, true
		}
		r.ctr.storedErrors.Add(1)
		r.noteError(err)
	}
	return nil, time.Time{}, false
}

// recordStored records one durable record. Sender and Ordinal come from the body; a body that
// is not a load message of this pair in this run (or a recalled one, without a body) is Foreign.
func (r *runState) recordStored(pair [2]*lgConn, rec *qimv1.HistoryMessage, at time.Time) {
	r.ctr.stored.Add(1)
	e := history.Event{Kind: history.Stored, AtUs: at.UnixMicro(), Lane: history.Frame,
		Sender: contract.UserID(rec.GetSenderUserId()), MessageID: contract.MessageID(idOf(rec.GetMessageId())),
		Conversation: contract.ConversationID(idOf(rec.GetConversationId())), ConvSeq: rec.GetConversationSeq()}
	h, err := parseBody(rec.GetBody())
	if err == nil && h.run == r.runID && (int(h.sender) == pair[0].idx || int(h.sender) == pair[1].idx) {
		e.Sender, e.Ordinal = r.user(int(h.sender)), h.ordinal
	} else {
		e.Foreign = true
	}
	r.hist.Record(e)
}

// pullHistory sends one PULL_HISTORY on c's live link (waiting for one through a reconnect)
// and waits for its HISTORY_BATCH, which the read loop hands over like a MAILBOX_BATCH; both
// waits together are bounded by AckTimeout. Only readPair of c's pair uses c's stored slot,
// one request at a time.
func (c *lgConn) pullHistory(ctx context.Context, conv contract.ConversationID,
	anchor uint64) (*qimv1.HistoryBatch, time.Time, error) {
	tctx, cancel := context.WithTimeout(ctx, c.r.cfg.AckTimeout)
	defer cancel()
	fail := func(what string, err error) (*qimv1.HistoryBatch, time.Time, error) {
		return nil, time.Time{}, fmt.Errorf("loadgen: PULL_HISTORY of %s after seq %d by user %d %s: %w",
			conv, anchor, c.user, what, err)
	}
	l := c.waitLink(tctx, nil)
	if l == nil {
		return fail("found no live link", context.Cause(tctx))
	}
	cb := conv.Bytes()
	payload, err := proto.Marshal(&qimv1.PullHistory{ConversationId: cb[:], AnchorSeq: anchor, Direction: historyNewer})
	if err != nil {
		return fail("not encoded", err)
	}
	select {
	case <-c.stored: // an answer that raced the previous request's timeout
	default:
	}
	id := c.nextID.Add(1)
	c.storedID.Store(id)
	defer c.storedID.CompareAndSwap(id, 0)
	if err := l.w.Send(tctx, wire.Message{Opcode: contract.OpPullHistory, RequestID: id, Payload: payload}); err != nil {
		return fail("not sent", err)
	}
	var a pullAnswer
	select {
	case a = <-c.stored:
	case <-tctx.Done():
		return fail("unanswered", context.Cause(tctx))
	case <-l.closed:
		return fail("unanswered", errLinkLost)
	}
	if a.err != nil {
		return fail("answered", a.err)
	}
	var b qimv1.HistoryBatch
	if err := proto.Unmarshal(a.m.Payload, &b); err != nil {
		return fail("answered", fmt.Errorf("undecodable HISTORY_BATCH: %w", err))
	}
	if got := b.GetConversationId(); len(got) != 0 && !bytes.Equal(got, cb[:]) {
		return fail("answered", fmt.Errorf("HISTORY_BATCH for conversation %x", got))
	}
	return &b, a.at, nil
}

// sleepCtx waits d unless ctx ends first (false).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// errLinkLost is a request whose link was lost before its answer came.
var errLinkLost = errors.New("link lost")

// handStored gives a HISTORY_BATCH (or its ERROR) to the waiting history read; a stale answer
// is counted and dropped, like a stale MAILBOX_BATCH.
func (c *lgConn) handStored(a pullAnswer, id uint32) {
	if id == 0 || id != c.storedID.Load() {
		c.r.ctr.strayAnswers.Add(1)
		return
	}
	select {
	case c.stored <- a:
	default:
		c.r.ctr.strayAnswers.Add(1)
	}
}
