package sdk

// History: PULL_HISTORY for the app (History) and for the REBUILD backfill. Both store what they
// receive (deduplicated by message_id; a copy with a body fills a message the mailbox did not
// inline), and both resolve own pending sends whose client_message_id appears: the history copy
// is as much a proof of commit as the mailbox copy.

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/sdk/store"
	"github.com/qim-dev/qim/wire"
)

// backfillPage is the PULL_HISTORY limit of the REBUILD backfill.
const backfillPage = 100

// historyCmd is an app's History call handed to the connection goroutine.
type historyCmd struct {
	conv   contract.ConversationID
	anchor contract.ConversationSeq
	dir    store.Direction
	limit  int
	reply  chan historyResult // capacity 1: the loop never blocks on a caller that gave up
}

type historyResult struct {
	page HistoryPage
	err  error
}

// HistoryPage is one page of a conversation, ascending by seq in both directions.
type HistoryPage struct {
	Messages []Message
	HasMore  bool
	// FromServer is false when the client was offline and the page comes from the local store
	// only (it may lack messages the device never received).
	FromServer bool
}

// backfillState walks the conversations a REBUILD left incomplete, one PULL_HISTORY at a time.
type backfillState struct {
	active bool
	queue  []store.Gap // head = the conversation being fetched, FromSeq = the next anchor
}

func (e *engine) startHistory(cmd *historyCmd, now time.Time) {
	if !e.online || e.sink == nil || e.end != nil {
		cmd.reply <- historyResult{err: ErrOffline}
		return
	}
	conv := cmd.conv.Bytes()
	id := e.request(reqHistory, contract.OpPullHistory, &qimv1.PullHistory{ConversationId: conv[:],
		AnchorSeq: uint64(cmd.anchor), Direction: uint32(cmd.dir), Limit: uint32(cmd.limit)}, now, &request{hist: cmd})
	if id == 0 {
		cmd.reply <- historyResult{err: ErrOffline}
	}
}

func (e *engine) nextBackfill(now time.Time) {
	if len(e.backfill.queue) == 0 {
		e.backfill.active = false
		e.ready(now)
		return
	}
	g := e.backfill.queue[0]
	conv := g.Conversation.Bytes()
	e.request(reqBackfill, contract.OpPullHistory, &qimv1.PullHistory{ConversationId: conv[:],
		AnchorSeq: uint64(g.FromSeq), Direction: uint32(store.Newer), Limit: backfillPage}, now, nil)
}

func (e *engine) onHistory(m wire.Message, now time.Time) {
	r := e.take(m.RequestID, reqHistory, reqBackfill)
	if r == nil {
		e.log.Debug("sdk: HISTORY_BATCH for no request")
		return
	}
	var b qimv1.HistoryBatch
	err := proto.Unmarshal(m.Payload, &b)
	var msgs []store.Message
	if err == nil {
		msgs, err = historyMessages(b.GetRecords())
	} else {
		err = fmt.Errorf("%w: HISTORY_BATCH: %v", ErrProtocol, err)
	}
	if r.kind == reqHistory {
		e.answerHistory(r.hist, msgs, b.GetHasMore(), err)
		return
	}
	if err != nil {
		e.fail(err)
		return
	}
	g := e.backfill.queue[0]
	done := !b.GetHasMore() || len(msgs) == 0
	if len(msgs) > 0 {
		g.FromSeq = max(g.FromSeq, msgs[len(msgs)-1].Seq)
	}
	a, err := e.st.Apply(storeCtx, store.Batch{Source: store.SourceHistory, Messages: msgs,
		Gap: &store.GapUpdate{Conversation: g.Conversation, FromSeq: g.FromSeq, Done: done}})
	if err != nil {
		e.fail(fmt.Errorf("sdk: store backfill page: %w", err))
		return
	}
	e.committed(a, msgs, store.SourceHistory, true)
	e.sync.applied += len(a.Added) + len(a.Resolved)
	e.emit(SyncProgress{Phase: SyncBackfill, Applied: e.sync.applied, Cursor: e.cursor})
	if done {
		e.backfill.queue = e.backfill.queue[1:]
	} else {
		e.backfill.queue[0] = g
	}
	e.nextBackfill(now)
}

// answerHistory stores an app's page and returns it. The page's messages are not announced as
// MessagesAdded (the app asked for them); resolved sends and conversation changes are.
func (e *engine) answerHistory(cmd *historyCmd, msgs []store.Message, hasMore bool, err error) {
	if err != nil {
		cmd.reply <- historyResult{err: err}
		return
	}
	a, err := e.st.Apply(storeCtx, store.Batch{Source: store.SourceHistory, Messages: msgs})
	if err != nil {
		cmd.reply <- historyResult{err: fmt.Errorf("sdk: store history page: %w", err)}
		return
	}
	e.committed(a, msgs, store.SourceHistory, false)
	cmd.reply <- historyResult{page: HistoryPage{Messages: msgs, HasMore: hasMore, FromServer: true}}
}

// onBackfillError leaves the conversation marked incomplete and moves on; the next connection
// tries it again. (A group the user was never a member of, for one, is refused NOT_MEMBER.)
func (e *engine) onBackfillError(se *ServerError, now time.Time) {
	if len(e.backfill.queue) > 0 {
		e.log.Warn("sdk: history backfill refused; conversation stays incomplete", "code", se.Code.String())
		e.backfill.queue = e.backfill.queue[1:]
	}
	e.nextBackfill(now)
}
