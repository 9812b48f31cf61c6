package commitlog

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
)

// produceTo writes n records to one dispatch partition and returns their offsets.
func produceTo(t *testing.T, brokers []string, part int32, n int) []int64 {
	t.Helper()
	d := newDispatch(t, DispatchConfig{Brokers: brokers})
	run := runID(t)
	recs := make([]Record, n)
	for i := range recs {
		recs[i] = Record{Partition: part, Key: messageKey(t, run, i), Value: []byte("v")}
	}
	if err := d.ProduceBatch(testCtx(t), recs); err != nil {
		t.Fatal(err)
	}
	offs := make([]int64, n)
	for i, r := range recs {
		offs[i] = r.Offset
	}
	return offs
}

func TestWatermarksAfterProducing(t *testing.T) {
	ep := itest.Endpoints(t)
	ctx := testCtx(t)
	const part = 7
	adm, err := NewAdmin(ep.KafkaBrokers)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	before, err := adm.Watermarks(ctx, contract.TopicDispatch, part)
	if err != nil {
		t.Fatal(err)
	}
	offs := produceTo(t, ep.KafkaBrokers, part, 5)
	c, err := NewPartitionConsumer(ep.KafkaBrokers, contract.TopicDispatch, map[int32]int64{part: before[part].High, 8: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wm, err := c.Watermarks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(wm) != 2 {
		t.Fatalf("Watermarks() = %v, want the 2 consumed partitions", wm)
	}
	if want := (Bounds{Low: 0, High: before[part].High + 5}); wm[part] != want || offs[4] != want.High-1 {
		t.Fatalf("bounds of %d = %+v, want %+v (last offset %d)", part, wm[part], want, offs[4])
	}
	all, err := adm.Watermarks(ctx, contract.TopicDispatch)
	if err != nil || len(all) != ep.DispatchShards || all[part] != wm[part] {
		t.Fatalf("Watermarks(all) = %d partitions, %v; want %d and %+v for %d", len(all), err, ep.DispatchShards, wm[part], part)
	}
	if _, err := adm.Watermarks(ctx, contract.TopicDispatch, int32(ep.DispatchShards)); err == nil {
		t.Fatal("Watermarks of a partition the topic lacks returned no error")
	}
}

// TestPauseResumeKeepsRecords: a paused partition returns nothing, and after Resume it
// continues exactly where it was: nothing skipped, nothing repeated.
func TestPauseResumeKeepsRecords(t *testing.T) {
	ep := itest.Endpoints(t)
	ctx := testCtx(t)
	const a, b = 11, 12
	adm, err := NewAdmin(ep.KafkaBrokers)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	wm, err := adm.Watermarks(ctx, contract.TopicDispatch, a, b)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewPartitionConsumer(ep.KafkaBrokers, contract.TopicDispatch,
		map[int32]int64{a: wm[a].High, b: wm[b].High}, WithFetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Pause(a)
	offsA := produceTo(t, ep.KafkaBrokers, a, 3)
	produceTo(t, ep.KafkaBrokers, b, 3)
	for _, r := range pollUntil(t, ctx, c, 3) {
		if r.Partition != b {
			t.Fatalf("paused partition %d returned offset %d", r.Partition, r.Offset)
		}
	}
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if recs, err := c.Poll(short, 0); len(recs) != 0 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("poll while paused = %d records, %v", len(recs), err)
	}
	c.Resume(a)
	got := pollUntil(t, ctx, c, 3)
	for i, r := range got {
		if r.Partition != a || r.Offset != offsA[i] {
			t.Fatalf("after Resume record %d = %d@%d, want %d@%d", i, r.Partition, r.Offset, a, offsA[i])
		}
	}
}

// TestStartBeyondLogEndIsRefused: franz-go bounds an exact start offset into the log; the
// consumer must refuse instead of silently starting at the end (which would skip records).
func TestStartBeyondLogEndIsRefused(t *testing.T) {
	ep := itest.Endpoints(t)
	ctx := testCtx(t)
	const part = 13
	adm, err := NewAdmin(ep.KafkaBrokers)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	wm, err := adm.Watermarks(ctx, contract.TopicDispatch, part)
	if err != nil {
		t.Fatal(err)
	}
	want := wm[part].High + 100 // stays beyond the end after the 3 records below
	c, err := NewPartitionConsumer(ep.KafkaBrokers, contract.TopicDispatch, map[int32]int64{part: want})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	produceTo(t, ep.KafkaBrokers, part, 3)
	var soe *StartOffsetError
	var fe *FetchError
	for {
		recs, err := c.Poll(ctx, 0)
		if err == nil {
			if len(recs) > 0 {
				t.Fatalf("consumer started at %d returned records from %d", want, recs[0].Offset)
			}
			continue
		}
		if !errors.As(err, &soe) && !errors.As(err, &fe) {
			t.Fatalf("Poll = %v, want *StartOffsetError or *FetchError", err)
		}
		if len(recs) != 0 {
			t.Fatalf("Poll returned %d records of the refused partition", len(recs))
		}
		break
	}
	if _, err := c.Poll(ctx, 0); err == nil {
		t.Fatal("a failed consumer polled again without error")
	}
}

func TestNewPartitionConsumerRejects(t *testing.T) {
	ok := []string{"127.0.0.1:1"}
	tests := []struct {
		name    string
		brokers []string
		topic   string
		starts  map[int32]int64
		opts    []ConsumerOption
	}{
		{"no brokers", nil, "t", map[int32]int64{0: 0}, nil},
		{"no topic", ok, "", map[int32]int64{0: 0}, nil},
		{"no partitions", ok, "t", nil, nil},
		{"negative offset", ok, "t", map[int32]int64{0: -1}, nil},
		{"negative partition", ok, "t", map[int32]int64{-1: 0}, nil},
		{"zero fetch wait", ok, "t", map[int32]int64{0: 0}, []ConsumerOption{WithFetchMaxWait(0)}},
		{"zero fetch min bytes", ok, "t", map[int32]int64{0: 0}, []ConsumerOption{WithFetchMinBytes(0)}},
		{"fetch min bytes above the bound", ok, "t", map[int32]int64{0: 0}, []ConsumerOption{WithFetchMinBytes(maxFetchMinBytes + 1)}},
	}
	for _, tc := range tests {
		if _, err := NewPartitionConsumer(tc.brokers, tc.topic, tc.starts, tc.opts...); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: err = %v, want ErrConfig", tc.name, err)
		}
	}
	c, err := NewPartitionConsumer(ok, "t", map[int32]int64{0: 0}, WithFetchMinBytes(maxFetchMinBytes))
	if err != nil {
		t.Fatalf("fetch min bytes at the bound: %v", err)
	}
	c.Close()
}
