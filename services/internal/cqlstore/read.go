package cqlstore

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// Archived is one message read back from the archive.
type Archived struct {
	Seq    uint64
	Sender contract.UserID
	Record *internalv1.MessageRecord
	Raw    []byte // the record's bytes as stored
}

// Range returns the archived messages of one conversation with after < seq ≤ upTo, ascending,
// at most limit, and scannedTo: every seq in (after, scannedTo] is known to be in the page or
// absent. scannedTo < upTo means "continue from scannedTo": the page filled, or
// contract.HistoryMaxEmptyBucketScan buckets in a row held nothing (conversation_seq may have
// holes, and a range over empty buckets must not cost one read per bucket forever).
//
// It reads the index, then the records of the same seqs, bucket by bucket, and fails as a whole
// (ErrCorrupt) when an indexed record is missing, does not decode, or names another position or
// message: a page with a silent hole is never returned.
func (st *Store) Range(ctx context.Context, tenant contract.TenantID, conv contract.ConversationID,
	after, upTo uint64, limit int) (page []Archived, scannedTo uint64, err error) {
	if limit < 1 || upTo <= after {
		return nil, after, fmt.Errorf("%w: range (%d, %d] limit %d", ErrInvalid, after, upTo, limit)
	}
	const w = contract.MessageSeqBucketWidth
	t, c := tenant.Bytes(), conv.Bytes()
	scannedTo, empty := after, 0
	for b := (after + 1) / w; b <= upTo/w; b++ {
		got, err := st.bucket(ctx, t[:], c[:], int64(b), after, upTo, limit-len(page), false)
		if err != nil {
			return nil, after, err
		}
		page = append(page, got...)
		if len(page) == limit {
			return page, page[len(page)-1].Seq, nil
		}
		scannedTo = min(upTo, (b+1)*w-1)
		empty++
		if len(got) > 0 {
			empty = 0
		}
		if empty == contract.HistoryMaxEmptyBucketScan {
			break
		}
	}
	return page, scannedTo, nil
}

type indexRow struct {
	seq    int64
	mid    []byte
	sender int64
}

// bucket reads one bucket's index rows in (after, upTo] (ascending, or descending when desc),
// then their records.
func (st *Store) bucket(ctx context.Context, t, c []byte, b int64, after, upTo uint64, limit int, desc bool) ([]Archived, error) {
	q := `SELECT conversation_seq, message_id, sender_user_id FROM history_index
		WHERE tenant_id = ? AND conversation_id = ? AND seq_bucket = ? AND conversation_seq > ? AND conversation_seq <= ?
		LIMIT ?`
	if desc {
		q = `SELECT conversation_seq, message_id, sender_user_id FROM history_index
		WHERE tenant_id = ? AND conversation_id = ? AND seq_bucket = ? AND conversation_seq > ? AND conversation_seq <= ?
		ORDER BY conversation_seq DESC LIMIT ?`
	}
	it := st.s.Query(q, t, c, b, int64(after), int64(upTo), limit).WithContext(ctx).Iter()
	var idx []indexRow
	var r indexRow
	for it.Scan(&r.seq, &r.mid, &r.sender) {
		idx = append(idx, r)
		r = indexRow{}
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("cqlstore: read history_index bucket %d: %w", b, err)
	}
	if len(idx) == 0 {
		return nil, nil
	}
	lo, hi := idx[0].seq, idx[len(idx)-1].seq
	if desc {
		lo, hi = hi, lo
	}
	recs, err := st.records(ctx, t, c, b, lo, hi)
	if err != nil {
		return nil, err
	}
	out := make([]Archived, 0, len(idx))
	for _, ir := range idx {
		raw, ok := recs[ir.seq]
		if !ok {
			return nil, fmt.Errorf("%w: seq %d is indexed but its message_record is missing (bucket %d)", ErrCorrupt, ir.seq, b)
		}
		var rec internalv1.MessageRecord
		if err := proto.Unmarshal(raw, &rec); err != nil {
			return nil, fmt.Errorf("%w: message_record at seq %d does not decode: %v", ErrCorrupt, ir.seq, err)
		}
		if rec.GetConversationSeq() != uint64(ir.seq) || string(rec.GetMessageId()) != string(ir.mid) {
			return nil, fmt.Errorf("%w: message_record at seq %d names seq %d or another message", ErrCorrupt, ir.seq, rec.GetConversationSeq())
		}
		out = append(out, Archived{Seq: uint64(ir.seq), Sender: contract.UserID(ir.sender), Record: &rec, Raw: raw})
	}
	return out, nil
}

func (st *Store) records(ctx context.Context, t, c []byte, b, lo, hi int64) (map[int64][]byte, error) {
	it := st.s.Query(`SELECT conversation_seq, record FROM message_record
		WHERE tenant_id = ? AND conversation_id = ? AND seq_bucket = ? AND conversation_seq >= ? AND conversation_seq <= ?`,
		t, c, b, lo, hi).WithContext(ctx).Iter()
	recs := map[int64][]byte{}
	var seq int64
	var raw []byte
	for it.Scan(&seq, &raw) {
		recs[seq] = raw
		raw = nil
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("cqlstore: read message_record bucket %d: %w", b, err)
	}
	return recs, nil
}
