package mailbox

import (
	"fmt"
	"slices"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/dispatch"
	"github.com/qim-dev/qim/services/mailbox/mailboxstore"
)

// decodeDispatch decodes and checks one qim.dispatch record. Everything materialization relies on
// is verified here, before anything is written: the digest and dispatch_id derivation, that the
// record sits on its shard's partition, that every recipient lives on that shard, and the fields
// the entries copy. Any failure wraps ErrBadDispatch.
func decodeDispatch(rec commitlog.Record, shards contract.ShardCount) (*internalv1.GroupDispatch, contract.TenantID, error) {
	bad := func(format string, args ...any) (*internalv1.GroupDispatch, contract.TenantID, error) {
		return nil, contract.TenantID{}, fmt.Errorf("%w: %s", ErrBadDispatch, fmt.Sprintf(format, args...))
	}
	d := &internalv1.GroupDispatch{}
	if err := proto.Unmarshal(rec.Value, d); err != nil {
		return bad("decode: %v", err)
	}
	if d.GetSchemaVersion() != dispatch.SchemaVersion {
		return bad("schema_version %d (this build reads %d)", d.GetSchemaVersion(), dispatch.SchemaVersion)
	}
	if int64(d.GetShard()) != int64(rec.Partition) {
		return bad("dispatch for shard %d found on partition %d", d.GetShard(), rec.Partition)
	}
	if err := dispatch.Verify(d); err != nil {
		return bad("%v", err)
	}
	tenant, err := contract.U128FromBytes(d.GetTenantId())
	if err != nil {
		return bad("tenant: %v", err)
	}
	if _, err := contract.ParseConversationID(d.GetConversationId()); err != nil {
		return bad("%v", err)
	}
	if _, err := contract.NewConversationSeq(d.GetConversationSeq()); err != nil {
		return bad("%v", err)
	}
	if _, err := contract.ParseClientMessageID(d.GetClientMessageId()); err != nil {
		return bad("sender anchor: %v", err) // v1 dispatches without it cannot be materialized safely
	}
	switch r := d.GetRecipients(); {
	case d.GetCreatedAtMs() <= 0:
		return bad("created_at_ms %d", d.GetCreatedAtMs())
	case len(d.Body) > contract.InlineBodyBudgetBytes:
		return bad("inline body of %d bytes exceeds the %d-byte budget", len(d.Body), contract.InlineBodyBudgetBytes)
	case len(d.GetCustomType()) > contract.CustomTypeMaxBytes || !utf8.ValidString(d.GetCustomType()):
		return bad("custom_type not valid UTF-8 of at most %d bytes", contract.CustomTypeMaxBytes)
	case len(r) == 0 || !slices.IsSorted(r) || len(slices.Compact(slices.Clone(r))) != len(r):
		return bad("recipients must be non-empty, ascending and unique")
	}
	for _, u := range d.GetRecipients() {
		if s := shards.UserShard(tenant, contract.UserID(u)); s != d.GetShard() {
			return bad("recipient of shard %d in a dispatch for shard %d", s, d.GetShard())
		}
	}
	return d, tenant, nil
}

// buildMaterialization turns a verified dispatch at offset into one entry per recipient, each
// carrying mailbox_seq = compose(epoch, offset): that is the seq when the record is fresh, and a
// duplicate writes no entries (the store reuses the first record's). Only the sender's own entry
// carries the client_message_id anchor; the body is inline only when the dispatch inlined it.
// With push set, it also returns the push target of each recipient.
func buildMaterialization(d *internalv1.GroupDispatch, tenant contract.TenantID, epoch uint16, offset, prev int64, push bool) (mailboxstore.Materialization, []*internalv1.PushTarget, error) {
	did, _ := contract.U128FromBytes(d.GetDispatchId()) // length checked by dispatch.Verify
	m := mailboxstore.Materialization{Shard: d.GetShard(), Epoch: epoch, Offset: offset, PrevOffset: prev,
		DispatchID: contract.DispatchID(did), Digest: d.GetPayloadDigest(), CreatedAtMs: d.GetCreatedAtMs()}
	seq, err := m.Seq()
	if err != nil {
		return m, nil, err
	}
	e := &internalv1.MailboxEntry{
		EventType: uint32(contract.EventMessage), MailboxSeq: uint64(seq), MessageId: d.GetMessageId(),
		ConversationId: d.GetConversationId(), ConversationSeq: d.GetConversationSeq(), SenderUserId: d.GetSenderUserId(),
		MessageType: d.GetMessageType(), CustomType: d.GetCustomType(), Body: d.Body, DispatchId: d.GetDispatchId(),
		CreatedAtMs: d.GetCreatedAtMs(),
	}
	var targets []*internalv1.PushTarget
	tb := tenant.Bytes()
	opts := proto.MarshalOptions{Deterministic: true}
	m.Entries = make([]mailboxstore.Entry, 0, len(d.GetRecipients()))
	for _, u := range d.GetRecipients() {
		e.ClientMessageId = nil
		if u == d.GetSenderUserId() {
			e.ClientMessageId = d.GetClientMessageId()
		}
		v, err := opts.Marshal(e)
		if err != nil {
			return m, nil, fmt.Errorf("mailbox: encode entry: %w", err)
		}
		m.Entries = append(m.Entries, mailboxstore.Entry{Tenant: tenant, User: contract.UserID(u),
			EventType: contract.EventMessage, Value: v})
		if push {
			targets = append(targets, &internalv1.PushTarget{TenantId: tb[:], UserId: u,
				Events: []*qimv1.MailboxEvent{eventOf(e)}})
		}
	}
	return m, targets, nil
}

// eventOf is the device's view of a stored entry (MAILBOX_BATCH and PUSH_EVENTS alike).
func eventOf(e *internalv1.MailboxEntry) *qimv1.MailboxEvent {
	ev := &qimv1.MailboxEvent{
		MailboxSeq: e.GetMailboxSeq(), EventType: e.GetEventType(), MessageId: e.GetMessageId(),
		ConversationId: e.GetConversationId(), ConversationSeq: e.GetConversationSeq(), SenderUserId: e.GetSenderUserId(),
		MessageType: e.GetMessageType(), CustomType: e.GetCustomType(), Body: e.Body, SentAtMs: e.GetCreatedAtMs(),
	}
	if u, err := contract.U128FromBytes(e.GetClientMessageId()); err == nil && !u.IsZero() {
		ev.ClientMessageId = e.GetClientMessageId() // other recipients' copies stay empty, never zeros
	}
	return ev
}
