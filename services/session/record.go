package session

import (
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/dispatch"
)

// projection is what one dispatch record changes: the conversation's activity in every
// recipient's list, and the sender's read watermark when the sender is a recipient here.
type projection struct {
	tenant     contract.TenantID
	conv       contract.ConversationID
	seq        uint64
	activity   contract.MessageID
	sender     contract.UserID
	recipients []uint64
}

// decodeDispatch validates a record before anything is written for it: schema, partition =
// shard, the digest and dispatch_id (dispatch.Verify), ids, and recipients all of that shard
// (the MailboxNode checks the same): a recipient of another shard is served by another instance,
// which would never get the dirty marker of the row written here. A record that fails stops the
// projection (ErrBadDispatch); skipping it would lose a conversation from lists.
func decodeDispatch(rec commitlog.Record, shards contract.ShardCount) (projection, error) {
	bad := func(format string, args ...any) (projection, error) {
		return projection{}, fmt.Errorf("%w: %s", ErrBadDispatch, fmt.Sprintf(format, args...))
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
	p := projection{seq: d.GetConversationSeq(), sender: contract.UserID(d.GetSenderUserId()), recipients: d.GetRecipients()}
	var err error
	if p.tenant, err = contract.U128FromBytes(d.GetTenantId()); err != nil {
		return bad("tenant: %v", err)
	}
	if p.conv, err = contract.ParseConversationID(d.GetConversationId()); err != nil {
		return bad("%v", err)
	}
	if p.activity, err = contract.ParseMessageID(d.GetMessageId()); err != nil {
		return bad("%v", err)
	}
	if _, err := contract.NewConversationSeq(p.seq); err != nil || p.seq == 0 {
		return bad("conversation_seq %d", p.seq)
	}
	if r := p.recipients; len(r) == 0 || !slices.IsSorted(r) || len(slices.Compact(slices.Clone(r))) != len(r) || r[0] == 0 {
		return bad("recipients must be non-empty, ascending, unique and non-zero")
	}
	if p.activity.TimeMs() == 0 { // the activity score; a zero time would sort below every list
		return bad("message_id has time_ms 0")
	}
	for _, u := range p.recipients {
		if s := shards.UserShard(p.tenant, contract.UserID(u)); s != d.GetShard() {
			return bad("recipient of shard %d in a dispatch for shard %d", s, d.GetShard())
		}
	}
	return p, nil
}
