package writer

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/msgstore"
)

// envelopeSchemaVersion is CommittedEnvelope.schema_version written by this build.
const envelopeSchemaVersion = 1

// Field numbers of CommittedEnvelope and FrozenAudience/DirectAudience (records.proto). The
// envelope is assembled from the stored record bytes as they are, so the Outbox carries exactly
// the canonical record the commit holds; decoding and re-encoding it could drop unknown fields.
const (
	envFieldSchema    = 1
	envFieldRecord    = 2
	envFieldAudience  = 3
	envFieldCommitted = 4
	audFieldDirect    = 1
	dirFieldRecipient = 1
)

// envelope builds the Outbox value: the complete canonical record plus the audience frozen at
// commit. A direct message's audience is both participants — each gets a mailbox entry, the
// sender's own copy being the reconciliation anchor for its other devices — in ascending order.
// committed_at_ms is the reservation time, so every replay of one commit produces identical bytes.
func envelope(record []byte, sender, peer contract.UserID, reservedAtMs int64) ([]byte, error) {
	if len(record) == 0 {
		return nil, fmt.Errorf("writer: commit has no stored record")
	}
	a, b := sender, peer
	if a > b {
		a, b = b, a
	}
	var recips []byte
	recips = protowire.AppendTag(recips, dirFieldRecipient, protowire.BytesType)
	packed := protowire.AppendVarint(nil, uint64(a))
	if b != a {
		packed = protowire.AppendVarint(packed, uint64(b))
	}
	recips = protowire.AppendBytes(recips, packed)
	aud := protowire.AppendTag(nil, audFieldDirect, protowire.BytesType)
	aud = protowire.AppendBytes(aud, recips)
	return assemble(record, aud, reservedAtMs), nil
}

// assemble is the envelope around the stored record bytes and an encoded FrozenAudience.
func assemble(record, aud []byte, reservedAtMs int64) []byte {
	out := make([]byte, 0, len(record)+len(aud)+32)
	out = protowire.AppendTag(out, envFieldSchema, protowire.VarintType)
	out = protowire.AppendVarint(out, envelopeSchemaVersion)
	out = protowire.AppendTag(out, envFieldRecord, protowire.BytesType)
	out = protowire.AppendBytes(out, record)
	out = protowire.AppendTag(out, envFieldAudience, protowire.BytesType)
	out = protowire.AppendBytes(out, aud)
	out = protowire.AppendTag(out, envFieldCommitted, protowire.VarintType)
	out = protowire.AppendVarint(out, uint64(reservedAtMs))
	return out
}

// participants reads sender and direct peer back from a stored record; the recovery loop has no
// client request to take them from.
func participants(record []byte) (sender, peer contract.UserID, err error) {
	var r internalv1.MessageRecord
	if err := proto.Unmarshal(record, &r); err != nil {
		return 0, 0, fmt.Errorf("writer: decode stored record: %w", err)
	}
	if r.GetSenderUserId() == 0 || r.GetDirectPeerUserId() == 0 {
		return 0, 0, fmt.Errorf("writer: stored record lacks sender or direct peer")
	}
	return contract.UserID(r.GetSenderUserId()), contract.UserID(r.GetDirectPeerUserId()), nil
}

// key is the commit's idempotency key in the store.
func (c *sendCmd) key() msgstore.CommitKey {
	return msgstore.CommitKey{Tenant: c.tenant, Sender: c.sender, ClientMessageID: c.cmid, Conversation: c.conversation}
}

// outboxBound is the most key+value bytes the Outbox record of a send can take, from the length
// of its canonical record before reserve: the 16-byte message_id key; the record, which the
// reserve script lengthens by conversation_seq (a tag and at most 10 varint bytes) and, in a
// group, membership_version (2 tag bytes and at most 10); the envelope's tags, length prefixes,
// schema and committed_at_ms; and the audience: a direct message's two participants, or a
// group's GroupAudience with at most GroupMaxMembers recipients (10 varint bytes each) and as
// many target shards (5 each). Over-counting costs a group message at most about 15 KB of body
// it could have had; under-counting would let a commit be reserved that can never be produced.
func outboxBound(recordLen int, group bool) int {
	const (
		key        = 16
		seqField   = 1 + 10
		envelope   = 2 + 2 + 5 + 2 + 5 + 2 + 10                       // schema, record tag + length, audience tag + length, committed_at_ms
		direct     = 2 + 2 + 2*10                                     // DirectAudience with two varints
		groupFixed = 2 + 10 + 2 + 18 + 2 + 10 + 1 + 5 + 2 + 5 + 2 + 5 // field 17; GroupAudience tags, id, version, count, packed lengths
	)
	n := key + recordLen + seqField + envelope
	if !group {
		return n + direct
	}
	return n + groupFixed + contract.GroupMaxMembers*(10+5)
}
