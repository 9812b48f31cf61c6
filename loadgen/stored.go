package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
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

// storedAttempts bounds the tries for one page, alternating between the conversation's two
// connections: enough to ride out one lost link, few enough that a conversation the server
// cannot read ends the run instead of stalling it.
const storedAttempts = 4

// readStored reads, after the settle wait, each pair's (group mode: each group's) conversation
// from its durable history (PULL_HISTORY) and records one Stored event per record: the
// checker's view of what the system kept, independent of what any mailbox delivered.
// Conversations are read concurrently, at most DialConcurrency at a time, each over two of its
// own connections.
//
// A page that fails (ERROR, no answer, lost link) is a run error and is tried again on the
// conversation's other connection; a conversation whose history could not be read to the end is
// counted (stored_incomplete), because a checker must not mistake a partial read for loss.
func (r *runState) readStored(ctx context.Context, conns []*lgConn) {
	var g errgroup.Group
	g.SetLimit(r.cfg.DialConcurrency)
	for _, sc := range r.storedConvs(conns) {
		g.Go(func() error {
			if !r.readConv(ctx, sc) {
				atomic.AddInt64(&r.live.StoredIncomplete, 1)
			}
			return nil
		})
	}
	_ = g.Wait()
}

// storedConv is one conversation to read back: its id, the two connections that take turns
// reading it, and, for a group, the group (whose members' bodies are this conversation's).
type storedConv struct {
	conv  contract.ConversationID
	conns [2]*lgConn
	group *lgGroup
}

// owns reports whether connection idx sends into the conversation.
func (sc *storedConv) owns(idx int) bool {
	if sc.group != nil {
		return sc.group.member(idx) != nil
	}
	return idx == sc.conns[0].idx || idx == sc.conns[1].idx
}

// storedConvs lists the run's conversations. A pair whose every send ended unknown named no
// conversation; its id is derived as the server does, because an unknown send may still have
// committed. A group's conversation is known from GROUP_CREATED.
func (r *runState) storedConvs(conns []*lgConn) []storedConv {
	var out []storedConv
	for _, g := range r.groups {
		out = append(out, storedConv{conv: g.conv, conns: [2]*lgConn{g.members[0], g.members[len(g.members)-1]}, group: g})
	}
	for i := 0; r.cfg.Mode == ModeDirect && i+1 < len(conns); i += 2 {
		a, b := conns[i], conns[i+1]
		conv, ok := a.role.conversation().conversation()
		if !ok {
			conv = contract.DirectConversationID(r.cfg.Tenant, a.user, b.user)
		}
		out = append(out, storedConv{conv: conv, conns: [2]*lgConn{a, b}})
	}
	return out
}

// readConv pages through one conversation NEWER from seq 0 until an empty page (has_more is not
// trusted to end the read: a short page is not proof there is nothing after it); an empty group
// page that says has_more moves on to its next_anchor_seq.
func (r *runState) readConv(ctx context.Context, sc storedConv) bool {
	var anchor uint64
	for {
		b, at, ok := r.storedPage(ctx, sc.conns, sc.conv, anchor)
		if !ok {
			return false
		}
		recs := b.GetRecords()
		if len(recs) == 0 {
			if next := b.GetNextAnchorSeq(); b.GetHasMore() && next > anchor {
				anchor = next // a group page that skipped records outside the reader's intervals
				continue
			}
			return true
		}
		for _, rec := range recs {
			r.recordStored(&sc, rec, at)
		}
		last := recs[len(recs)-1].GetConversationSeq()
		if last <= anchor {
			r.noteError(fmt.Errorf("loadgen: PULL_HISTORY of %s did not advance past seq %d", sc.conv, anchor))
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
		atomic.AddInt64(&r.live.StoredErrors, 1)
		r.noteError(err)
	}
	return nil, time.Time{}, false
}

// recordStored records one durable record. Sender and Ordinal come from the body; a body that
// is not a load message of this conversation in this run (a group's CONTROL message, a recalled
// one without a body) is Foreign.
func (r *runState) recordStored(sc *storedConv, rec *qimv1.HistoryMessage, at time.Time) {
	atomic.AddInt64(&r.live.Stored, 1)
	e := history.Event{Kind: history.Stored, AtUs: at.UnixMicro(), Lane: history.Frame,
		Sender: contract.UserID(rec.GetSenderUserId()), MessageID: contract.MessageID(idOf(rec.GetMessageId())),
		Conversation: contract.ConversationID(idOf(rec.GetConversationId())), ConvSeq: rec.GetConversationSeq()}
	h, err := parseBody(rec.GetBody())
	if err == nil && h.run == r.runID && sc.owns(int(h.sender)) {
		e.Sender, e.Ordinal = r.user(int(h.sender)), h.ordinal
	} else {
		e.Foreign = true
	}
	r.hist.Record(e)
}

// pullHistory sends one PULL_HISTORY on c's live link (waiting for one through a reconnect)
// and waits for its HISTORY_BATCH, which the read loop hands over like a MAILBOX_BATCH; both
// waits together are bounded by AckTimeout. Only readConv of c's conversation uses c's stored
// slot, one request at a time.
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
		atomic.AddInt64(&c.r.live.StrayAnswers, 1)
		return
	}
	select {
	case c.stored <- a:
	default:
		atomic.AddInt64(&c.r.live.StrayAnswers, 1)
	}
}
