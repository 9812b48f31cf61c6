package e2e

import (
	"context"
	"errors"
	"fmt"

	"github.com/gocql/gocql"

	"github.com/qim-dev/qim/contract"
)

// The archive's layout as the HistoryArchiver writes it (services/internal/cqlstore, schema
// version 1): the scenario damages one record directly, as a disk or an operator could.
const (
	archiveKeyspace = "qim"
	recordSelect    = `SELECT record FROM qim.message_record WHERE tenant_id = ? AND conversation_id = ? AND seq_bucket = ? AND conversation_seq = ?`
	recordUpdate    = `UPDATE qim.message_record SET record = ? WHERE tenant_id = ? AND conversation_id = ? AND seq_bucket = ? AND conversation_seq = ?`
)

// archiveSession connects to the stack's CQL node.
func (e *Env) archiveSession() (*gocql.Session, error) {
	c, err := e.cqlCluster()
	if err != nil {
		return nil, err
	}
	c.ProtoVersion, c.Keyspace, c.Consistency = 4, archiveKeyspace, gocql.LocalQuorum
	c.DisableInitialHostLookup = true
	return c.CreateSession()
}

// scenarioArchiveMissing: with one archived record unreadable, every page that covers it fails
// as a whole with INTERNAL (never a shorter page), a page beside it still reads, and once the
// record is back the whole history reads again.
func scenarioArchiveMissing(ctx context.Context, e *Env) error {
	alice, bob := e.User(), e.User()
	ca, _, err := e.Login(ctx, alice, "a1", 0)
	if err != nil {
		return err
	}
	defer ca.Close()
	acks, err := trimmedConversation(ctx, e, ca, bob, 20)
	if err != nil {
		return err
	}
	s, err := e.archiveSession()
	if err != nil {
		return fmt.Errorf("e2e: connect to the archive at %s: %w", e.CQL, err)
	}
	defer s.Close()
	tb, cid, seq := e.Tenant.Bytes(), acks[4].GetConversationId(), acks[4].GetConversationSeq()
	pos := []any{tb[:], cid, int64(seq / contract.MessageSeqBucketWidth), int64(seq)}
	var original []byte
	if err := s.Query(recordSelect, pos...).WithContext(ctx).Scan(&original); err != nil {
		return fmt.Errorf("e2e: read archived seq %d: %w", seq, err)
	}
	if err := s.Query(recordUpdate, append([]any{[]byte{0x0a}}, pos...)...).WithContext(ctx).Exec(); err != nil {
		return err
	}
	restored := false
	defer func() {
		if !restored {
			_ = s.Query(recordUpdate, append([]any{original}, pos...)...).Exec()
		}
	}()
	cb, _, err := e.Login(ctx, bob, "b1", 0)
	if err != nil {
		return err
	}
	defer cb.Close()
	for _, dir := range []historyDirection{historyNewer, historyOlder} {
		got, err := cb.HistoryPaged(ctx, cid, dir, 50)
		var se *ServerError
		if !errors.As(err, &se) || se.Code != contract.ErrCodeInternal {
			return fmt.Errorf("history %v over a damaged archive record = %d records, %v; want INTERNAL for the whole page", dir, len(got), err)
		}
	}
	beside, err := cb.PullHistory(ctx, cid, acks[9].GetConversationSeq(), historyNewer, 50)
	if err != nil || len(beside.GetRecords()) != 10 {
		return fmt.Errorf("a page beside the damaged record: %d records, %v; want the 10 after seq %d", len(beside.GetRecords()), err,
			acks[9].GetConversationSeq())
	}
	if err := s.Query(recordUpdate, append([]any{original}, pos...)...).WithContext(ctx).Exec(); err != nil {
		return err
	}
	restored = true
	got, err := cb.HistoryPaged(ctx, cid, historyNewer, 50)
	if err != nil {
		return fmt.Errorf("history after the record is back: %w", err)
	}
	return sameHistory(got, acks, "history after the record is back")
}
