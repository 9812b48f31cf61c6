package mailboxstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/qim-dev/qim/contract"
)

// Materialization is one qim.dispatch record to apply to its shard.
type Materialization struct {
	Shard uint32
	// Epoch is the shard epoch the caller opened the shard with; a different stored epoch fences
	// the call.
	Epoch uint16
	// Offset is the record's offset in its qim.dispatch partition.
	Offset int64
	// PrevOffset is the watermark the shard must hold now: the offset of the previous record of
	// the partition this owner applied, or the watermark it started from; -1 when the shard has
	// none. This compare-and-set fences a second owner.
	PrevOffset int64
	DispatchID contract.DispatchID
	Digest     []byte // payload_digest, 32 bytes
	// CreatedAtMs is the message's commit time; it picks the day bucket (never the local clock).
	CreatedAtMs int64
	Entries     []Entry
}

// Entry is one recipient's event of a Materialization.
type Entry struct {
	Tenant    contract.TenantID
	User      contract.UserID
	EventType contract.EventType
	// Value is the encoded MailboxEntry, whose mailbox_seq must be Seq() of the Materialization.
	Value []byte
}

// Seq is the mailbox_seq a fresh materialization assigns: compose(Epoch, Offset).
func (m *Materialization) Seq() (contract.MailboxSeq, error) {
	if m.Offset < 0 {
		return 0, fmt.Errorf("%w: negative offset %d", ErrInvalid, m.Offset)
	}
	s, err := contract.ComposeMailboxSeq(m.Epoch, uint64(m.Offset))
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return s, nil
}

// Outcome is the result of one Materialization.
type Outcome struct {
	// Seq is the canonical mailbox_seq of the dispatch: this record's compose(epoch, offset) when
	// it was fresh, the first record's when it is a duplicate.
	Seq contract.MailboxSeq
	// Duplicate: an earlier record of the same dispatch owns Seq; only the watermark moved.
	Duplicate bool
	// Retry: the watermark already covered this record (a repeated call); nothing was written.
	Retry bool
}

// Materialize applies ms in order, one EVALSHA each, all in ONE pipeline: Redis runs them in
// order, so record i+1's watermark CAS sees record i's watermark. It returns the outcomes of the
// leading records that succeeded and, if one failed, its error (*ConflictError, *FencedError,
// ErrInvalid, ErrCorrupt, or a transport error after which the outcome of every record of the
// batch is unknown). The records after a failed one did not run (their CAS fails) and must be
// replayed after the caller resolved the failure. Every record is validated before anything is
// sent.
func (s *Store) Materialize(ctx context.Context, ms []Materialization) ([]Outcome, error) {
	calls := make([]call, len(ms))
	seqs := make([]contract.MailboxSeq, len(ms))
	for i := range ms {
		c, seq, err := s.materializeCall(&ms[i])
		if err != nil {
			return nil, err
		}
		calls[i], seqs[i] = c, seq
	}
	cmds, err := runCalls(ctx, s.rdb, calls)
	if err != nil {
		return nil, fmt.Errorf("mailboxstore: materialize %d records from shard %d offset %d: %w",
			len(ms), ms[0].Shard, ms[0].Offset, err)
	}
	out := make([]Outcome, 0, len(ms))
	for i, c := range cmds {
		m := &ms[i]
		o, err := materializeReply(c.Val(), c.Err(), seqs[i])
		if err != nil {
			return out, scriptError("materialize", m.Shard, m.Offset, m.DispatchID, err)
		}
		out = append(out, o)
	}
	return out, nil
}

func materializeReply(v any, err error, fresh contract.MailboxSeq) (Outcome, error) {
	if err != nil {
		return Outcome{}, err
	}
	r, ok := v.([]any)
	if !ok || len(r) != 3 {
		return Outcome{}, fmt.Errorf("%w: materialize reply %T", ErrCorrupt, v)
	}
	canon, _ := r[0].(string)
	seq, perr := parseSeq(canon)
	kind, _ := r[2].(string)
	if perr != nil || (kind == "F" && seq != fresh) {
		return Outcome{}, fmt.Errorf("%w: materialize reply seq", ErrCorrupt)
	}
	return Outcome{Seq: seq, Duplicate: seq != fresh, Retry: kind == "R"}, nil
}

// materializeCall validates m and builds its call (keys and arguments as in materialize.lua).
func (s *Store) materializeCall(m *Materialization) (call, contract.MailboxSeq, error) {
	seq, err := m.Seq()
	if err != nil {
		return call{}, 0, err
	}
	switch {
	case m.Shard >= uint32(s.shards):
		return call{}, 0, fmt.Errorf("%w: shard %d of %d", ErrInvalid, m.Shard, s.shards)
	case m.PrevOffset < -1 || m.PrevOffset >= m.Offset:
		return call{}, 0, fmt.Errorf("%w: previous offset %d for offset %d", ErrInvalid, m.PrevOffset, m.Offset)
	case len(m.Digest) != 32:
		return call{}, 0, fmt.Errorf("%w: payload_digest of %d bytes", ErrInvalid, len(m.Digest))
	case m.CreatedAtMs <= 0:
		return call{}, 0, fmt.Errorf("%w: created_at_ms %d", ErrInvalid, m.CreatedAtMs)
	case len(m.Entries) == 0:
		return call{}, 0, fmt.Errorf("%w: dispatch without entries", ErrInvalid)
	}
	day := m.CreatedAtMs / dayMillis
	bucketExp := (day+1)*daySeconds + retentionSeconds
	seqb := appendSeq(make([]byte, 0, 8), seq)
	prev := ""
	if m.PrevOffset >= 0 {
		prev = strconv.FormatInt(m.PrevOffset, 10)
	}
	keys := make([]string, 3, 3+2*len(m.Entries))
	keys[0], keys[1], keys[2] = epochKey(m.Shard), watermarkKey(m.Shard), identityKey(m.Shard, m.DispatchID)
	args := make([]any, 9, 9+len(m.Entries))
	args[0], args[1], args[2], args[3], args[4] = int64(m.Epoch), m.Offset, prev, m.Digest, seqb
	args[5], args[6], args[7], args[8] = day, bucketExp, bucketExp+retentionSeconds, identityTTL
	for i := range m.Entries {
		e := &m.Entries[i]
		if len(e.Value) == 0 {
			return call{}, 0, fmt.Errorf("%w: empty entry %d", ErrInvalid, i)
		}
		if got := s.shards.UserShard(e.Tenant, e.User); got != m.Shard {
			// Keys of another shard would be unreachable by pulls routed to the user's shard.
			return call{}, 0, fmt.Errorf("%w: recipient %d belongs to shard %d, not %d", ErrInvalid, i, got, m.Shard)
		}
		uk := newUserKeys(m.Shard, e.Tenant, e.User)
		keys = append(keys, uk.bucketKey(day), uk.index)
		member := make([]byte, 0, 12+len(e.Value))
		member = binary.BigEndian.AppendUint32(append(member, seqb...), uint32(e.EventType))
		args = append(args, append(member, e.Value...))
	}
	return call{Script: scripts.materialize, Keys: keys, Args: args}, seq, nil
}
