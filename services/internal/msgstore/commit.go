package msgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/luascript"
)

// reserveCall builds the call of reserve_and_record.lua or reserve.lua — or group_send.lua for
// a group conversation on the fused path. Record must not contain field 4: the script appends it.
func (s *Store) reserveCall(b *reserveBinding, in Intent) call {
	if b == s.scripts.reserveAndRecord && in.Key.Conversation.Kind() == contract.KindGroup {
		return s.groupSendCall(in)
	}
	a := reserveArgsOf(in)
	return b.Call(&a)
}

// reserveArgsOf is the reserve part of every commit script's call for in.
func reserveArgsOf(in Intent) reserveArgs {
	tag := tagOf(in.Key.Tenant, in.Key.Conversation)
	ck := convKeysTagged(in.Key.Tenant, in.Key.Conversation, tag)
	mid := in.MessageID.Bytes()
	cid := in.Key.Conversation.Bytes()
	return reserveArgs{
		Commit: commitKeyTagged(in.Key, tag), Seq: ck.seq, Pending: pendingKey, Owner: ownerKey(in.Key),
		Identity: in.Identity[:], MessageID: mid[:], ConversationID: cid[:], Record: in.Record, NowMs: in.NowMs,
		HrecPrefix: ck.hrec, HidxPrefix: ck.hidx, BucketWidth: contract.MessageSeqBucketWidth, MaxRecordBytes: maxRecordBytes,
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
// fresh (Fresh=true, State D), an existing commit of the same request (Fresh=false, State D or C:
// a RESERVED one — from Reserve, or from a call that died part-way — is recorded first, from its
// stored intent; the caller produces D and replays the ACK for C), ErrIdentityConflict (another
// request under the key, or the client_message_id owned in another conversation),
// ErrInvalidArgument, ErrSeqExhausted or ErrCorrupt. Redis runs the pipeline in order, so fresh intents of one
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

func (s *Store) reserveBatch(ctx context.Context, sc *reserveBinding, op string, intents []Intent) ([]Commit, []error) {
	out := make([]Commit, len(intents))
	errs := make([]error, len(intents))
	calls := make([]call, 0, len(intents))
	idx := make([]int, 0, len(intents))
	for i, in := range intents {
		if err := validateIntent(in); err != nil {
			errs[i] = fmt.Errorf("msgstore: %s: %w", op, err)
			continue
		}
		if sc != s.scripts.reserveAndRecord && in.Key.Conversation.Kind() == contract.KindGroup {
			errs[i] = fmt.Errorf("msgstore: %s: %w: a group send has no two-step path (its membership check is fused with the seq)", op, ErrInvalidArgument)
			continue
		}
		calls = append(calls, s.reserveCall(sc, in))
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
// record). On RECORDED or COMMITTED it is a no-op returning the current commit. The returned seq
// is the one that holds: a RESERVED commit whose seq another send recorded meanwhile (possible
// only after a reserve that died before its INCR) moves to the next free seq, with its record.
func (s *Store) Record(ctx context.Context, k CommitKey) (Commit, error) {
	ck := newConvKeys(k.Tenant, k.Conversation)
	cid := k.Conversation.Bytes()
	c := s.scripts.record.Call(&recordArgs{Commit: commitKey(k), Seq: ck.seq, ConversationID: cid[:],
		HrecPrefix: ck.hrec, HidxPrefix: ck.hidx, BucketWidth: contract.MessageSeqBucketWidth})
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
// contract). Marking twice keeps the first committed_at and redoes, from it, the expiry, owner and
// recovery-index writes that follow the state change, so a mark that died after its state write
// is finished by the next one. A request with an Amend is merged into its amendment index
// first and not marked when that failed.
func (s *Store) MarkCommitted(ctx context.Context, reqs []MarkRequest) []error {
	errs := make([]error, len(reqs))
	for i, r := range reqs {
		if r.CommittedAtMs <= 0 {
			errs[i] = fmt.Errorf("msgstore: mark_committed: %w: committed_at_ms %d", ErrInvalidArgument, r.CommittedAtMs)
		}
	}
	s.indexAmendments(ctx, reqs, errs) // a round trip of its own, only when the batch amends
	var args []*markArgs
	var batches [][]int // the request index of each commit of each call
	var a *markArgs
	for i, r := range reqs {
		if errs[i] != nil {
			continue
		}
		if a == nil || len(a.Commit) == markBatchMax {
			a = &markArgs{Pending: pendingKey, WindowMs: contract.IdempotencyWindow.Milliseconds()}
			args, batches = append(args, a), append(batches, nil)
		}
		tag := tagOf(r.Key.Tenant, r.Key.Conversation)
		ck, cv := commitKeyTagged(r.Key, tag), convKeysTagged(r.Key.Tenant, r.Key.Conversation, tag)
		a.Commit, a.Owner, a.Shrunk = append(a.Commit, ck), append(a.Owner, ownerKey(r.Key)), append(a.Shrunk, shrunkKey(ck))
		a.Htrim, a.TrimConv = append(a.Htrim, cv.htrim()), append(a.TrimConv, cv.trimConv())
		a.CommittedAtMs = append(a.CommittedAtMs, strconv.FormatInt(r.CommittedAtMs, 10))
		batches[len(batches)-1] = append(batches[len(batches)-1], i)
	}
	if len(args) == 0 {
		return errs
	}
	// Each call is encoded once its batch is whole: encoding after every appended commit cost
	// O(n²) in the batch's length.
	calls := make([]call, len(args))
	for j, a := range args {
		calls[j] = s.scripts.markCommitted.Call(a)
	}
	cmds, runErr := runCalls(ctx, s.rdb, calls)
	for j, idx := range batches {
		if runErr != nil {
			for _, i := range idx {
				errs[i] = fmt.Errorf("msgstore: mark_committed: %w", runErr)
			}
			continue
		}
		r, err := markResults(cmds[j], len(idx))
		for n, i := range idx {
			switch {
			case err != nil:
				errs[i] = scriptError("mark_committed", reqs[i].Key, err)
			case !strings.HasPrefix(r.Results[n], "C:"):
				errs[i] = scriptError("mark_committed", reqs[i].Key, errors.New(r.Results[n]))
			}
		}
	}
	return errs
}

// markBatchMax bounds the commits of one mark_committed.lua call, so one call stays short on
// Redis (a script blocks every other client while it runs).
const markBatchMax = 256

// markResults decodes one mark_committed.lua reply of n commits.
func markResults(cmd *redis.Cmd, n int) (markReply, error) {
	r, err := scripts.markCommitted.Decode(cmd)
	if err != nil {
		return r, err
	}
	if len(r.Results) != n {
		return r, fmt.Errorf("%w: %d results for %d commits", luascript.ErrReplyShape, len(r.Results), n)
	}
	return r, nil
}

// LoadCommit reads the commit under k. found is false when there is none (never reserved, or
// forgotten after the idempotency window). Key.Conversation of the result is the stored one.
func (s *Store) LoadCommit(ctx context.Context, k CommitKey) (Commit, bool, error) {
	res := s.rdb.HMGet(ctx, commitKey(k), commitFields...)
	if err := res.Err(); err != nil {
		return Commit{}, false, fmt.Errorf("msgstore: load commit: %w", err)
	}
	if res.Val()[0] == nil {
		return Commit{}, false, nil
	}
	var f storedCommit
	if err := res.Scan(&f); err != nil {
		return Commit{}, false, fmt.Errorf("msgstore: load commit: %w", err)
	}
	c, err := decodeCommit(k, f)
	if err != nil {
		return Commit{}, false, fmt.Errorf("msgstore: load commit: %w", err)
	}
	return c, true, nil
}

// commitFields are the fields of a commit hash LoadCommit reads (storedCommit's redis tags).
var commitFields = []string{"st", "mid", "seq", "rec", "rat", "cat", "cid", "idn"}

// commitResult turns the reply of reserve_and_record, reserve or record (one reply line, checked
// in script.go) into a Commit, an IdentityConflictError or the script's mapped error.
func commitResult(op string, k CommitKey, cmd *redis.Cmd) (Commit, error) {
	if err := cmd.Err(); err != nil {
		return Commit{}, scriptError(op, k, err)
	}
	r, err := scripts.reserveAndRecord.Decode(cmd)
	if err != nil {
		return Commit{}, fmt.Errorf("msgstore: %s: unexpected reply shape: %w",
			op, &CorruptError{Tenant: k.Tenant, Conversation: k.Conversation, Reason: "script reply"})
	}
	c, err := decodeCommit(k, r.storedCommit)
	if err != nil {
		return Commit{}, fmt.Errorf("msgstore: %s: %w", op, err)
	}
	switch r.Kind {
	case "F":
		c.Fresh = true
	case "E":
	case "X":
		return Commit{}, fmt.Errorf("msgstore: %s: %w", op,
			&IdentityConflictError{Key: c.Key, State: c.State, MessageID: c.MessageID, Seq: c.Seq})
	default:
		return Commit{}, fmt.Errorf("msgstore: %s: reply kind %q: %w", op, r.Kind, ErrCorrupt)
	}
	return c, nil
}

// decodeCommit parses the stored fields. Record is nil when absent.
func decodeCommit(k CommitKey, f storedCommit) (Commit, error) {
	bad := func(what string) error {
		return &CorruptError{Tenant: k.Tenant, Conversation: k.Conversation, Reason: "commit hash: " + what}
	}
	c := Commit{Key: k, State: State(0)}
	if len(f.St) != 1 {
		return Commit{}, bad("state")
	}
	c.State = State(f.St[0])
	if c.State != StateReserved && c.State != StateRecorded && c.State != StateCommitted {
		return Commit{}, bad("state")
	}
	mid, err := contract.U128FromBytes([]byte(f.Mid))
	if err != nil || mid.IsZero() {
		return Commit{}, bad("message_id")
	}
	c.MessageID = contract.MessageID(mid)
	seq, err := strconv.ParseUint(f.Seq, 10, 64)
	if err != nil || seq == 0 {
		return Commit{}, bad("seq")
	}
	c.Seq = contract.ConversationSeq(seq)
	if c.State != StateCommitted {
		if f.Rec == "" {
			return Commit{}, bad("record missing before COMMITTED")
		}
		c.Record = []byte(f.Rec)
	}
	if c.ReservedAtMs, err = optInt(f.Rat); err != nil {
		return Commit{}, bad("reserved_at")
	}
	if c.CommittedAtMs, err = optInt(f.Cat); err != nil || (c.State == StateCommitted) != (c.CommittedAtMs > 0) {
		return Commit{}, bad("committed_at")
	}
	cid, err := contract.U128FromBytes([]byte(f.Cid))
	if err != nil {
		return Commit{}, bad("conversation_id")
	}
	c.Key.Conversation = contract.ConversationID(cid)
	if len(f.Idn) != len(c.Identity) {
		return Commit{}, bad("identity")
	}
	copy(c.Identity[:], f.Idn)
	return c, nil
}

func optInt(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	return strconv.ParseInt(s, 10, 64)
}
