package msgstore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
)

// reserveCall builds the call of of reserve_and_record.lua and reserve.lua; positions are
// documented in those files. Record must not contain field 4: the script appends it.
func reserveCall(sc *script, in Intent) call {
	tag := tagOf(in.Key.Tenant, in.Key.Conversation)
	ck := convKeysTagged(in.Key.Tenant, in.Key.Conversation, tag)
	mid := in.MessageID.Bytes()
	cid := in.Key.Conversation.Bytes()
	return call{
		Script: sc,
		Keys:   []string{commitKeyTagged(in.Key, tag), ck.seq, pendingKey, ownerKey(in.Key)},
		Args: []any{in.Identity[:], mid[:], cid[:], in.Record, in.NowMs,
			ck.hrec, ck.hidx, contract.MessageSeqBucketWidth, maxRecordBytes},
	}
}

// validateIntent rejects what the scripts would reject, without a round trip. The scripts check
// again (they are the last line for any caller); either way nothing is written.
func validateIntent(in Intent) error {
	switch {
	case contract.U128(in.Key.ClientMessageID).IsZero():
		return fmt.Errorf("%w: zero client_message_id", ErrInvalidArgument)
	case contract.U128(in.Key.Conversation).IsZero():
		return fmt.Errorf("%w: zero conversation_id", ErrInvalidArgument)
	case in.MessageID.IsZero():
		return fmt.Errorf("%w: zero message_id", ErrInvalidArgument)
	case len(in.Record) == 0 || len(in.Record) > maxRecordBytes:
		return fmt.Errorf("%w: record of %d bytes, want 1..%d", ErrInvalidArgument, len(in.Record), maxRecordBytes)
	case in.NowMs <= 0:
		return fmt.Errorf("%w: now_ms %d", ErrInvalidArgument, in.NowMs)
	}
	return nil
}

// ReserveAndRecord runs the fused commit step (RESERVED and RECORDED in one script) for a batch of
// intents in ONE pipeline. Results and errors are per item (len(intents) each): an item may be
// fresh (Fresh=true, State D), an existing commit of the same request (Fresh=false, any state: the
// caller resumes R/D or replays the ACK for C), ErrIdentityConflict, ErrInvalidArgument,
// ErrSeqExhausted or ErrCorrupt. Redis runs the pipeline in order, so fresh intents of one
// conversation get increasing seqs in slice order. A transport error sets the same error on every
// item; the outcome is then unknown and a retry of the batch is safe (every script is idempotent).
func (s *Store) ReserveAndRecord(ctx context.Context, intents []Intent) ([]Commit, []error) {
	return s.reserveBatch(ctx, s.scripts.reserveAndRecord, "reserve_and_record", intents)
}

// Reserve is the two-step path's first step: it stores the intent in state R (no history), so a
// failpoint can kill the process with a RESERVED commit on record. Same results as
// ReserveAndRecord for one intent.
func (s *Store) Reserve(ctx context.Context, in Intent) (Commit, error) {
	out, errs := s.reserveBatch(ctx, s.scripts.reserve, "reserve", []Intent{in})
	return out[0], errs[0]
}

func (s *Store) reserveBatch(ctx context.Context, sc *script, op string, intents []Intent) ([]Commit, []error) {
	out := make([]Commit, len(intents))
	errs := make([]error, len(intents))
	calls := make([]call, 0, len(intents))
	idx := make([]int, 0, len(intents))
	for i, in := range intents {
		if err := validateIntent(in); err != nil {
			errs[i] = fmt.Errorf("msgstore: %s: %w", op, err)
			continue
		}
		calls = append(calls, reserveCall(sc, in))
		idx = append(idx, i)
	}
	if len(calls) == 0 {
		return out, errs
	}
	cmds, err := runCalls(ctx, s.rdb, calls)
	if err != nil {
		for _, i := range idx {
			errs[i] = fmt.Errorf("msgstore: %s: %w", op, err)
		}
		return out, errs
	}
	for j, i := range idx {
		out[i], errs[i] = commitResult(op, intents[i].Key, cmds[j])
	}
	return out, errs
}

// Record moves a RESERVED commit to RECORDED (writes the history record and index from the stored
// record). On RECORDED or COMMITTED it is a no-op returning the current commit.
func (s *Store) Record(ctx context.Context, k CommitKey) (Commit, error) {
	ck := newConvKeys(k.Tenant, k.Conversation)
	cid := k.Conversation.Bytes()
	c := call{Script: s.scripts.record, Keys: []string{commitKey(k)},
		Args: []any{cid[:], ck.hrec, ck.hidx, contract.MessageSeqBucketWidth}}
	cmds, err := runCalls(ctx, s.rdb, []call{c})
	if err != nil {
		return Commit{}, fmt.Errorf("msgstore: record: %w", err)
	}
	return commitResult("record", k, cmds[0])
}

