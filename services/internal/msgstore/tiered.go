package msgstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// Tiered reads (ADR-0022). Each conversation has a hot floor F that only rises, in the trim
// script that deletes the records below it: seqs ≤ F are read from the Archive only, seqs above F
// from Redis only. F = 0 (never trimmed) reads exactly as before tiering. A read takes F, reads
// both tiers, and takes F again in its last round trip: a trim in between would have removed
// index members the walk already passed, so the read starts over instead of returning a page
// with a silent hole. Any record a tier needs that is missing or corrupt fails the whole read.

// ErrNoArchive: the conversation has history below its hot floor, and this Store has no
// Archive to read it from (a service wired without CQL on a trimmed deployment). Fail closed.
var ErrNoArchive = errors.New("msgstore: history below the hot floor needs the archive tier, which is not configured")

// ErrFloorMoving: the hot floor rose during every one of maxFloorRetries reads in a row.
var ErrFloorMoving = errors.New("msgstore: the hot floor moved during the read")

const maxFloorRetries = 3

// ArchivedRecord is one complete MessageRecord from the archive tier.
type ArchivedRecord struct {
	Seq uint64
	Raw []byte
}

// Archive is the archive tier as history reads need it (cqlstore.HistoryTier implements it on
// CQL). Both ranges hold after < seq ≤ upTo and at most limit records, and fail as a whole on a
// missing or corrupt record. scanned says how far the read got: Ascending's every seq in
// (after, scanned] and Descending's every seq in (scanned, upTo] is in the page or absent; a
// read that stopped early (page full, or a long run of empty buckets) has scanned short of the
// end.
type Archive interface {
	Ascending(ctx context.Context, tenant contract.TenantID, conv contract.ConversationID, after, upTo uint64, limit int) (page []ArchivedRecord, scanned uint64, err error)
	Descending(ctx context.Context, tenant contract.TenantID, conv contract.ConversationID, after, upTo uint64, limit int) (page []ArchivedRecord, scanned uint64, err error)
}

// WithArchive gives the Store its archive tier. Default none: a read that needs history below a
// conversation's hot floor then fails with ErrNoArchive (never an empty or shortened answer).
func WithArchive(a Archive) Option { return func(s *Store) { s.archive = a } }

// checkArchived verifies archive records like hot ones: the record decodes and names the
// conversation and seq the archive returned it under.
func checkArchived(tenant contract.TenantID, conv contract.ConversationID, recs []ArchivedRecord) error {
	cid := conv.Bytes()
	var rec internalv1.MessageRecord
	for _, r := range recs {
		if err := proto.Unmarshal(r.Raw, &rec); err != nil {
			return &CorruptError{Tenant: tenant, Conversation: conv, Seq: r.Seq, Reason: "archived record does not decode as MessageRecord"}
		}
		if rec.GetConversationSeq() != r.Seq || !bytes.Equal(rec.GetConversationId(), cid[:]) {
			return &CorruptError{Tenant: tenant, Conversation: conv, Seq: r.Seq, Reason: "archived record's conversation or seq disagrees with its position"}
		}
	}
	return nil
}

func (s *Store) ascending(ctx context.Context, q HistoryQuery, after, upTo uint64, limit int) ([]ArchivedRecord, uint64, error) {
	if s.archive == nil {
		return nil, 0, ErrNoArchive
	}
	recs, scanned, err := s.archive.Ascending(ctx, q.Tenant, q.Conversation, after, upTo, limit)
	if err != nil {
		return nil, 0, fmt.Errorf("msgstore: archive tier: %w", err)
	}
	return recs, scanned, checkArchived(q.Tenant, q.Conversation, recs)
}

func (s *Store) descending(ctx context.Context, tenant contract.TenantID, conv contract.ConversationID, after, upTo uint64, limit int) ([]ArchivedRecord, uint64, error) {
	if s.archive == nil {
		return nil, 0, ErrNoArchive
	}
	recs, scanned, err := s.archive.Descending(ctx, tenant, conv, after, upTo, limit)
	if err != nil {
		return nil, 0, fmt.Errorf("msgstore: archive tier: %w", err)
	}
	return recs, scanned, checkArchived(tenant, conv, recs)
}

// retryOnFloorMove runs read until the hot floor did not move under it.
func retryOnFloorMove[T any](read func() (T, bool, error)) (T, error) {
	for range maxFloorRetries {
		v, moved, err := read()
		if err != nil || !moved {
			return v, err
		}
	}
	var zero T
	return zero, ErrFloorMoving
}
