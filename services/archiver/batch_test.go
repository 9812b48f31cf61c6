package archiver

import (
	"errors"
	"testing"

	"github.com/qim-dev/qim/services/internal/commitlog"
)

func TestDecodeIsAllOrNothingInOffsetOrder(t *testing.T) {
	rec := func(off int64, conv, seq uint64, body string) commitlog.Record {
		_, v := envelope(t, conv, seq, body)
		return commitlog.Record{Offset: off, Value: v}
	}
	a, b := rec(5, 1, 1, "a"), rec(6, 1, 2, "b")
	again := a
	again.Offset = 7 // the writer produced the same commit twice
	reused := rec(7, 1, 1, "another message at seq 1")
	for _, tc := range []struct {
		name       string
		polled     []commitlog.Record
		from       int64
		rows, dups int
		err        error
		at         int64
	}{
		{"two records", []commitlog.Record{a, b}, 5, 2, 0, nil, 0},
		{"a repeated commit is archived once", []commitlog.Record{a, b, again}, 5, 2, 1, nil, 0},
		{"one seq, two messages", []commitlog.Record{a, b, reused}, 5, 0, 0, ErrSeqReused, 7},
		{"garbage", []commitlog.Record{a, {Offset: 6, Value: []byte{0xff, 0xff}}}, 5, 0, 0, ErrUndecodable, 6},
		{"an envelope without a record", []commitlog.Record{{Offset: 5, Value: nil}}, 5, 0, 0, ErrUndecodable, 5},
		{"below the position", []commitlog.Record{a}, 6, 0, 0, ErrOffsetOrder, 5},
		{"out of order", []commitlog.Record{b, a}, 5, 0, 0, ErrOffsetOrder, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bt, err := decode("qim.outbox", tc.polled, tc.from)
			if tc.err != nil {
				var re *RecordError
				if !errors.Is(err, tc.err) || !errors.As(err, &re) || re.Offset != tc.at || bt != nil {
					t.Fatalf("decode = %v, %v; want *RecordError at %d wrapping %v and no batch", bt, err, tc.at, tc.err)
				}
				return
			}
			if err != nil || len(bt.rows) != tc.rows || bt.duplicates != tc.dups || bt.next != tc.polled[len(tc.polled)-1].Offset+1 {
				t.Fatalf("decode = %+v, %v; want %d rows, %d duplicates", bt, err, tc.rows, tc.dups)
			}
		})
	}
}
