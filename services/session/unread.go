package session

// Session unread: why it is computed this way.
//
// Unread has exactly one definition, shared by server and SDK:
//
//	unread = |{m : m.seq > read_conversation_seq ∧ m.sender ≠ self ∧ m.type ≠ CONTROL ∧ m not recalled/deleted
//	              ∧ m visible to self}|
//
// computed on read from the canonical history records, never kept as a counter and never
// computed as latest − read. conversation_seq has legal holes (reserved but never recorded seqs,
// moderation deletes, visibility trims): subtraction counts every hole as an unread message the
// user can never clear, and it counts the user's own messages too — after a device change the
// badge would equal the number of messages the user sent. The two inputs are the records and the
// user-level watermark; both are read fresh for every row built here. Visibility is whole for a
// direct conversation and the user's membership intervals for a group (visibility.go).
//
// The cost is bounded: the count is exact while latest − read ≤ contract.UnreadExactWindow (200,
// expressed below without subtraction as read + window ≥ latest; for a group, on the visible
// bounds top and floor of visibility.go), reading at most that many
// records; beyond it the value is saturated at the window with unread_exact = false (the client
// renders "200+"). Any record in the window that is missing or does not decode fails the whole
// page (msgstore.Tails): a zero would look like "nothing unread", which is a lie, not a degradation.
// Unread is not maintained on the write path: pushing unread in SESSION_DELTA was measured at
// +30,000 store round trips per second at 15k msg/s, so it is computed where it is read
// (docs/adr/0008-unread-computed-on-read.md).

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/msgstore"
)

// Record flag bits (records.proto MessageRecord.flags).
const (
	flagRecalled = contract.FlagRecalled
	flagDeleted  = contract.FlagDeleted
)

// summary is the content of one session-list row (everything except its position).
type summary struct {
	latestSeq uint64 // conversation_seq of the newest visible record (0: none)
	read      uint64
	unread    uint32
	exact     bool
	head      *qimv1.HistoryMessage // nil: no record can head the row
	peer      contract.UserID       // DIRECT: the other participant (0: unknown)
	hidden    bool                  // GROUP of a user who was never a member: the row is not served
}

// window is the bounded part of history a row is computed from.
type window struct {
	self   contract.UserID
	conv   contract.ConversationID
	latest uint64 // the conversation's seq counter
	read   uint64
	member contract.Membership         // GROUP: the user's intervals (nil: never a member); unused otherwise
	recs   []*internalv1.MessageRecord // newest first: every record in (floor, top] when exact, plus head candidates
}

// exactWindow reports whether unread can be counted exactly: latest − read ≤ window, written
// without subtraction so the bound cannot be mistaken for a count.
func exactWindow(latest, read uint64) bool {
	return read+contract.UnreadExactWindow >= latest
}

// countUnread applies the definition to the records of w (see the file comment).
func countUnread(w window) (uint32, bool) {
	if !exactWindow(w.top(), w.floor()) {
		return contract.UnreadExactWindow, false
	}
	var n uint32
	for _, r := range w.recs {
		if seq := r.GetConversationSeq(); seq <= w.read || !w.visible(seq) {
			continue
		}
		if contract.UserID(r.GetSenderUserId()) == w.self || !contract.MessageType(r.GetMessageType()).CountsAsUnread() ||
			contract.Gone(r.GetFlags()) {
			continue
		}
		n++
	}
	return n, true
}

// summarize builds a row's content from its window: only visible records set its latest seq
// and head, and a former member's read watermark is shown no higher than its leave point.
func summarize(w window, headBodyMax int) *summary {
	s := &summary{read: w.read, hidden: w.hidden()}
	if w.isGroup() {
		s.read = min(w.read, w.top())
	}
	s.unread, s.exact = countUnread(w)
	for _, r := range w.recs {
		if !w.visible(r.GetConversationSeq()) {
			continue
		}
		if s.latestSeq == 0 {
			s.latestSeq = r.GetConversationSeq()
		}
		if w.conv.Kind() == contract.KindDirect && s.peer == 0 {
			s.peer = peerOf(r, w.self)
		}
		if s.head == nil && contract.MessageType(r.GetMessageType()) != contract.MessageControl {
			s.head = headOf(r, w.self, headBodyMax)
		}
	}
	return s
}

// peerOf is the other participant of a direct conversation (self for notes to self).
func peerOf(r *internalv1.MessageRecord, self contract.UserID) contract.UserID {
	if contract.UserID(r.GetSenderUserId()) == self {
		return contract.UserID(r.GetDirectPeerUserId())
	}
	return contract.UserID(r.GetSenderUserId())
}

