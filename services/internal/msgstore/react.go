package msgstore

// Reactions (ADR-0038): an aggregate per message, outside the message stream. The seed makes
// them a third delivery class, ephemeral_aggregate: they enter no mailbox, count as no unread,
// move no session row and wake no device; what is durable is the message's summary. Two hashes
// per conversation hold it (react.lua has the layout): the counts per message, and each user's
// own keys per message, so a history page reads both for all its messages with two HMGETs in
// one round trip whatever the page's size, and a REACT is one script call.
//
// Invariants: a count is the number of users whose own keys hold it (one script changes both);
// adding a held key or removing one not held changes nothing; a message holds at most
// contract.ReactionMaxKeys keys and a user at most contract.ReactionMaxPerUser of them; a value
// that does not parse fails the read (fail closed).
//
// Rejected: reactions as CONTROL messages of the conversation (what recall and edit are): every
// tap would take a conversation_seq, a mailbox entry per participant device and a place in the
// archive, for a count; the seed rules it out. Rejected too: one hash per message (a history page
// would be one command per message, most of them for nothing).

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
)

const (
	reactPrefix    = "qim:react:"
	reactUsrPrefix = "qim:reactusr:"
)

func (k convKeys) reactSum() string   { return reactPrefix + k.suffix }
func (k convKeys) reactUsers() string { return reactUsrPrefix + k.suffix }

// ErrReactionLimit: the message holds contract.ReactionMaxKeys keys already, or the user
// contract.ReactionMaxPerUser. Nothing was written.
var ErrReactionLimit = errors.New("msgstore: reaction limit reached")

// ReactionCount is one reaction of a message.
type ReactionCount struct {
	Key   string
	Count uint32
	Mine  bool // the reader (or reactor) holds it
}

// ReactRequest adds (or, with Remove, removes) User's reaction Key on the message at Target.
type ReactRequest struct {
	Tenant       contract.TenantID
	Conversation contract.ConversationID
	Target       uint64
	User         contract.UserID
	Key          string
	Remove       bool
	ExpireAtMs   int64 // the target's retention end (RetentionEnd); 0 never
}

// ReactResult is the target's reactions after a React.
type ReactResult struct {
	Changed bool
	Counts  []ReactionCount // Mine relative to the reactor
}

type reactArgs struct {
	Sum        string `key:"sum"`
	Users      string `key:"users"`
	Target     uint64 `arg:"target"`
	User       uint64 `arg:"user"`
	Key        string `arg:"key"`
	Remove     int64  `arg:"remove"`
	MaxKeys    int64  `arg:"max_keys"`
	MaxPerUser int64  `arg:"max_per_user"`
	ExpireAtMs int64  `arg:"expire_at_ms"`
}

type reactReply struct {
	Changed string `reply:"changed"`
	Value   string `reply:"value"`
	Mine    string `reply:"mine"`
}

// React applies one reaction change in one script call.
func (s *Store) React(ctx context.Context, r ReactRequest) (ReactResult, error) {
	if r.Target == 0 || r.User == 0 || r.Key == "" {
		return ReactResult{}, fmt.Errorf("%w: react needs a target, a user and a key", ErrInvalidArgument)
	}
	ck := newConvKeys(r.Tenant, r.Conversation)
	rm := int64(0)
	if r.Remove {
		rm = 1
	}
	rep, err := s.scripts.react.Do(ctx, s.rdb, &reactArgs{Sum: ck.reactSum(), Users: ck.reactUsers(), Target: r.Target,
		User: uint64(r.User), Key: r.Key, Remove: rm, MaxKeys: contract.ReactionMaxKeys,
		MaxPerUser: contract.ReactionMaxPerUser, ExpireAtMs: r.ExpireAtMs})
	if err != nil {
		if isReply(err) && strings.HasPrefix(err.Error(), "QIMLIMIT") {
			return ReactResult{}, fmt.Errorf("%w: %s", ErrReactionLimit, strings.TrimPrefix(err.Error(), "QIMLIMIT "))
		}
		if isReply(err) {
			return ReactResult{}, scriptError("react", CommitKey{Tenant: r.Tenant, Conversation: r.Conversation}, err)
		}
		return ReactResult{}, fmt.Errorf("msgstore: react: %w", err)
	}
	counts, ok := parseCounts(rep.Value, rep.Mine)
	if !ok {
		return ReactResult{}, fmt.Errorf("msgstore: react: %w", &CorruptError{Tenant: r.Tenant, Conversation: r.Conversation,
			Seq: r.Target, Reason: "reaction counts are not key\\x1fcount entries"})
	}
	return ReactResult{Changed: rep.Changed == "1", Counts: counts}, nil
}

// Reactions reads the reactions of the messages at seqs for reader: seq → counts, only for the
// messages that have any. Two HMGETs in one round trip.
func (s *Store) Reactions(ctx context.Context, tenant contract.TenantID, conv contract.ConversationID, reader contract.UserID,
	seqs []uint64) (map[uint64][]ReactionCount, error) {
	if len(seqs) == 0 {
		return nil, nil
	}
	ck := newConvKeys(tenant, conv)
	fields, mineFields := make([]string, len(seqs)), make([]string, len(seqs))
	for i, q := range seqs {
		fields[i] = strconv.FormatUint(q, 10)
		mineFields[i] = fields[i] + ":" + strconv.FormatUint(uint64(reader), 10)
	}
	var sums, mine *redis.SliceCmd
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		sums = p.HMGet(ctx, ck.reactSum(), fields...)
		mine = p.HMGet(ctx, ck.reactUsers(), mineFields...)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("msgstore: read reactions: %w", err)
	}
	if len(sums.Val()) != len(seqs) || len(mine.Val()) != len(seqs) {
		return nil, fmt.Errorf("msgstore: read reactions: HMGET answered %d and %d values for %d fields",
			len(sums.Val()), len(mine.Val()), len(seqs))
	}
	var out map[uint64][]ReactionCount
	for i, v := range sums.Val() {
		sv, ok := v.(string)
		if !ok {
			continue
		}
		mv, _ := mine.Val()[i].(string)
		counts, ok := parseCounts(sv, mv)
		if !ok {
			return nil, &CorruptError{Tenant: tenant, Conversation: conv, Seq: seqs[i], Reason: "reaction counts are not key\\x1fcount entries"}
		}
		if out == nil {
			out = make(map[uint64][]ReactionCount)
		}
		out[seqs[i]] = counts
	}
	return out, nil
}

// parseCounts parses a counts value ("key\x1fcount" entries joined by "\x1e") and marks the keys
// of mine (joined by "\x1e").
func parseCounts(v, mine string) ([]ReactionCount, bool) {
	if v == "" {
		return nil, true
	}
	held := strings.Split(mine, "\x1e")
	entries := strings.Split(v, "\x1e")
	out := make([]ReactionCount, 0, len(entries))
	for _, e := range entries {
		k, n, ok := strings.Cut(e, "\x1f")
		c, err := strconv.ParseUint(n, 10, 32)
		if !ok || k == "" || err != nil || c == 0 {
			return nil, false
		}
		out = append(out, ReactionCount{Key: k, Count: uint32(c), Mine: mine != "" && contains(held, k)})
	}
	return out, true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