// MarkCommitted marks recorded commits COMMITTED in ONE pipeline; errors are per request
// (ErrNotRecorded for a RESERVED commit, ErrNotFound for a missing one). A committed hash keeps
// only the ACK-replay fields and expires at CommittedAtMs + contract.IdempotencyWindow; after that
// the key is forgotten and the same client_message_id creates a new message (the window is the
// contract). Marking twice is a no-op that keeps the first committed_at.
func (s *Store) MarkCommitted(ctx context.Context, reqs []MarkRequest) []error {
	errs := make([]error, len(reqs))
	calls := make([]call, 0, len(reqs))
	idx := make([]int, 0, len(reqs))
	window := contract.IdempotencyWindow.Milliseconds()
	for i, r := range reqs {
		if r.CommittedAtMs <= 0 {
			errs[i] = fmt.Errorf("msgstore: mark_committed: %w: committed_at_ms %d", ErrInvalidArgument, r.CommittedAtMs)
			continue
		}
		calls = append(calls, call{Script: s.scripts.markCommitted, Keys: []string{commitKey(r.Key), pendingKey, ownerKey(r.Key)},
			Args: []any{r.CommittedAtMs, window}})
		idx = append(idx, i)
	}
	if len(calls) == 0 {
		return errs
	}
	cmds, err := runCalls(ctx, s.rdb, calls)
	for j, i := range idx {
		switch {
		case err != nil:
			errs[i] = fmt.Errorf("msgstore: mark_committed: %w", err)
		case cmds[j].Err() != nil:
			errs[i] = scriptError("mark_committed", reqs[i].Key, cmds[j].Err())
		}
	}
	return errs
}

// LoadCommit reads the commit under k. found is false when there is none (never reserved, or
// forgotten after the idempotency window). Key.Conversation of the result is the stored one.
func (s *Store) LoadCommit(ctx context.Context, k CommitKey) (Commit, bool, error) {
	vals, err := s.rdb.HMGet(ctx, commitKey(k), commitFields...).Result()
	if err != nil {
		return Commit{}, false, fmt.Errorf("msgstore: load commit: %w", err)
	}
	if vals[0] == nil {
		return Commit{}, false, nil
	}
	f := make([]string, len(vals))
	for i, v := range vals {
		if sv, ok := v.(string); ok {
			f[i] = sv
		}
	}
	c, err := decodeCommit(k, f)
	if err != nil {
		return Commit{}, false, fmt.Errorf("msgstore: load commit: %w", err)
	}
	return c, true, nil
}

// commitFields is the field order of a commit reply after its kind (see lua/prelude.lua).
var commitFields = []string{"st", "mid", "seq", "rec", "rat", "cat", "cid", "idn"}

// commitResult turns a reserve/record reply {kind, st, mid, seq, rec, rat, cat, cid, idn} into a
// Commit, an IdentityConflictError or the script's mapped error.
func commitResult(op string, k CommitKey, cmd *redis.Cmd) (Commit, error) {
	if err := cmd.Err(); err != nil {
		return Commit{}, scriptError(op, k, err)
	}
	f, err := cmd.StringSlice()
	if err != nil || len(f) != 1+len(commitFields) {
		return Commit{}, fmt.Errorf("msgstore: %s: unexpected reply shape: %w",
			op, &CorruptError{Tenant: k.Tenant, Conversation: k.Conversation, Reason: "script reply"})
	}
	c, err := decodeCommit(k, f[1:])
	if err != nil {
		return Commit{}, fmt.Errorf("msgstore: %s: %w", op, err)
	}
	switch f[0] {
	case "F":
		c.Fresh = true
	case "E":
	case "X":
		return Commit{}, fmt.Errorf("msgstore: %s: %w", op,
			&IdentityConflictError{Key: c.Key, State: c.State, MessageID: c.MessageID, Seq: c.Seq})
	default:
		return Commit{}, fmt.Errorf("msgstore: %s: reply kind %q: %w", op, f[0], ErrCorrupt)
	}
	return c, nil
}

// decodeCommit parses the stored fields in commitFields order. Record is nil when absent.
func decodeCommit(k CommitKey, f []string) (Commit, error) {
	bad := func(what string) error {
		return &CorruptError{Tenant: k.Tenant, Conversation: k.Conversation, Reason: "commit hash: " + what}
	}
	c := Commit{Key: k, State: State(0)}
	if len(f[0]) != 1 {
		return Commit{}, bad("state")
	}
	c.State = State(f[0][0])
	if c.State != StateReserved && c.State != StateRecorded && c.State != StateCommitted {
		return Commit{}, bad("state")
	}
	mid, err := contract.U128FromBytes([]byte(f[1]))
	if err != nil || mid.IsZero() {
		return Commit{}, bad("message_id")
	}
	c.MessageID = contract.MessageID(mid)
	seq, err := strconv.ParseUint(f[2], 10, 64)
	if err != nil || seq == 0 {
		return Commit{}, bad("seq")
	}
	c.Seq = contract.ConversationSeq(seq)
	if c.State != StateCommitted {
		if f[3] == "" {
			return Commit{}, bad("record missing before COMMITTED")
		}
		c.Record = []byte(f[3])
	}
	if c.ReservedAtMs, err = optInt(f[4]); err != nil {
		return Commit{}, bad("reserved_at")
	}
	if c.CommittedAtMs, err = optInt(f[5]); err != nil || (c.State == StateCommitted) != (c.CommittedAtMs > 0) {
		return Commit{}, bad("committed_at")
	}
	cid, err := contract.U128FromBytes([]byte(f[6]))
	if err != nil {
		return Commit{}, bad("conversation_id")
	}
	c.Key.Conversation = contract.ConversationID(cid)
	if len(f[7]) != len(c.Identity) {
		return Commit{}, bad("identity")
	}
	copy(c.Identity[:], f[7])
	return c, nil
}

func optInt(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	return strconv.ParseInt(s, 10, 64)
}
