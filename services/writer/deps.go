package writer

import (
	"context"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/msgstore"
)

// The writer's dependencies, declared where they are consumed. Production wires the Redis
// MessageStore, the franz-go Outbox producer and the lease-backed HLC issuer; tests wire the same
// real implementations against the real stack.

type commitStore interface {
	ReserveAndRecord(ctx context.Context, intents []msgstore.Intent) ([]msgstore.Commit, []error)
	Reserve(ctx context.Context, in msgstore.Intent) (msgstore.Commit, error)
	Record(ctx context.Context, k msgstore.CommitKey) (msgstore.Commit, error)
	MarkCommitted(ctx context.Context, reqs []msgstore.MarkRequest) []error
	LoadCommit(ctx context.Context, k msgstore.CommitKey) (msgstore.Commit, bool, error)
	PendingCommits(ctx context.Context, reservedBeforeMs int64, limit int) ([]msgstore.CommitKey, error)
	HistoryPage(ctx context.Context, q msgstore.HistoryQuery) (msgstore.HistoryPage, error)
	groupStore
}

// groupStore is the membership part of the MessageStore.
type groupStore interface {
	LoadGroup(ctx context.Context, tenant contract.TenantID, conv contract.ConversationID) (*msgstore.GroupState, bool, error)
	MemberIntervals(ctx context.Context, tenant contract.TenantID, user contract.UserID, convs []contract.ConversationID) ([]contract.Membership, error)
	ChangeMembership(ctx context.Context, ch msgstore.GroupChange) (msgstore.Commit, error)
}

type outboxProducer interface {
	// Produce enqueues one record; done runs once, on the producer's goroutine, after the broker
	// acknowledged it (acks=all) or it failed.
	Produce(ctx context.Context, key, value []byte, done func(offset int64, err error))
	Ready(ctx context.Context) error
	// MaxRecordBytes is the largest key+value Produce accepts; a send whose Outbox record could
	// exceed it is refused before it is reserved (outboxBound).
	MaxRecordBytes() int
}

type idIssuer interface {
	Next() (contract.MessageID, error)
}
