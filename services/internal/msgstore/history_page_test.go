package msgstore

import (
	"errors"
	"slices"
	"testing"

	"github.com/qim-dev/qim/contract"
)

func TestHistoryQueryNormalize(t *testing.T) {
	conv := contract.ConversationID{Hi: 0x2000000000000000, Lo: 1}
	tests := []struct {
		name        string
		q           HistoryQuery
		limit, maxB int
		wantInvalid bool
	}{
		{"defaults", HistoryQuery{Conversation: conv, Direction: Older}, DefaultHistoryLimit, contract.HistoryPageMaxBytes, false},
		{"clamped", HistoryQuery{Conversation: conv, Direction: Newer, Limit: 1000, MaxBytes: 1 << 30}, MaxHistoryLimit, contract.HistoryPageMaxBytes, false},
		{"kept", HistoryQuery{Conversation: conv, Direction: Newer, Limit: 7, MaxBytes: 100}, 7, 100, false},
		{"zero direction", HistoryQuery{Conversation: conv}, 0, 0, true},
		{"negative limit", HistoryQuery{Conversation: conv, Direction: Older, Limit: -1}, 0, 0, true},
		{"negative bytes", HistoryQuery{Conversation: conv, Direction: Older, MaxBytes: -1}, 0, 0, true},
		{"zero conversation", HistoryQuery{Direction: Older}, 0, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, err := tc.q.normalize()
			if tc.wantInvalid {
				if !errors.Is(err, ErrInvalidArgument) {
					t.Fatalf("err = %v, want ErrInvalidArgument", err)
				}
				return
			}
			if err != nil || q.Limit != tc.limit || q.MaxBytes != tc.maxB {
				t.Fatalf("normalize = (limit %d, max %d, %v), want (%d, %d)", q.Limit, q.MaxBytes, err, tc.limit, tc.maxB)
			}
		})
	}
}

func TestWalkStart(t *testing.T) {
	tests := []struct {
		dir            Direction
		anchor, latest uint64
		bucket, bound  uint64
		ok             bool
	}{
		{Older, 0, 0, 0, 0, false},
		{Older, 0, 5000, 4, 5000, true},
		{Older, 1, 5000, 0, 0, false},
		{Older, 1025, 5000, 1, 1024, true},
		{Older, 9999, 5000, 4, 5000, true},
		{Newer, 0, 5000, 0, 1, true},
		{Newer, 1023, 5000, 1, 1024, true},
		{Newer, 5000, 5000, 0, 0, false},
		{Newer, 7000, 5000, 0, 0, false},
	}
	for _, tc := range tests {
		w := walk{q: HistoryQuery{Direction: tc.dir, Anchor: tc.anchor}, latest: tc.latest}
		b, bound, ok := w.start()
		if b != tc.bucket || bound != tc.bound || ok != tc.ok {
			t.Errorf("%v anchor %d latest %d: start = (%d, %d, %v), want (%d, %d, %v)",
				tc.dir, tc.anchor, tc.latest, b, bound, ok, tc.bucket, tc.bound, tc.ok)
		}
	}
}

// page: the first record is always returned, the byte budget cuts later ones, the next anchor
// follows the last returned record or the scan boundary, and records come out ascending.
func TestWalkPage(t *testing.T) {
	rec := func(n int) []byte { return make([]byte, n) }
	tests := []struct {
		name      string
		dir       Direction
		seqs      []uint64
		sizes     []int
		maxBytes  int
		more      bool
		stopped   bool
		boundary  uint64
		wantN     int
		wantMore  bool
		wantNext  uint64
		wantOrder []int // sizes of returned records, in returned order
	}{
		{"empty", Older, nil, nil, 100, false, false, 0, 0, false, 77, nil},
		{"first larger than budget", Older, []uint64{9, 8}, []int{600, 1}, 100, false, false, 0, 1, true, 9, []int{600}},
		{"cut in the middle newer", Newer, []uint64{1, 2, 3}, []int{40, 40, 40}, 100, false, false, 0, 2, true, 2, []int{40, 40}},
		{"all fit older ascending", Older, []uint64{9, 8, 7}, []int{1, 2, 3}, 100, true, false, 0, 3, true, 7, []int{3, 2, 1}},
		{"scan stop after records", Older, []uint64{9000}, []int{5}, 100, true, true, 4096, 1, true, 4096, []int{5}},
		{"scan stop no records", Newer, nil, nil, 100, true, true, 17407, 0, true, 17407, nil},
		{"byte cut beats scan stop", Newer, []uint64{1, 2}, []int{60, 60}, 100, true, true, 17407, 1, true, 1, []int{60}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := walk{q: HistoryQuery{Direction: tc.dir, Anchor: 77, MaxBytes: tc.maxBytes}, seqs: tc.seqs,
				more: tc.more, stopped: tc.stopped, boundary: tc.boundary}
			var recs [][]byte
			for _, n := range tc.sizes {
				recs = append(recs, rec(n))
			}
			p := w.page(recs)
			var order []int
			for _, r := range p.Records {
				order = append(order, len(r))
			}
			if len(p.Records) != tc.wantN || p.HasMore != tc.wantMore || p.NextAnchor != tc.wantNext || !slices.Equal(order, tc.wantOrder) {
				t.Fatalf("page = (n %d, more %v, next %d, order %v), want (%d, %v, %d, %v)",
					len(p.Records), p.HasMore, p.NextAnchor, order, tc.wantN, tc.wantMore, tc.wantNext, tc.wantOrder)
			}
		})
	}
}