// headOf is the wire view of a record heading a row. Recalled and deleted bodies are never
// served; a body above headBodyMax is left out (absent), to be fetched with PULL_HISTORY.
func headOf(r *internalv1.MessageRecord, self contract.UserID, headBodyMax int) *qimv1.HistoryMessage {
	m := &qimv1.HistoryMessage{
		MessageId: r.GetMessageId(), ConversationId: r.GetConversationId(), ConversationSeq: r.GetConversationSeq(),
		SenderUserId: r.GetSenderUserId(), MessageType: r.GetMessageType(), CustomType: r.GetCustomType(),
		SentAtMs: r.GetCreatedAtMs(), Mentions: r.GetMentions(), Flags: r.GetFlags(),
	}
	if !contract.Gone(r.GetFlags()) && len(r.GetBody()) <= headBodyMax {
		m.Body = r.GetBody()
		if m.Body == nil {
			m.Body = []byte{} // present-but-empty is a genuinely empty body
		}
	}
	if contract.UserID(r.GetSenderUserId()) == self {
		m.ClientMessageId = r.GetClientMessageId()
	}
	return m
}

// historyReader is the writer's hot history (msgstore.Store).
type historyReader interface {
	LatestSeqs(ctx context.Context, tenant contract.TenantID, convs []contract.ConversationID) ([]uint64, error)
	Tails(ctx context.Context, tenant contract.TenantID, qs []msgstore.TailQuery) ([]msgstore.Tail, error)
	MemberIntervals(ctx context.Context, tenant contract.TenantID, user contract.UserID,
		convs []contract.ConversationID) ([]contract.Membership, error)
	LoadGroup(ctx context.Context, tenant contract.TenantID, conv contract.ConversationID) (*msgstore.GroupState, bool, error)
}

// redisSource is the production source: lists and watermarks from the session keys, rows from
// the canonical history. Round trips per content batch: HMGET watermarks, GET counters, HGET
// group intervals (only when the batch holds a group), bucket indexes, MGET records (four or
// five, whatever the number of rows).
type redisSource struct {
	st          *store
	hist        historyReader
	headBodyMax int
	missing     prometheus.Counter // group rows hidden because the user has no intervals (invariant)
}

func (r redisSource) list(ctx context.Context, k userKey) ([]row, error) { return r.st.listAll(ctx, k) }

func (r redisSource) scores(ctx context.Context, k userKey, convs []contract.ConversationID) ([]row, []bool, error) {
	return r.st.scores(ctx, k, convs)
}

func (r redisSource) summaries(ctx context.Context, k userKey, convs []contract.ConversationID) ([]*summary, error) {
	reads, err := r.st.readSeqs(ctx, k, convs)
	if err != nil {
		return nil, err
	}
	ws, err := r.windows(ctx, k, convs, reads)
	if err != nil {
		return nil, err
	}
	out := make([]*summary, len(ws))
	for i, w := range ws {
		if out[i] = summarize(w, r.headBodyMax); out[i].hidden {
			r.missing.Inc()
		}
	}
	return out, nil
}

// windows reads, for each conversation, its counter, the user's intervals when it is a group
// (after the counter: see visibility.go) and the records the definition needs.
func (r redisSource) windows(ctx context.Context, k userKey, convs []contract.ConversationID, reads []uint64) ([]window, error) {
	latest, err := r.hist.LatestSeqs(ctx, k.tenant, convs)
	if err != nil {
		return nil, fmt.Errorf("session: history counters: %w", err)
	}
	members, err := r.memberships(ctx, k, convs)
	if err != nil {
		return nil, err
	}
	ws := make([]window, len(convs))
	qs := make([]msgstore.TailQuery, len(convs))
	for i, c := range convs {
		ws[i] = window{self: k.user, conv: c, latest: latest[i], read: reads[i], member: members[i]}
		qs[i] = ws[i].query()
	}
	tails, err := r.hist.Tails(ctx, k.tenant, qs)
	if err != nil {
		return nil, fmt.Errorf("session: history: %w", err)
	}
	for i, t := range tails {
		ws[i].recs = make([]*internalv1.MessageRecord, len(t.Records))
		for j, b := range t.Records {
			rec := &internalv1.MessageRecord{}
			if err := proto.Unmarshal(b, rec); err != nil { // msgstore verified it; belt and braces
				return nil, fmt.Errorf("%w: history record of a session row does not decode", ErrCorruptState)
			}
			ws[i].recs[j] = rec
		}
	}
	return ws, nil
}
