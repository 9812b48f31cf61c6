package archiver

import (
	"context"
	"fmt"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/cqlstore"
)

// auditConversation reads the archive over the span of the conversation's audited seqs and
// counts each position as archived, expired, missing or mismatched.
func auditConversation(ctx context.Context, st *cqlstore.Store, k convKey, want map[uint64]auditRow,
	now time.Time, res *AuditResult) error {
	lo, hi := ^uint64(0), uint64(0)
	for s := range want {
		lo, hi = min(lo, s), max(hi, s)
	}
	got := map[uint64]contract.MessageID{}
	for after := lo - 1; after < hi; {
		page, scanned, err := st.Range(ctx, k.tenant, k.conv, after, hi, 1000)
		if err != nil {
			return fmt.Errorf("archiver: audit conversation %s: %w", contract.U128(k.conv), err)
		}
		for _, a := range page {
			mid, err := contract.U128FromBytes(a.Record.GetMessageId())
			if err != nil {
				return fmt.Errorf("archiver: audit conversation %s seq %d: %w", contract.U128(k.conv), a.Seq, err)
			}
			got[a.Seq] = contract.MessageID(mid)
		}
		after = scanned
	}
	for s, row := range want {
		mid, ok := got[s]
		_, expired := row.TTL(now)
		switch {
		case expired:
			res.Expired++
		case !ok:
			res.Missing++
			res.finding("missing", k, s, row.offset)
		case mid != row.MessageID:
			res.Mismatch++
			res.finding("mismatch", k, s, row.offset)
		default:
			res.Archived++
		}
		delete(got, s)
	}
	res.Extra += len(got)
	return nil
}

func (r *AuditResult) finding(kind string, k convKey, seq uint64, offset int64) {
	if len(r.Findings) < MaxAuditFindings {
		r.Findings = append(r.Findings, AuditFinding{Kind: kind, Conversation: contract.U128(k.conv).String(), Seq: seq, Offset: offset})
	}
}
