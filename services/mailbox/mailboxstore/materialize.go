package mailboxstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

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
		o, err := materializeReply(c, seqs[i])
		if err != nil {
			return out, scriptError("materialize", m.Shard, m.Offset, m.DispatchID, err)
		}
		out = append(out, o)
	}
	return out, nil
}

// settled says whether now is far enough from a bucket's expiry (unix seconds) for
// materialize.lua to trust the expiry the bucket's first entry set (see the script).
func settled(bucketExpireAt int64, now time.Time) string {
	if bucketExpireAt > now.Add(contract.MailboxExpiryMargin).Unix() {
		return "1"
	}
	return "0"
}

func materializeReply(cmd *redis.Cmd, fresh contract.MailboxSeq) (Outcome, error) {
	if err := cmd.Err(); err != nil {
		return Outcome{}, err
	}
	r, err := scripts.materialize.Decode(cmd)
	if err != nil {
		return Outcome{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	seq, perr := parseSeq(r.Seq)
	if perr != nil || (r.Kind == "F" && seq != fresh) {
		return Outcome{}, fmt.Errorf("%w: materialize reply seq", ErrCorrupt)
	}
	return Outcome{Seq: seq, Duplicate: seq != fresh, Retry: r.Kind == "R"}, nil
}

// materializeCall validates m and builds its materialize.lua call.
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
	a := materializeArgs{
		EpochKey: epochKey(m.Shard), WatermarkKey: watermarkKey(m.Shard), IdentityKey: identityKey(m.Shard, m.DispatchID),
		Buckets: make([]string, 0, len(m.Entries)), Indexes: make([]string, 0, len(m.Entries)),
		Epoch: int64(m.Epoch), Offset: m.Offset, PrevOffset: prev, Digest: m.Digest, Seq: seqb, Day: day,
		BucketExpireAt: bucketExp, IndexExpireAt: bucketExp + retentionSeconds, IdentityTTL: identityTTL,
		Settled: settled(bucketExp, time.Now()),
		Members: make([][]byte, 0, len(m.Entries)),
	}
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
		a.Buckets, a.Indexes = append(a.Buckets, uk.bucketKey(day)), append(a.Indexes, uk.index)
		member := make([]byte, 0, 12+len(e.Value))
		member = binary.BigEndian.AppendUint32(append(member, seqb...), uint32(e.EventType))
		a.Members = append(a.Members, append(member, e.Value...))
	}
	return scripts.materialize.Call(&a), seq, nil
}
