package msgstore

// The amendment index (ADR-0037): what recalls, edits and deletes did to a conversation's
// messages, applied to every record this package returns.
//
// An amendment is a CONTROL message of its conversation (contract.AmendCustomType) committed
// like any SEND; its MarkRequest carries the Amendment, and MarkCommitted merges it into the
// index (amend.lua) before it marks the commit COMMITTED, so an amendment that was acknowledged
// is always indexed (the recovery loop and a client's retry redo the merge of one that was not).
// Readers — history pages, session-list tails, the writer's own target lookups — fold the index
// into the records they return: flags OR-ed in, a recalled or deleted body dropped, an edited
// body replaced. The stored records, hot or archived, are never rewritten.
//
// Invariants: the index holds one value per amended target, the merge of every amendment of it
// whatever order they were merged in; a reader that finds the key present reads the values of
// every record it returns before it returns any (one round trip, only for a conversation with
// amendments); a value that does not parse fails the read (fail closed, like a record).
//
// Rejected: rewriting the target record in place. The hot record would be easy, but the archive
// is append-only (no UPDATE of archived rows, no DELETE: seed §4, ADR-0022), and two tiers that
// disagree on one message would show it recalled on one page and whole on the next. Rejected
// too: folding the CONTROL messages at read time by scanning forward from the page, which is
// unbounded (an edit may come years after its target).

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

const amendPrefix = "qim:amend:"

// amend is the conversation's amendment index key qim:amend:{tag}:<tenant>:<cid>.
func (k convKeys) amend() string { return amendPrefix + k.suffix }

// Amendment is what one amendment does to its target.
type Amendment struct {
	Target uint64 // conversation_seq of the amended message
	Seq    uint64 // the amendment's own conversation_seq (> Target)
	Flags  uint32 // contract.FlagRecalled, FlagDeleted or FlagEdited
	Body   []byte // EDIT: the new body
	// ExpireAtMs is when the index may forget the target: the end of its retention (0: never,
	// a compliance hold). RetentionEnd computes it.
	ExpireAtMs int64
}

// RetentionEnd is when a message of class created at createdAtMs leaves history, Unix ms; 0
// for never (a compliance hold, or a class this build does not know: never guess a deletion).
func RetentionEnd(class contract.RetentionClass, createdAtMs int64) int64 {
	switch class {
	case contract.RetentionDefault:
		return createdAtMs + contract.HistoryRetention.Milliseconds()
	case contract.RetentionEphemeral24h:
		return createdAtMs + contract.EphemeralRetention.Milliseconds()
	}
	return 0
}

// amendArgs calls amend.lua.
type amendArgs struct {
	Amend      string `key:"amend"`
	Target     uint64 `arg:"target"`
	Seq        uint64 `arg:"seq"`
	Flags      int64  `arg:"flags"`
	Body       []byte `arg:"body"`
	ExpireAtMs int64  `arg:"expire_at_ms"`
}

// amendReply is the reply of amend.lua.
type amendReply struct {
	Value string `reply:"value"`
}

// indexAmendments merges the amendments of reqs (those with one) into their indexes in one
// pipeline; errs[i] is set for request i when its merge failed, and the caller must not mark
// it COMMITTED.
func (s *Store) indexAmendments(ctx context.Context, reqs []MarkRequest, errs []error) {
	var calls []call
	var idx []int
	for i, r := range reqs {
		a := r.Amend
		if a == nil || errs[i] != nil {
			continue
		}
		if a.Seq <= a.Target || a.Target == 0 || (a.Flags != contract.FlagRecalled && a.Flags != contract.FlagDeleted && a.Flags != contract.FlagEdited) {
			errs[i] = fmt.Errorf("%w: amendment of seq %d at seq %d with flags %d", ErrInvalidArgument, a.Target, a.Seq, a.Flags)
			continue
		}
		ck := newConvKeys(r.Key.Tenant, r.Key.Conversation)
		calls = append(calls, s.scripts.amend.Call(&amendArgs{Amend: ck.amend(), Target: a.Target, Seq: a.Seq,
			Flags: int64(a.Flags), Body: a.Body, ExpireAtMs: a.ExpireAtMs}))
		idx = append(idx, i)
	}
	if len(calls) == 0 {
		return
	}
	cmds, err := runCalls(ctx, s.rdb, calls)
	for j, i := range idx {
		switch {
		case err != nil:
			errs[i] = fmt.Errorf("msgstore: amend: %w", err)
		case cmds[j].Err() != nil:
			errs[i] = scriptError("amend", reqs[i].Key, cmds[j].Err())
		}
	}
}

