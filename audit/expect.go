package audit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"
	"lukechampine.com/blake3"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// schemaVersion is the only CommittedEnvelope and GroupDispatch layout this audit reads
// (proto/qiminternal/v1/records.proto: a reader that sees another must stop, not skip).
const schemaVersion = 1

// errUnderivable marks a committed record whose dispatches cannot be derived (unknown schema,
// malformed identifiers, an audience this build does not know). The range is then incomplete:
// skipping the record would be exactly the silent loss the audit exists to catch.
var errUnderivable = errors.New("audit: committed record cannot be derived")

// expected is one dispatch the contract says a committed record produces: one per target
// mailbox shard. Coordinates are kept as values so a mismatch can name its field; the recipient
// list and the rest of the copied content are kept as 16-byte fingerprints, which bounds an
// expectation to ~130 bytes whatever the body size.
type expected struct {
	offset  int64 // Outbox offset of the committed record
	msg     contract.MessageID
	conv    [16]byte
	sender  uint64
	seq     uint64
	shard   uint32
	recips  [16]byte
	content [16]byte
	digest  [32]byte // payload_digest of the first copy seen
	seen    int32    // copies seen in this window (0: none yet)
}

// derive returns the expected dispatches of one committed record, keyed by dispatch_id, using
// only the contract: dispatch_id = contract.NewDispatchID(message_id, shard), the target shards
// are contract.ShardCount.UserShard of the frozen audience, each shard's recipients are its
// members in ascending order, and the body is inlined when audience × body ≤
// contract.InlineBodyBudgetBytes (records.proto, GroupDispatch.body). It deliberately shares no
// code with the fanout's planner (services/internal/dispatch), so a planner bug cannot hide here.
func derive(env *internalv1.CommittedEnvelope, offset int64, shards contract.ShardCount, fp *printer) (contract.MessageID, map[contract.DispatchID]*expected, error) {
	rec := env.GetRecord()
	if env.GetSchemaVersion() != schemaVersion || rec == nil {
		return contract.MessageID{}, nil, fmt.Errorf("%w: schema_version %d", errUnderivable, env.GetSchemaVersion())
	}
	mid, err := contract.ParseMessageID(rec.GetMessageId())
	if err != nil {
		return mid, nil, fmt.Errorf("%w: %v", errUnderivable, err)
	}
	tenant, err := contract.U128FromBytes(rec.GetTenantId())
	if err != nil || len(rec.GetConversationId()) != 16 {
		return mid, nil, fmt.Errorf("%w: tenant or conversation id is not 16 bytes", errUnderivable)
	}
	audience, err := frozenAudience(env)
	if err != nil {
		return mid, nil, err
	}
	byShard, err := routeAudience(audience, tenant, shards)
	if err != nil {
		return mid, nil, err
	}
	if g := env.GetAudience().GetGroup(); g != nil && !sameShards(byShard, g.GetTargetShards()) {
		return mid, nil, fmt.Errorf("%w: group audience target_shards disagree with its recipients", errUnderivable)
	}
	body, inline := rec.GetBody(), len(audience)*len(rec.GetBody()) <= contract.InlineBodyBudgetBytes
	content := fp.content(rec.GetTenantId(), rec.GetMessageType(), rec.GetCustomType(), inline, body,
		rec.GetClientMessageId(), rec.GetCreatedAtMs(), rec.GetSenderDeviceId(), rec.GetTraceId(), rec.GetMembershipVersion())
	out := make(map[contract.DispatchID]*expected, len(byShard))
	for shard, users := range byShard {
		e := &expected{offset: offset, msg: mid, sender: rec.GetSenderUserId(), seq: rec.GetConversationSeq(),
			shard: shard, recips: fp.recipients(users), content: content}
		copy(e.conv[:], rec.GetConversationId())
		out[contract.NewDispatchID(mid, shard)] = e
	}
	return mid, out, nil
}

// routeAudience groups the frozen audience by mailbox shard, each group ascending. A repeated
// member makes the record underivable (records.proto: "no duplicates").
func routeAudience(audience []uint64, tenant contract.TenantID, shards contract.ShardCount) (map[uint32][]uint64, error) {
	sorted := slices.Clone(audience)
	slices.Sort(sorted)
	if len(slices.Compact(slices.Clone(sorted))) != len(sorted) {
		return nil, fmt.Errorf("%w: the frozen audience repeats a member", errUnderivable)
	}
	byShard := map[uint32][]uint64{}
	for _, u := range sorted {
		s := shards.UserShard(tenant, contract.UserID(u))
		byShard[s] = append(byShard[s], u)
	}
	return byShard, nil
}

// compare names the first field in which d disagrees with e, or "" when it agrees.
func (e *expected) compare(d *internalv1.GroupDispatch, fp *printer) string {
	mb := e.msg.Bytes()
	switch {
	case string(d.GetMessageId()) != string(mb[:]):
		return "message_id"
	case string(d.GetConversationId()) != string(e.conv[:]):
		return "conversation_id"
	case d.GetConversationSeq() != e.seq:
		return "conversation_seq"
	case d.GetSenderUserId() != e.sender:
		return "sender_user_id"
	case d.GetShard() != e.shard:
		return "shard"
	case fp.recipients(d.GetRecipients()) != e.recips:
		return "recipients"
	case dispatchContent(d, fp) != e.content:
		return "content (tenant, type, body, anchor, time, device, trace or membership_version)"
	}
	return ""
}

