package commitlog

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
)

func newDispatch(t testing.TB, cfg DispatchConfig) *DispatchProducer {
	t.Helper()
	d, err := NewDispatchProducer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

func TestDispatchReady(t *testing.T) {
	ep := itest.Endpoints(t)
	ctx := testCtx(t)
	d := newDispatch(t, DispatchConfig{Brokers: ep.KafkaBrokers})
	if err := d.Ready(ctx, ep.DispatchShards); err != nil {
		t.Fatalf("Ready(%d) = %v", ep.DispatchShards, err)
	}
	var pce *PartitionCountError
	if err := d.Ready(ctx, ep.DispatchShards/2); !errors.As(err, &pce) || pce.Got != ep.DispatchShards {
		t.Fatalf("Ready(%d) = %v, want *PartitionCountError with Got %d", ep.DispatchShards/2, err, ep.DispatchShards)
	}
	if err := d.Ready(ctx, 3); !errors.Is(err, contract.ErrShardCount) {
		t.Fatalf("Ready(3) = %v, want contract.ErrShardCount", err)
	}
	nonIdem := newDispatch(t, DispatchConfig{Brokers: ep.KafkaBrokers, DisableIdempotence: true})
	if err := nonIdem.Ready(ctx, ep.DispatchShards); err != nil {
		t.Fatalf("Ready without idempotence = %v", err)
	}
}

// TestDispatchBatchToShards produces one batch across partitions 0, 5 and 63 and reads each
// partition back: every record acknowledged, on its own shard, in batch order per shard.
func TestDispatchBatchToShards(t *testing.T) {
	ep := itest.Endpoints(t)
	if ep.DispatchShards < 64 {
		t.Skipf("needs 64 dispatch partitions, stack has %d", ep.DispatchShards)
	}
	ctx := testCtx(t)
	d := newDispatch(t, DispatchConfig{Brokers: ep.KafkaBrokers})
	run := runID(t)
	shards := []int32{0, 5, 63}
	var recs []Record
	for i := 0; i < 30; i++ {
		s := shards[i%len(shards)]
		recs = append(recs, Record{Partition: s, Key: messageKey(t, run, i), Value: []byte(fmt.Sprintf("dispatch-%d-%d", s, i))})
	}
	if err := d.ProduceBatch(ctx, recs); err != nil {
		t.Fatalf("ProduceBatch = %v", err)
	}
	starts := map[int32]int64{}
	want := map[int32][]Record{}
	for _, r := range recs {
		if cur, ok := starts[r.Partition]; !ok || r.Offset < cur {
			starts[r.Partition] = r.Offset
		}
		want[r.Partition] = append(want[r.Partition], r)
	}
	c, err := NewPartitionConsumer(ep.KafkaBrokers, contract.TopicDispatch, starts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := map[int32][]Record{}
	for _, r := range pollUntil(t, ctx, c, len(recs)) {
		got[r.Partition] = append(got[r.Partition], r)
	}
	for _, s := range shards {
		if len(got[s]) != len(want[s]) {
			t.Fatalf("partition %d: %d records, want %d", s, len(got[s]), len(want[s]))
		}
		for i, w := range want[s] {
			g := got[s][i]
			if g.Offset != w.Offset || string(g.Key) != string(w.Key) || string(g.Value) != string(w.Value) {
				t.Fatalf("partition %d record %d = {%d %q}, want {%d %q}", s, i, g.Offset, g.Value, w.Offset, w.Value)
			}
		}
	}
}

// TestDispatchBatchFailsWhole: one record for a partition the topic does not have fails the
// batch, so the caller replays the whole batch instead of committing its source offset.
func TestDispatchBatchFailsWhole(t *testing.T) {
	ep := itest.Endpoints(t)
	d := newDispatch(t, DispatchConfig{Brokers: ep.KafkaBrokers})
	run := runID(t)
	recs := []Record{
		{Partition: 1, Key: messageKey(t, run, 0), Value: []byte("ok")},
		{Partition: int32(ep.DispatchShards), Key: messageKey(t, run, 1), Value: []byte("no such shard")},
	}
	if err := d.ProduceBatch(testCtx(t), recs); err == nil {
		t.Fatal("ProduceBatch with a record for a missing partition returned nil")
	}
	if err := d.ProduceBatch(testCtx(t), []Record{{Partition: -1}}); err == nil {
		t.Fatal("ProduceBatch with a negative partition returned nil")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := d.ProduceBatch(ctx, recs[:1]); !errors.Is(err, context.Canceled) {
		t.Fatalf("ProduceBatch with a cancelled context = %v, want context.Canceled", err)
	}
	if d.BufferedRecords() != 0 {
		t.Fatalf("BufferedRecords() = %d after the batches returned", d.BufferedRecords())
	}
}

// TestDispatchProducerSettings pins acks=all and the idempotence switch.
func TestDispatchProducerSettings(t *testing.T) {
	for _, disable := range []bool{false, true} {
		d := newDispatch(t, DispatchConfig{Brokers: []string{"127.0.0.1:1"}, DisableIdempotence: disable})
		if got := d.cl.OptValue(kgo.RequiredAcks); got != kgo.AllISRAcks() {
			t.Errorf("required acks = %v, want all ISR", got)
		}
		if got := d.cl.OptValue(kgo.DisableIdempotentWrite); got != disable {
			t.Errorf("DisableIdempotence %v: franz-go idempotence disabled = %v", disable, got)
		}
	}
}
