package sdk

import (
	"context"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/sdk/store"
)

// localStore is what the engine needs from the store; tests wrap *store.Store to inject faults.
type localStore interface {
	Cursor(ctx context.Context) (store.CursorState, error)
	Apply(ctx context.Context, b store.Batch) (store.Applied, error)
	ResolveAck(ctx context.Context, ack store.Ack) (store.Applied, bool, error)
	FailPending(ctx context.Context, cmid contract.ClientMessageID, code contract.ErrorCode, text string) (bool, error)
	QueuedAfter(ctx context.Context, after int64, limit int) ([]store.Pending, error)
	ResetForRebuild(ctx context.Context, reason string) (store.CursorState, error)
	Gaps(ctx context.Context) ([]store.Gap, error)
	MergeSessions(ctx context.Context, states []store.SessionState) (store.Merged, error)
	AckRead(ctx context.Context, conv contract.ConversationID, requested, stored contract.ConversationSeq) (store.Conversation, bool, error)
	UnsentReads(ctx context.Context, limit int) ([]store.ReadMark, error)
	QueuedGroupCreates(ctx context.Context, limit int) ([]store.GroupCreate, error)
	ResolveGroupCreate(ctx context.Context, crid contract.U128) (bool, error)
	FailGroupCreate(ctx context.Context, crid contract.U128, code contract.ErrorCode, text string) (bool, error)
}

// testHooks change behaviour for tests only; production leaves them zero.
type testHooks struct {
	noAutoPull bool // store pushes without triggering a pull, no pull on PONG (push-never-moves-the-cursor tests)
}

// storeCtx bounds nothing: store calls are local, and cancelling one mid-commit would only turn
// a durable write into a rollback the loop must then handle as a failure.
var storeCtx = context.Background()