func dispatchContent(d *internalv1.GroupDispatch, fp *printer) [16]byte {
	return fp.content(d.GetTenantId(), d.GetMessageType(), d.GetCustomType(), d.Body != nil, d.Body,
		d.GetClientMessageId(), d.GetCreatedAtMs(), d.GetSenderDeviceId(), d.GetTraceId(), d.GetMembershipVersion())
}

// printer computes fingerprints with one reused buffer: blake3 over a length-prefixed encoding,
// truncated to 16 bytes (a collision needs ~2^64 work, not an accident of a few billion records).
type printer struct{ buf []byte }

func (p *printer) recipients(users []uint64) [16]byte {
	p.buf = binary.BigEndian.AppendUint32(p.buf[:0], uint32(len(users)))
	for _, u := range users {
		p.buf = binary.BigEndian.AppendUint64(p.buf, u)
	}
	return p.sum()
}

// content covers every field a dispatch copies from the record besides the coordinates. The
// body counts only when inlined, and its presence is part of the value (records.proto: absent
// = not inlined, present-but-empty = an empty body).
func (p *printer) content(tenant []byte, typ uint32, custom string, inline bool, body, cmid []byte,
	created int64, device string, trace []byte, membership uint64) [16]byte {
	p.buf = p.bytes(p.buf[:0], tenant)
	p.buf = binary.BigEndian.AppendUint32(p.buf, typ)
	p.buf = p.str(p.buf, custom)
	if inline {
		p.buf = p.bytes(append(p.buf, 1), body)
	} else {
		p.buf = append(p.buf, 0)
	}
	p.buf = p.bytes(p.buf, cmid)
	p.buf = binary.BigEndian.AppendUint64(p.buf, uint64(created))
	p.buf = p.str(p.buf, device)
	p.buf = p.bytes(p.buf, trace)
	p.buf = binary.BigEndian.AppendUint64(p.buf, membership)
	return p.sum()
}

// payloadDigest recomputes a dispatch's payload_digest from its own content: blake3-256 over
// contract.DomainDispatchDigest and the deterministic encoding of the dispatch with
// payload_digest and source_offset cleared. records.proto leaves the exact preimage to the
// fanout's code (services/internal/dispatch/plan.go, Digest), and that is what it hashes —
// dispatch_id and schema_version included, although the proto comment lists them as excluded.
// Checking every copy against its own content makes "same dispatch_id, same content, another
// digest" visible however far apart the copies are, not only within the windows kept in memory.
func (p *printer) payloadDigest(d *internalv1.GroupDispatch) ([32]byte, error) {
	digest, src := d.PayloadDigest, d.SourceOffset
	d.PayloadDigest, d.SourceOffset = nil, 0
	b, err := proto.MarshalOptions{Deterministic: true}.MarshalAppend(p.buf[:0], d)
	d.PayloadDigest, d.SourceOffset = digest, src
	if err != nil {
		return [32]byte{}, fmt.Errorf("audit: encode dispatch for its digest: %w", err)
	}
	p.buf = b
	h := blake3.New(32, nil)
	_, _ = h.Write([]byte(contract.DomainDispatchDigest))
	_, _ = h.Write(b)
	var out [32]byte
	h.Sum(out[:0])
	return out, nil
}

func (p *printer) bytes(b, v []byte) []byte {
	return append(binary.BigEndian.AppendUint32(b, uint32(len(v))), v...)
}

func (p *printer) str(b []byte, v string) []byte {
	return append(binary.BigEndian.AppendUint32(b, uint32(len(v))), v...)
}

func (p *printer) sum() [16]byte {
	s := blake3.Sum256(p.buf)
	var out [16]byte
	copy(out[:], s[:16])
	return out
}

// frozenAudience is the recipient list the Outbox record froze: a direct message's
// participants, or a group message's recipients by value (GroupAudience.recipient_user_ids,
// whose length must equal member_count).
func frozenAudience(env *internalv1.CommittedEnvelope) ([]uint64, error) {
	if g := env.GetAudience().GetGroup(); g != nil {
		if len(g.GetRecipientUserIds()) == 0 || int(g.GetMemberCount()) != len(g.GetRecipientUserIds()) {
			return nil, fmt.Errorf("%w: group audience of %d recipients, member_count %d", errUnderivable,
				len(g.GetRecipientUserIds()), g.GetMemberCount())
		}
		return g.GetRecipientUserIds(), nil
	}
	audience := env.GetAudience().GetDirect().GetRecipientUserIds()
	if len(audience) == 0 {
		return nil, fmt.Errorf("%w: no audience", errUnderivable)
	}
	return audience, nil
}

// sameShards reports whether the routed shards are exactly the frozen target shards.
func sameShards(byShard map[uint32][]uint64, target []uint32) bool {
	if len(byShard) != len(target) {
		return false
	}
	for _, s := range target {
		if _, ok := byShard[s]; !ok {
			return false
		}
	}
	return true
}
