package session

import (
	"errors"
	"testing"

	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/shardset"
)

func TestCheckLive(t *testing.T) {
	good := binding{cluster: "c1", topicID: "0123456789abcdef0123456789abcdef", partitions: 4}
	tests := []struct {
		name string
		live binding
		want func(error) bool
	}{
		{"ok", good, func(err error) bool { return err == nil }},
		{"zero topic id", binding{cluster: "c1", topicID: zeroTopicID, partitions: 4}, isTopicIDError},
		{"missing topic id", binding{cluster: "c1", partitions: 4}, isTopicIDError},
		{"no cluster id", binding{topicID: good.topicID, partitions: 4}, func(err error) bool {
			var be *BindingError
			return errors.As(err, &be) && be.Field == "cluster_id"
		}},
		{"partition count", binding{cluster: "c1", topicID: good.topicID, partitions: 8}, func(err error) bool {
			var pe *commitlog.PartitionCountError
			return errors.As(err, &pe) && pe.Want == 4 && pe.Got == 8
		}},
	}
	for _, tc := range tests {
		if err := checkLive("t", tc.live, 4); !tc.want(err) {
			t.Errorf("%s: checkLive = %v", tc.name, err)
		}
	}
}

func isTopicIDError(err error) bool {
	var te *TopicIDError
	return errors.As(err, &te)
}

func TestCompareBinding(t *testing.T) {
	stored := binding{cluster: "c1", topicID: "aa", partitions: 4}
	tests := []struct {
		live  binding
		field string
	}{
		{stored, ""},
		{binding{cluster: "c2", topicID: "aa", partitions: 4}, "cluster_id"},
		{binding{cluster: "c1", topicID: "bb", partitions: 4}, "topic_id"}, // recreated topic
		{binding{cluster: "c1", topicID: "aa", partitions: 8}, "partitions"},
	}
	for _, tc := range tests {
		err := compareBinding("t", stored, tc.live)
		var be *BindingError
		if tc.field == "" {
			if err != nil {
				t.Errorf("same binding refused: %v", err)
			}
			continue
		}
		if !errors.As(err, &be) || be.Field != tc.field {
			t.Errorf("live %+v: err = %v, want BindingError on %s", tc.live, err, tc.field)
		}
	}
}

// The start rule: a checkpoint inside [low, high] is resumed; none starts at 0 only while the log
// still starts at 0; anything else refuses with the partition named.
func TestStartOffsets(t *testing.T) {
	tests := []struct {
		name   string
		cp     int64
		b      commitlog.Bounds
		start  int64
		refuse bool
	}{
		{"fresh log", -1, commitlog.Bounds{Low: 0, High: 0}, 0, false},
		{"fresh with records", -1, commitlog.Bounds{Low: 0, High: 9}, 0, false},
		{"fresh but trimmed", -1, commitlog.Bounds{Low: 3, High: 9}, 0, true},
		{"resume inside", 5, commitlog.Bounds{Low: 0, High: 9}, 5, false},
		{"resume at end", 9, commitlog.Bounds{Low: 0, High: 9}, 9, false},
		{"beyond the end (shorter log)", 12, commitlog.Bounds{Low: 0, High: 9}, 0, true},
		{"behind retention", 2, commitlog.Bounds{Low: 3, High: 9}, 0, true},
	}
	both := shardset.Set{0, 1}
	for _, tc := range tests {
		starts, err := startOffsets([]int64{0, tc.cp}, map[int32]commitlog.Bounds{0: {}, 1: tc.b}, both)
		if tc.refuse {
			var se *StartError
			var oe *commitlog.OffsetOutOfRangeError
			if !errors.As(err, &se) || se.Partition != 1 || !errors.As(err, &oe) {
				t.Errorf("%s: err = %v, want StartError for partition 1", tc.name, err)
			}
			continue
		}
		if err != nil || starts[1] != tc.start {
			t.Errorf("%s: start = %d, %v; want %d", tc.name, starts[1], err, tc.start)
		}
	}
	if _, err := startOffsets([]int64{0, 0}, map[int32]commitlog.Bounds{0: {}}, both); err == nil {
		t.Error("a partition without listed offsets was accepted")
	}
	// A partition another instance owns is neither judged nor consumed: its checkpoint moves
	// under that instance while this one starts.
	starts, err := startOffsets([]int64{0, 12}, map[int32]commitlog.Bounds{0: {}, 1: {High: 9}}, shardset.Set{0})
	if _, consumed := starts[1]; err != nil || len(starts) != 1 || consumed {
		t.Errorf("owning only partition 0: starts %v, %v", starts, err)
	}
}
