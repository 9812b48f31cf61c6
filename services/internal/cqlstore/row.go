package cqlstore

import (
	"fmt"
	"math"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// Row is one archived message: its message_record row (Record, the canonical MessageRecord
// bytes) and its history_index row (the other fields).
type Row struct {
	Tenant       contract.TenantID
	Conversation contract.ConversationID
	Seq          uint64 // conversation_seq, > 0, bit 63 zero
	MessageID    contract.MessageID
	Sender       contract.UserID
	MessageType  uint32 // raw, unknown values kept
	Flags        uint32
	CreatedAtMs  int64
	Retention    contract.RetentionClass
	Record       []byte // deterministic proto encoding of the MessageRecord
}

// Bucket is the row's seq_bucket: its CQL partition within the conversation.
func (r *Row) Bucket() int64 { return int64(r.Seq / contract.MessageSeqBucketWidth) }

// RowFromRecord checks a committed MessageRecord and builds its row. A record without the
// fields every reader relies on is ErrInvalid: archiving it would store what no page can serve.
func RowFromRecord(rec *internalv1.MessageRecord) (Row, error) {
	tenant, err1 := contract.U128FromBytes(rec.GetTenantId())
	conv, err2 := contract.U128FromBytes(rec.GetConversationId())
	mid, err3 := contract.U128FromBytes(rec.GetMessageId())
	seq := rec.GetConversationSeq()
	switch {
	case err1 != nil || err2 != nil || err3 != nil:
		return Row{}, fmt.Errorf("%w: tenant, conversation and message ids must be 16 bytes", ErrInvalid)
	case seq == 0 || seq > math.MaxInt64:
		return Row{}, fmt.Errorf("%w: conversation_seq %d not in [1, 2^63)", ErrInvalid, seq)
	case rec.GetCreatedAtMs() <= 0:
		return Row{}, fmt.Errorf("%w: created_at_ms %d at seq %d", ErrInvalid, rec.GetCreatedAtMs(), seq)
	case rec.GetSenderUserId() == 0 || rec.GetSenderUserId() > math.MaxInt64:
		return Row{}, fmt.Errorf("%w: sender %d at seq %d", ErrInvalid, rec.GetSenderUserId(), seq)
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(rec)
	if err != nil {
		return Row{}, fmt.Errorf("%w: encode record at seq %d: %v", ErrInvalid, seq, err)
	}
	return Row{
		Tenant: tenant, Conversation: contract.ConversationID(conv), Seq: seq, MessageID: contract.MessageID(mid),
		Sender: contract.UserID(rec.GetSenderUserId()), MessageType: rec.GetMessageType(), Flags: rec.GetFlags(),
		CreatedAtMs: rec.GetCreatedAtMs(), Retention: contract.RetentionClass(rec.GetRetentionClass()), Record: b,
	}, nil
}

// TTL is the row's remaining retention at now, in whole seconds, rounded up: 0 means the row
// never expires (a compliance hold, or a class this binary does not know — never guess a
// deletion), and expired reports a row whose retention already ended, which is not written at
// all (a TTL of 0 would make it permanent). A late archive still expires at the original time.
func (r *Row) TTL(now time.Time) (ttl int, expired bool) {
	var keep time.Duration
	switch r.Retention {
	case contract.RetentionDefault:
		keep = contract.HistoryRetention
	case contract.RetentionEphemeral24h:
		keep = contract.EphemeralRetention
	default:
		return 0, false
	}
	left := time.UnixMilli(r.CreatedAtMs).Add(keep).Sub(now)
	if left <= 0 {
		return 0, true
	}
	return int((left + time.Second - 1) / time.Second), false
}
