package fanout

import (
	"bytes"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/dispatch"
)

// outboxBatch is n envelopes at consecutive offsets from first.
func outboxBatch(t *testing.T, first int64, n int) ([]commitlog.Record, []outboxRecord) {
	t.Helper()
	recs := make([]commitlog.Record, n)
	out := make([]outboxRecord, n)
	for i := range n {
		k, v := envelopeValue(t, 3, i, uint64(100+i), uint64(900+3*i))
		recs[i] = commitlog.Record{Offset: first + int64(i), Key: k, Value: v}
		out[i] = outboxRecord{offset: first + int64(i), value: v}
	}
	return recs, out
}

func TestPlannerMatchesDispatchPlan(t *testing.T) {
	const shards = 16
	n, _ := contract.NewShardCount(shards)
	polled, recs := outboxBatch(t, 40, 9)
	p := newPlanner("outbox", n)
	b, err := p.plan(polled, 40)
	if err != nil {
		t.Fatal(err)
	}
	if b.first != 40 || b.last != 48 || b.next != 49 || b.envelopes != 9 {
		t.Fatalf("batch bounds = [%d, %d] next %d envelopes %d", b.first, b.last, b.next, b.envelopes)
	}
	want := plannedDispatches(t, recs, shards)
	if len(b.records) != len(want) {
		t.Fatalf("%d dispatch records, %d planned", len(b.records), len(want))
	}
	wantEach(t, countDispatches(t, b.records, want), want, 1) // partition, key and bytes checked there
	var prevOff int64 = -1
	for _, r := range b.records { // plan order: Outbox offset, then shard
		var d internalv1.GroupDispatch
		if err := proto.Unmarshal(r.Value, &d); err != nil {
			t.Fatal(err)
		}
		if d.GetSourceOffset() < prevOff {
			t.Fatal("dispatches not in Outbox offset order")
		}
		prevOff = d.GetSourceOffset()
	}
}

// Replaying the same Outbox records yields the same keys and bytes; planning them at other
// offsets (a duplicate Outbox record) keeps dispatch_id and payload_digest.
func TestPlannerReplayIsIdentical(t *testing.T) {
	n, _ := contract.NewShardCount(8)
	polled, _ := outboxBatch(t, 0, 5)
	p := newPlanner("outbox", n)
	a, err := p.plan(polled, 0)
	if err != nil {
		t.Fatal(err)
	}
	first := make([]commitlog.Record, len(a.records))
	for i, r := range a.records {
		first[i] = commitlog.Record{Partition: r.Partition, Key: bytes.Clone(r.Key), Value: bytes.Clone(r.Value)}
	}
	again, err := p.plan(polled, 0) // reuses the arena of the first batch
	if err != nil {
		t.Fatal(err)
	}
	moved := make([]commitlog.Record, len(polled))
	for i := range polled {
		moved[i] = polled[i]
		moved[i].Offset += 1000
	}
	other, err := newPlanner("outbox", n).plan(moved, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for i := range first {
		if again.records[i].Partition != first[i].Partition || !bytes.Equal(again.records[i].Key, first[i].Key) ||
			!bytes.Equal(again.records[i].Value, first[i].Value) {
			t.Fatalf("replayed dispatch %d differs", i)
		}
		var d1, d2 internalv1.GroupDispatch
		_ = proto.Unmarshal(first[i].Value, &d1)
		_ = proto.Unmarshal(other.records[i].Value, &d2)
		if !bytes.Equal(d1.GetDispatchId(), d2.GetDispatchId()) || !bytes.Equal(d1.GetPayloadDigest(), d2.GetPayloadDigest()) ||
			d2.GetSourceOffset() != d1.GetSourceOffset()+1000 {
			t.Fatalf("dispatch %d planned at another offset changed identity or digest", i)
		}
	}
}

func TestPlannerRejectsWholeBatch(t *testing.T) {
	n, _ := contract.NewShardCount(8)
	good, _ := outboxBatch(t, 10, 3)
	garbage := func(off int64) commitlog.Record { return commitlog.Record{Offset: off, Value: []byte{0xff, 0xff}} }
	empty := func(off int64) commitlog.Record { return commitlog.Record{Offset: off} } // decodes to schema 0
	tests := []struct {
		name   string
		polled []commitlog.Record
		from   int64
		offset int64
		is     error
	}{
		{"undecodable in the middle", []commitlog.Record{good[0], garbage(11), good[2]}, 10, 11, ErrUndecodable},
		{"empty value", []commitlog.Record{good[0], empty(11)}, 10, 11, dispatch.ErrUnplannable},
		{"offset repeated", []commitlog.Record{good[0], good[0]}, 10, 10, ErrOffsetOrder},
		{"offset below the position", good, 11, 10, ErrOffsetOrder},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := newPlanner("outbox", n).plan(tc.polled, tc.from)
			var re *RecordError
			if b != nil || !errors.As(err, &re) || re.Offset != tc.offset || re.Topic != "outbox" || !errors.Is(err, tc.is) {
				t.Fatalf("plan = (batch %v, %v), want *RecordError at offset %d wrapping %v", b != nil, err, tc.offset, tc.is)
			}
		})
	}
}
