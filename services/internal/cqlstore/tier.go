package cqlstore

import (
	"context"
	"fmt"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/msgstore"
)

// RangeDesc is Range newest first: the archived messages with after < seq ≤ upTo, descending,
// at most limit, and scannedFrom: every seq in (scannedFrom, upTo] is in the page or absent
// (scannedFrom == after when the range is complete). It stops, like Range, when the page fills
// or contract.HistoryMaxEmptyBucketScan buckets in a row held nothing.
func (st *Store) RangeDesc(ctx context.Context, tenant contract.TenantID, conv contract.ConversationID,
	after, upTo uint64, limit int) (page []Archived, scannedFrom uint64, err error) {
	if limit < 1 || upTo <= after {
		return nil, upTo, fmt.Errorf("%w: range (%d, %d] limit %d", ErrInvalid, after, upTo, limit)
	}
	const w = contract.MessageSeqBucketWidth
	t, c := tenant.Bytes(), conv.Bytes()
	scannedFrom, empty := upTo, 0
	for b := upTo / w; ; b-- {
		got, err := st.bucket(ctx, t[:], c[:], int64(b), after, upTo, limit-len(page), true)
		if err != nil {
			return nil, upTo, err
		}
		page = append(page, got...)
		if len(page) == limit {
			return page, page[len(page)-1].Seq - 1, nil
		}
		scannedFrom = after // bucket 0 read: nothing lies below it
		if b > 0 {
			scannedFrom = max(after, b*w-1) // seqs ≥ b*w are read; b*w-1 tops the next bucket
		}
		empty++
		if len(got) > 0 {
			empty = 0
		}
		if b <= (after+1)/w || empty == contract.HistoryMaxEmptyBucketScan {
			break
		}
	}
	return page, scannedFrom, nil
}

// HistoryTier is the archive as msgstore's tiered reads use it.
func HistoryTier(st *Store) msgstore.Archive { return tier{st} }

type tier struct{ st *Store }

func (t tier) Ascending(ctx context.Context, tenant contract.TenantID, conv contract.ConversationID, after, upTo uint64, limit int) ([]msgstore.ArchivedRecord, uint64, error) {
	page, scanned, err := t.st.Range(ctx, tenant, conv, after, upTo, limit)
	return raws(page), scanned, err
}

func (t tier) Descending(ctx context.Context, tenant contract.TenantID, conv contract.ConversationID, after, upTo uint64, limit int) ([]msgstore.ArchivedRecord, uint64, error) {
	page, scanned, err := t.st.RangeDesc(ctx, tenant, conv, after, upTo, limit)
	return raws(page), scanned, err
}

func raws(page []Archived) []msgstore.ArchivedRecord {
	out := make([]msgstore.ArchivedRecord, len(page))
	for i, a := range page {
		out[i] = msgstore.ArchivedRecord{Seq: a.Seq, Raw: a.Raw}
	}
	return out
}
