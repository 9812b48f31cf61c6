package fanout

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/dispatch"
)

// wantDispatch is what the fanout must write for one planned dispatch: computed here
// independently with dispatch.Plan and deterministic encoding.
type wantDispatch struct {
	partition    int32
	value        []byte
	sourceOffset int64
}

// plannedDispatches maps dispatch_id → the dispatch every planned Outbox record must produce.
func plannedDispatches(t testing.TB, recs []outboxRecord, shards int) map[string]wantDispatch {
	t.Helper()
	n, err := contract.NewShardCount(shards)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]wantDispatch{}
	for _, r := range recs {
		var env internalv1.CommittedEnvelope
		if err := proto.Unmarshal(r.value, &env); err != nil {
			t.Fatal(err)
		}
		ds, err := dispatch.Plan(&env, n, r.offset)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			v, err := proto.MarshalOptions{Deterministic: true}.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			want[string(d.GetDispatchId())] = wantDispatch{partition: int32(d.GetShard()), value: v, sourceOffset: r.offset}
		}
	}
	return want
}

// readDispatchLog reads every record of topic, up to the high watermarks at the time of the
// call. Everything the fanout acknowledged before the call is below them.
func readDispatchLog(t testing.TB, topic string) []commitlog.Record {
	t.Helper()
	ctx := testCtx(t)
	brokers := itest.Endpoints(t).KafkaBrokers
	adm, err := commitlog.NewAdmin(brokers)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	wm, err := adm.Watermarks(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	starts, total := map[int32]int64{}, 0
	for p, b := range wm {
		if b.High > b.Low {
			starts[p] = b.Low
			total += int(b.High - b.Low)
		}
	}
	if total == 0 {
		return nil
	}
	c, err := commitlog.NewPartitionConsumer(brokers, topic, starts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out []commitlog.Record
	for len(out) < total {
		recs, err := c.Poll(ctx, total-len(out))
		if err != nil {
			t.Fatalf("read %s after %d of %d records: %v", topic, len(out), total, err)
		}
		out = append(out, recs...)
	}
	return out
}

// countDispatches checks every record of the dispatch log against want — known dispatch_id,
// partition = its shard, value byte-identical to the independent plan (so identical
// payload_digest and source_offset), digest verifiable — and counts copies per dispatch_id.
func countDispatches(t testing.TB, got []commitlog.Record, want map[string]wantDispatch) map[string]int {
	t.Helper()
	counts := map[string]int{}
	for _, r := range got {
		w, ok := want[string(r.Key)]
		if !ok {
			t.Fatalf("%s[%d]@%d: unplanned dispatch_id %x", "dispatch", r.Partition, r.Offset, r.Key)
		}
		if r.Partition != w.partition {
			t.Fatalf("dispatch %x on partition %d, its shard is %d", r.Key, r.Partition, w.partition)
		}
		if !bytes.Equal(r.Value, w.value) {
			t.Fatalf("dispatch %x at partition %d offset %d differs from its deterministic plan", r.Key, r.Partition, r.Offset)
		}
		var d internalv1.GroupDispatch
		if err := proto.Unmarshal(r.Value, &d); err != nil {
			t.Fatal(err)
		}
		if err := dispatch.Verify(&d); err != nil {
			t.Fatalf("dispatch %x: %v", r.Key, err)
		}
		counts[string(r.Key)]++
	}
	return counts
}

// countDispatchesOf is countDispatches over a shared log: records of other dispatch_ids are
// ignored.
func countDispatchesOf(t testing.TB, got []commitlog.Record, want map[string]wantDispatch) map[string]int {
	t.Helper()
	mine := got[:0:0]
	for _, r := range got {
		if _, ok := want[string(r.Key)]; ok {
			mine = append(mine, r)
		}
	}
	return countDispatches(t, mine, want)
}

// wantEach fails unless every planned dispatch appears exactly n times.
func wantEach(t testing.TB, counts map[string]int, want map[string]wantDispatch, n int) {
	t.Helper()
	for id := range want {
		if counts[id] != n {
			t.Fatalf("dispatch %x (outbox offset %d) appears %d times, want %d", id, want[id].sourceOffset, counts[id], n)
		}
	}
}