// amendState is one parsed index value.
type amendState struct {
	flags uint32
	body  []byte // the newest edit's body (nil: never edited, or gone)
}

// parseAmendValue parses "<edit_seq>:<flags>:<body>".
func parseAmendValue(v string) (amendState, bool) {
	es, rest, ok1 := strings.Cut(v, ":")
	fs, body, ok2 := strings.Cut(rest, ":")
	eseq, err1 := strconv.ParseUint(es, 10, 64)
	flags, err2 := strconv.ParseUint(fs, 10, 32)
	if !ok1 || !ok2 || err1 != nil || err2 != nil {
		return amendState{}, false
	}
	st := amendState{flags: uint32(flags)}
	if eseq > 0 && !contract.Gone(st.flags) {
		st.body = []byte(body)
	}
	return st, true
}

// amendJob is one conversation's records to fold the index into.
type amendJob struct {
	conv contract.ConversationID
	recs [][]byte // complete MessageRecord bytes of conv, any order; amended ones are replaced
}

// foldAmendments folds the index into the records of every job, with one pipeline of HMGETs
// (callers pass only conversations whose index exists); a record is re-encoded only when it
// was amended.
func (s *Store) foldAmendments(ctx context.Context, tenant contract.TenantID, jobs []amendJob) error {
	parsed := make([][]*internalv1.MessageRecord, len(jobs))
	cmds := make([]*redis.SliceCmd, len(jobs))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, j := range jobs {
			seqs := make([]string, len(j.recs))
			parsed[i] = make([]*internalv1.MessageRecord, len(j.recs))
			for k, b := range j.recs {
				r := &internalv1.MessageRecord{}
				if err := proto.Unmarshal(b, r); err != nil {
					return &CorruptError{Tenant: tenant, Conversation: j.conv, Reason: "history record does not decode as MessageRecord"}
				}
				parsed[i][k], seqs[k] = r, strconv.FormatUint(r.GetConversationSeq(), 10)
			}
			if len(seqs) > 0 {
				cmds[i] = p.HMGet(ctx, newConvKeys(tenant, j.conv).amend(), seqs...)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("msgstore: read amendments: %w", err)
	}
	for i, j := range jobs {
		if cmds[i] == nil {
			continue
		}
		if err := s.applyValues(tenant, j, parsed[i], cmds[i].Val()); err != nil {
			return err
		}
	}
	return nil
}

// applyValues replaces the records of j that have an index value in vals.
func (s *Store) applyValues(tenant contract.TenantID, j amendJob, parsed []*internalv1.MessageRecord, vals []any) error {
	for k, v := range vals {
		sv, ok := v.(string)
		if !ok {
			continue
		}
		st, ok := parseAmendValue(sv)
		if !ok {
			return &CorruptError{Tenant: tenant, Conversation: j.conv, Seq: parsed[k].GetConversationSeq(),
				Reason: "amendment index value is not edit_seq:flags:body"}
		}
		b, err := applyAmendment(parsed[k], st)
		if err != nil {
			return err
		}
		j.recs[k] = b
	}
	return nil
}

// applyAmendment returns r's bytes with st applied.
func applyAmendment(r *internalv1.MessageRecord, st amendState) ([]byte, error) {
	r.Flags |= st.flags
	switch {
	case contract.Gone(r.GetFlags()):
		r.Body = nil
	case st.body != nil:
		r.Body = st.body
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("msgstore: encode amended record: %w", err)
	}
	return b, nil
}
