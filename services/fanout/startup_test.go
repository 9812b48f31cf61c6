package fanout

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/dispatch"
)

// deleteBelow advances topic[0]'s log start to off, as retention would.
func deleteBelow(t *testing.T, topic string, off int64) {
	t.Helper()
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: off, LeaderEpoch: -1})
	resp, err := kafkaAdmin(t).DeleteRecords(testCtx(t), offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("delete records of %s below %d: %v", topic, off, err)
	}
}

func runOnce(t *testing.T, cfg Config) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return newService(t, cfg).Run(ctx)
}

// Start-up refuses, naming topic and offsets, whenever the log cannot justify the position or
// the topics do not have the contract's partition counts.
func TestFanoutRefusesUnjustifiableStart(t *testing.T) {
	oor := func(committed int64, has bool, low, high int64) func(*testing.T, string, error) {
		return func(t *testing.T, outbox string, err error) {
			var e *commitlog.OffsetOutOfRangeError
			if !errors.As(err, &e) || e.Topic != outbox || e.HasCommitted != has || e.Low != low || e.High != high ||
				(has && e.Committed != committed) {
				t.Fatalf("Run = %v, want OffsetOutOfRangeError{committed %d (%v), [%d, %d]} on %s", err, committed, has, low, high, outbox)
			}
			if has && !strings.Contains(err.Error(), strconv.FormatInt(committed, 10)) {
				t.Fatalf("refusal %q does not name the committed offset", err)
			}
		}
	}
	partitions := func(want, got int) func(*testing.T, string, error) {
		return func(t *testing.T, _ string, err error) {
			var e *commitlog.PartitionCountError
			if !errors.As(err, &e) || e.Want != want || e.Got != got {
				t.Fatalf("Run = %v, want PartitionCountError{want %d got %d}", err, want, got)
			}
		}
	}
	tests := []struct {
		name        string
		outboxParts int
		dlogParts   int
		produce     int
		deleteBelow int64 // 0: none
		commit      int64 // -1: none
		check       func(*testing.T, string, error)
	}{
		{"committed beyond high", 1, 8, 3, 0, 10, oor(10, true, 0, 3)},
		{"committed below low", 1, 8, 5, 3, 1, oor(1, true, 3, 5)},
		{"no committed position and low above 0", 1, 8, 3, 2, -1, oor(0, false, 2, 3)},
		{"outbox with two partitions", 2, 8, 0, 0, -1, partitions(1, 2)},
		{"dispatch partitions differ from shard count", 1, 4, 0, 0, -1, partitions(8, 4)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			outbox, dlog := createTopic(t, "outbox", tc.outboxParts), createTopic(t, "dispatch", tc.dlogParts)
			if tc.produce > 0 {
				produceEnvelopes(t, outbox, tc.produce)
			}
			if tc.deleteBelow > 0 {
				deleteBelow(t, outbox, tc.deleteBelow)
			}
			cfg := testConfig(t, outbox, dlog, 8)
			if tc.commit >= 0 {
				commitPosition(t, cfg, tc.commit)
			}
			err := runOnce(t, cfg)
			var se *StartError
			if !errors.As(err, &se) {
				t.Fatalf("Run = %v, want *StartError", err)
			}
			tc.check(t, outbox, err)
			if tc.commit >= 0 {
				if off, _ := committed(t, cfg); off != tc.commit {
					t.Fatalf("a refused start moved the position from %d to %d", tc.commit, off)
				}
			}
		})
	}
	t.Run("missing outbox topic", func(t *testing.T) {
		cfg := testConfig(t, "qim-test-missing-"+randomHex(t, 6), createTopic(t, "dispatch", 8), 8)
		if err := runOnce(t, cfg); !errors.Is(err, commitlog.ErrTopicMissing) {
			t.Fatalf("Run = %v, want ErrTopicMissing", err)
		}
	})
}

// A record that cannot be decoded or planned stops the service with an error naming its offset,
// counts the always-zero invariant, and nothing at or after it is dispatched or committed.
func TestFanoutStopsOnUnplannableRecord(t *testing.T) {
	unknownSchema := func(t *testing.T) []byte {
		_, v := envelopeValue(t, 1, 99, 5, 6)
		return append(v, 0x08, 0x02) // schema_version 2: the last occurrence of a scalar field wins
	}
	tests := []struct {
		name  string
		value func(*testing.T) []byte
		is    error
	}{
		{"undecodable bytes", func(*testing.T) []byte { return []byte{0xff, 0xff, 0xff, 0xff} }, ErrUndecodable},
		{"unknown schema version", unknownSchema, dispatch.ErrUnplannable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			const shards = 8
			outbox, dlog := createTopic(t, "outbox", 1), createTopic(t, "dispatch", shards)
			good := produceEnvelopes(t, outbox, 2)
			k, _ := envelopeValue(t, 2, 1, 3, 4)
			produceOutbox(t, outbox, [][]byte{k}, [][]byte{tc.value(t)})
			after := produceEnvelopes(t, outbox, 1)
			cfg := testConfig(t, outbox, dlog, shards)
			svc := newService(t, cfg)
			err := svc.Run(testCtx(t))
			var re *RecordError
			if !errors.As(err, &re) || re.Offset != 2 || re.Topic != outbox || !errors.Is(err, tc.is) {
				t.Fatalf("Run = %v, want *RecordError at %s offset 2 wrapping %v", err, outbox, tc.is)
			}
			if !strings.Contains(err.Error(), "offset 2") {
				t.Fatalf("error %q does not name the offset", err)
			}
			if ok, bad := svc.reg.Healthy(); ok || len(bad) != 1 || bad[0] != "qim_fanout_unplannable_records_total" {
				t.Fatalf("invariants after an unplannable record: healthy=%v violated=%v", ok, bad)
			}
			if off, ok := committed(t, cfg); ok && off > 2 {
				t.Fatalf("position committed past the unplannable record: %d", off)
			}
			want := plannedDispatches(t, good, shards)
			for id, w := range plannedDispatches(t, after, shards) {
				want[id] = w
			}
			for id, n := range countDispatches(t, readDispatchLog(t, dlog), want) {
				if want[id].sourceOffset > 2 {
					t.Fatalf("dispatch %x of offset %d (after the bad record) was produced %d times", id, want[id].sourceOffset, n)
				}
			}
		})
	}
}
