package fanout

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/dispatch"
)

// batch is one planned Outbox batch: the dispatches of records [first, last] and the position
// committed once every one of them is acknowledged.
type batch struct {
	first, last int64
	next        int64 // last+1: the offset of the next record to dispatch
	envelopes   int
	// records are the dispatches in plan order (Outbox offset, then shard): Partition = shard,
	// Key = dispatch_id, Value = the deterministic encoding of the GroupDispatch.
	records []commitlog.Record
	polled  time.Time
}

// planner turns polled Outbox records into a batch of dispatch records.
//
// Invariants: records are planned strictly in offset order, each at or after the position the
// batch starts from; the output is a pure function of (Outbox record bytes, offset, shard count),
// so a replay of the same records encodes byte-identical values under the same keys; any record
// that cannot be decoded or planned fails the whole batch (nothing of it is produced).
//
// How: decode the CommittedEnvelope, dispatch.Plan it, encode each GroupDispatch with
// deterministic marshalling into one arena reused across batches. The arena and the record slice
// are reused only after the previous batch is fully acknowledged (ProduceBatch returns only when
// every record has an outcome), so no in-flight record ever aliases a new value.
//
// Rejected: producing the plannable prefix of a failing batch. It saves a little replay after the
// operator fixes the cause, but the service stops either way and the batch is re-planned from
// its start; a single all-or-nothing rule is easier to audit.
type planner struct {
	topic   string
	shards  contract.ShardCount
	marshal proto.MarshalOptions
	arena   []byte
	recs    []commitlog.Record
}

func newPlanner(topic string, shards contract.ShardCount) *planner {
	return &planner{topic: topic, shards: shards, marshal: proto.MarshalOptions{Deterministic: true}}
}

// plan plans polled (non-empty, from one poll) starting at position from. The returned batch's
// records are valid until the next call.
func (p *planner) plan(polled []commitlog.Record, from int64) (*batch, error) {
	b := &batch{first: polled[0].Offset, polled: time.Now()}
	p.arena, p.recs = p.arena[:0], p.recs[:0]
	prev := from - 1
	for i := range polled {
		r := &polled[i]
		if r.Offset <= prev {
			return nil, p.recordErr(r.Offset, fmt.Errorf("%w: offset %d after %d", ErrOffsetOrder, r.Offset, prev))
		}
		prev = r.Offset
		if err := p.planRecord(r); err != nil {
			return nil, err
		}
	}
	b.last, b.next, b.envelopes, b.records = prev, prev+1, len(polled), p.recs
	return b, nil
}

// planRecord appends the dispatches of one Outbox record.
func (p *planner) planRecord(r *commitlog.Record) error {
	var env internalv1.CommittedEnvelope
	if err := proto.Unmarshal(r.Value, &env); err != nil {
		return p.recordErr(r.Offset, fmt.Errorf("%w: %v", ErrUndecodable, err))
	}
	ds, err := dispatch.Plan(&env, p.shards, r.Offset)
	if err != nil {
		return p.recordErr(r.Offset, err)
	}
	if len(ds) == 0 {
		return p.recordErr(r.Offset, fmt.Errorf("%w: no dispatch planned", ErrBadPlan))
	}
	for _, d := range ds {
		if d.GetShard() >= uint32(p.shards) || len(d.GetDispatchId()) != 16 {
			return p.recordErr(r.Offset, fmt.Errorf("%w: shard %d of %d, dispatch_id of %d bytes",
				ErrBadPlan, d.GetShard(), uint32(p.shards), len(d.GetDispatchId())))
		}
		start := len(p.arena)
		if p.arena, err = p.marshal.MarshalAppend(p.arena, d); err != nil {
			return p.recordErr(r.Offset, fmt.Errorf("%w: encode dispatch: %v", ErrBadPlan, err))
		}
		end := len(p.arena)
		p.recs = append(p.recs, commitlog.Record{Partition: int32(d.GetShard()), Key: d.GetDispatchId(),
			Value: p.arena[start:end:end]})
	}
	return nil
}

func (p *planner) recordErr(off int64, err error) error {
	return &RecordError{Topic: p.topic, Offset: off, Err: err}
}
