package shardset

import (
	"errors"
	"slices"
	"testing"

	"github.com/qim-dev/qim/contract"
)

func TestParse(t *testing.T) {
	cases := []struct {
		in   string
		want Set
		bad  bool
	}{
		{"", nil, false},
		{"0-3", Set{0, 1, 2, 3}, false},
		{"5", Set{5}, false},
		{"0, 4,8-10", Set{0, 4, 8, 9, 10}, false},
		{"3-1", nil, true},
		{"x", nil, true},
		{"-1", nil, true},
		{"65536", nil, true},
		{"0,,4", nil, true}, // an empty element is a typo, not "no shard"
		{"0-3,", nil, true},
	}
	for _, tc := range cases {
		got, err := Parse(tc.in)
		if (err != nil) != tc.bad || (!tc.bad && !slices.Equal(got, tc.want)) {
			t.Errorf("%q: got %v, %v", tc.in, got, err)
		}
		if err != nil && !errors.Is(err, ErrShardSet) {
			t.Errorf("%q: %v does not wrap ErrShardSet", tc.in, err)
		}
	}
}

func TestNormalizeAndString(t *testing.T) {
	n, _ := contract.NewShardCount(64)
	all, err := Normalize(nil, n, "QIM_MAILBOX_OWNED_SHARDS")
	if err != nil || len(all) != 64 || all.String() != "0-63" {
		t.Fatalf("empty set: %v %v", all.String(), err)
	}
	s, err := Normalize(Set{9, 3, 4, 5, 40}, n, "QIM_MAILBOX_OWNED_SHARDS")
	if err != nil || s.String() != "3-5,9,40" || !s.Contains(40) || s.Contains(6) {
		t.Fatalf("got %q %v", s.String(), err)
	}
	for _, bad := range []Set{{1, 1}, {64}} {
		if _, err := Normalize(bad, n, "QIM_MAILBOX_OWNED_SHARDS"); !errors.Is(err, ErrShardSet) {
			t.Errorf("%v: %v", bad, err)
		}
	}
}
