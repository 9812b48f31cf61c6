// Package dispatch holds the deterministic core shared by the FanoutCoordinator and the
// MailboxNode: planning the GroupDispatch records of a committed message and computing their
// payload digest. It does no I/O and reads no clock, so a replayed Outbox batch plans byte-for-byte
// the same dispatches, and the MailboxNode can converge duplicates by dispatch_id + payload_digest.
package dispatch

import (
	"errors"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"
	"lukechampine.com/blake3"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// SchemaVersion is GroupDispatch.schema_version written by this build.
const SchemaVersion = 1

// ErrUnplannable is returned for an envelope that cannot be planned safely (unknown schema,
// missing fields, an audience this build does not serve). The FanoutCoordinator must stop rather
// than skip it: skipping would lose a committed message.
var ErrUnplannable = errors.New("dispatch: envelope cannot be planned")

// Plan returns one GroupDispatch per target MailboxShard of a committed message, ordered by shard.
// Direct messages go to the shards of both participants; the sender's own copy carries the
// client_message_id so the sender's other devices can reconcile, and the MailboxNode writes that
// anchor only into the entry of recipient == sender. The body is inlined when the whole audience
// times the body size fits the inline budget, so every shard of a message decides the same way.
func Plan(env *internalv1.CommittedEnvelope, shards contract.ShardCount, sourceOffset int64) ([]*internalv1.GroupDispatch, error) {
	rec := env.GetRecord()
	if env.GetSchemaVersion() != 1 || rec == nil {
		return nil, fmt.Errorf("%w: schema_version %d", ErrUnplannable, env.GetSchemaVersion())
	}
	mid, err := contract.ParseMessageID(rec.GetMessageId())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnplannable, err)
	}
	tenant, err := contract.U128FromBytes(rec.GetTenantId())
	if err != nil {
		return nil, fmt.Errorf("%w: tenant: %v", ErrUnplannable, err)
	}
	audience, err := recipients(env)
	if err != nil {
		return nil, err
	}
	byShard := map[uint32][]uint64{}
	for _, u := range audience {
		s := shards.UserShard(tenant, contract.UserID(u))
		byShard[s] = append(byShard[s], u)
	}
	order := make([]uint32, 0, len(byShard))
	for s := range byShard {
		order = append(order, s)
	}
	slices.Sort(order)
	if g := env.GetAudience().GetGroup(); g != nil && !slices.Equal(order, g.GetTargetShards()) {
		// Routed with another shard count than this process, or damaged: planning from it would
		// put entries where no reader looks.
		return nil, fmt.Errorf("%w: group audience target_shards disagree with this process's %d shards", ErrUnplannable, shards)
	}
	inline := len(audience)*len(rec.GetBody()) <= contract.InlineBodyBudgetBytes
	out := make([]*internalv1.GroupDispatch, 0, len(order))
	for _, s := range order {
		recips := slices.Clone(byShard[s])
		slices.Sort(recips)
		d := build(rec, mid, s, recips, inline, sourceOffset)
		if d.PayloadDigest, err = Digest(d); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// recipients is the frozen audience of an envelope: a direct message's participants, or a group
// message's recipients by value, which must be a sorted set of member_count ids (Plan checks its
// target shards while it routes them).
func recipients(env *internalv1.CommittedEnvelope) ([]uint64, error) {
	if d := env.GetAudience().GetDirect(); d != nil {
		if len(d.GetRecipientUserIds()) == 0 {
			return nil, fmt.Errorf("%w: empty direct audience", ErrUnplannable)
		}
		return d.GetRecipientUserIds(), nil
	}
	g := env.GetAudience().GetGroup()
	if g == nil {
		return nil, fmt.Errorf("%w: no audience", ErrUnplannable)
	}
	recips := g.GetRecipientUserIds()
	if len(recips) == 0 || int(g.GetMemberCount()) != len(recips) || !slices.IsSorted(recips) ||
		len(slices.Compact(slices.Clone(recips))) != len(recips) {
		return nil, fmt.Errorf("%w: group audience of %d recipients (member_count %d) is not a sorted set", ErrUnplannable, len(recips), g.GetMemberCount())
	}
	return recips, nil
}

func build(rec *internalv1.MessageRecord, mid contract.MessageID, shard uint32, recips []uint64, inline bool, off int64) *internalv1.GroupDispatch {
	did := contract.NewDispatchID(mid, shard).Bytes()
	d := &internalv1.GroupDispatch{
		SchemaVersion: SchemaVersion, DispatchId: did[:], Shard: shard, MessageId: rec.GetMessageId(),
		ConversationId: rec.GetConversationId(), ConversationSeq: rec.GetConversationSeq(), Recipients: recips,
		MessageType: rec.GetMessageType(), SenderUserId: rec.GetSenderUserId(), ClientMessageId: rec.GetClientMessageId(),
		TenantId: rec.GetTenantId(), CreatedAtMs: rec.GetCreatedAtMs(), CustomType: rec.GetCustomType(),
		SenderDeviceId: rec.GetSenderDeviceId(), TraceId: rec.GetTraceId(), MembershipVersion: rec.GetMembershipVersion(),
		SourceOffset: off,
	}
	if inline {
		d.Body = slices.Clone(rec.GetBody())
		if d.Body == nil {
			d.Body = []byte{}
		}
	}
	return d
}

// Digest is payload_digest: blake3 over the deterministic encoding of the dispatch with the digest
// and the source offset cleared. The offset is where this copy sits in the Outbox, not what it
// says, so a duplicate Outbox record yields the same digest.
func Digest(d *internalv1.GroupDispatch) ([]byte, error) {
	c := proto.Clone(d).(*internalv1.GroupDispatch)
	c.PayloadDigest, c.SourceOffset = nil, 0
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("dispatch: encode for digest: %w", err)
	}
	h := blake3.New(32, nil)
	_, _ = h.Write([]byte(contract.DomainDispatchDigest))
	_, _ = h.Write(b)
	return h.Sum(nil), nil
}

// ErrDigestMismatch is returned by Verify when a dispatch's content does not match its digest.
var ErrDigestMismatch = errors.New("dispatch: payload_digest does not match the dispatch")

// Verify recomputes the digest and checks the dispatch_id derivation.
func Verify(d *internalv1.GroupDispatch) error {
	want, err := Digest(d)
	if err != nil {
		return err
	}
	if string(want) != string(d.GetPayloadDigest()) {
		return ErrDigestMismatch
	}
	mid, err := contract.ParseMessageID(d.GetMessageId())
	if err != nil {
		return fmt.Errorf("dispatch: %w", err)
	}
	if id := contract.NewDispatchID(mid, d.GetShard()).Bytes(); string(id[:]) != string(d.GetDispatchId()) {
		return fmt.Errorf("dispatch: dispatch_id is not derived from (message_id, shard)")
	}
	return nil
}
