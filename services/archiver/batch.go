package archiver

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/cqlstore"
)

// batch is one polled run of Outbox records turned into archive rows.
type batch struct {
	first, last int64
	next        int64 // last+1: the position committed once every row is acknowledged
	rows        []cqlstore.Row
	duplicates  int // records repeated inside the batch (the writer may produce one twice)
}

type rowKey struct {
	tenant contract.TenantID
	conv   contract.ConversationID
	seq    uint64
}

// decode turns polled records into rows, strictly in offset order from position from. It is
// all or nothing: one record that cannot be archived fails the batch with a *RecordError.
// A record seen twice in the batch (same position, byte-identical record) is archived once; the
// same position with any other content is ErrSeqReused.
func decode(topic string, polled []commitlog.Record, from int64) (*batch, error) {
	b := &batch{first: polled[0].Offset, rows: make([]cqlstore.Row, 0, len(polled))}
	seen := make(map[rowKey]string, len(polled)) // position → record bytes
	prev := from - 1
	for i := range polled {
		r := &polled[i]
		fail := func(err error) error { return &RecordError{Topic: topic, Offset: r.Offset, Err: err} }
		if r.Offset <= prev {
			return nil, fail(fmt.Errorf("%w: offset %d after %d", ErrOffsetOrder, r.Offset, prev))
		}
		prev = r.Offset
		var env internalv1.CommittedEnvelope
		if err := proto.Unmarshal(r.Value, &env); err != nil {
			return nil, fail(fmt.Errorf("%w: %v", ErrUndecodable, err))
		}
		if env.GetRecord() == nil {
			return nil, fail(fmt.Errorf("%w: no record", ErrUndecodable))
		}
		row, err := cqlstore.RowFromRecord(env.GetRecord())
		if err != nil {
			return nil, fail(fmt.Errorf("%w: %v", ErrUndecodable, err))
		}
		k := rowKey{row.Tenant, row.Conversation, row.Seq}
		if rec, dup := seen[k]; dup {
			if rec != string(row.Record) {
				return nil, fail(fmt.Errorf("%w: conversation %s seq %d", ErrSeqReused, contract.U128(row.Conversation), row.Seq))
			}
			b.duplicates++
			continue
		}
		seen[k] = string(row.Record)
		b.rows = append(b.rows, row)
	}
	b.last, b.next = prev, prev+1
	return b, nil
}
