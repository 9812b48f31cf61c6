package msgstore

import (
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
)

// Package defaults. They are this package's tuning, not contract constants.
const (
	// DefaultHistoryLimit is the page size when HistoryQuery.Limit is 0.
	DefaultHistoryLimit = 50
	// MaxHistoryLimit caps HistoryQuery.Limit: a page of 200 records already needs one MGET of
	// up to contract.HistoryPageMaxBytes; larger limits only move the byte cap.
	MaxHistoryLimit = 200
	// DefaultMaxEmptyBucketScan is how many consecutive empty seq buckets one page read scans
	// before it returns HasMore with an anchor at the bucket boundary (see WithMaxEmptyBucketScan).
	DefaultMaxEmptyBucketScan = 16
	// bucketsPerRoundTrip is how many bucket index reads one history round trip pipelines.
	bucketsPerRoundTrip = 4
	// maxRecordBytes bounds the stored record, like a frame payload: a record is never larger
	// than the wire message it came from by more than its fixed metadata.
	maxRecordBytes = contract.MaxFramePayload
)

// Store is the Redis MessageStore of the ConversationWriter: commit facts, conversation_seq
// allocation and the hot history of the conversations whose commit buckets live on one Redis
// instance.
//
// Invariants: one (tenant, sender, client_message_id) maps to one (message_id, seq) for the
// idempotency window; a seq is consumed only by a valid request; every state change is one Lua
// script that validates before writing and returns the original result when retried; a history
// page is complete or an error.
//
// How it works: each mutating call is one EVALSHA of an embedded script (hashed once per process),
// batched calls share one pipeline (one round trip for a whole batch), and history reads walk the
// per-bucket indexes a few buckets per round trip, then fetch records with one MGET.
//
// Rejected: MULTI/EXEC transactions with WATCH for the commit (optimistic retries under contention
// on a hot conversation's counter, and several round trips per message), and one goroutine per
// message (the caller batches; a pipeline is cheaper than concurrency against single-threaded
// Redis).
type Store struct {
	rdb          *redis.Client
	maxEmptyScan int
	scripts      scriptSet
	archive      Archive // nil: no archive tier (reads below a hot floor fail with ErrNoArchive)
}

// Option configures a Store.
type Option func(*Store)

// WithMaxEmptyBucketScan sets how many consecutive empty seq buckets (1024 seqs each) one history
// page read may scan. Default DefaultMaxEmptyBucketScan (16). Higher values answer sparse
// conversations in fewer client round trips but make one request cost more Redis reads; a page
// that stops at the bound returns HasMore=true, so correctness never depends on it. n < 1 panics
// at construction (a wiring bug, never a runtime condition).
func WithMaxEmptyBucketScan(n int) Option {
	if n < 1 {
		panic(fmt.Sprintf("msgstore: WithMaxEmptyBucketScan(%d): must be >= 1", n))
	}
	return func(s *Store) { s.maxEmptyScan = n }
}

// New returns a Store on rdb, which must be a standalone Redis ≥ 7.0 that passed
// CheckCommitFactsDurability (New does no I/O; run the check at startup). The scripts' SHAs are
// computed once per process; they are loaded into Redis on the first NOSCRIPT reply.
func New(rdb *redis.Client, opts ...Option) *Store {
	if rdb == nil {
		panic("msgstore: New: nil redis client")
	}
	s := &Store{rdb: rdb, maxEmptyScan: DefaultMaxEmptyBucketScan, scripts: scripts}
	for _, o := range opts {
		o(s)
	}
	return s
}

// CommitKey names one commit: the idempotency key (Tenant, Sender, ClientMessageID) plus the
// Conversation, whose commit bucket chooses the Redis hash tag (and so the instance).
type CommitKey struct {
	Tenant          contract.TenantID
	Sender          contract.UserID
	ClientMessageID contract.ClientMessageID
	Conversation    contract.ConversationID
}

// Intent is one send to reserve. Identity is the caller's 36-byte digest of everything that makes
// two requests "the same message" (compared byte for byte, never interpreted here). Record is the
// canonical MessageRecord protobuf WITHOUT field 4; the store appends conversation_seq.
type Intent struct {
	Key       CommitKey
	Identity  [36]byte
	MessageID contract.MessageID
	Record    []byte
	NowMs     int64
}

// State is a stored commit state. OUTBOXED is not stored: it is the writer's window between the
// Outbox produce ack and MarkCommitted.
type State byte

const (
	StateReserved  State = 'R' // intent stored with the complete record; no history yet, seq final only once recorded
	StateRecorded  State = 'D' // history record and index written
	StateCommitted State = 'C' // Outbox acknowledged; only ACK-replay fields remain
)

func (s State) String() string {
	switch s {
	case StateReserved:
		return "RESERVED"
	case StateRecorded:
		return "RECORDED"
	case StateCommitted:
		return "COMMITTED"
	}
	return fmt.Sprintf("State(%#02x)", byte(s))
}

// Commit is a stored commit as a call found or left it.
type Commit struct {
	Key       CommitKey
	Fresh     bool // this call created it (false: an earlier request did)
	State     State
	Identity  [36]byte
	MessageID contract.MessageID
	Seq       contract.ConversationSeq
	// Record is the complete record (with conversation_seq); nil once committed.
	Record        []byte
	ReservedAtMs  int64 // 0 once committed
	CommittedAtMs int64 // 0 until committed
}

// MarkRequest marks one recorded commit COMMITTED at CommittedAtMs. The key then expires at
// CommittedAtMs + contract.IdempotencyWindow (absolute, so a caller-supplied clock decides it).
type MarkRequest struct {
	Key           CommitKey
	CommittedAtMs int64
	// Amend, on the commit of an amendment CONTROL message, is merged into the conversation's
	// amendment index before the commit is marked (amend.go): never COMMITTED unindexed.
	Amend *Amendment
}
