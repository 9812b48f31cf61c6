package mailboxstore

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/luascript"
)

// The layout tests run each script through its typed binding with values that differ in length
// and content, on keys of their own, and check every reply field and every key the script
// writes: a swapped name in a header, a Go type or a script body shows up as a wrong field.

// runOne runs one call of b and decodes its reply; any error fails t.
func runOne[A, R any](t *testing.T, f *fix, b *luascript.Binding[A, R], a *A) R {
	t.Helper()
	cmds, err := runCalls(f.ctx, f.rdb, []call{b.Call(a)})
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.Decode(cmds[0])
	if err != nil {
		t.Fatalf("%s: %v", b.Script().Name(), err)
	}
	return r
}

// layout is one test's keys and the values its materialization writes.
type layout struct {
	epoch, wm, ident, cursor string
	prefix                   [2]string // day-bucket key prefixes of the two recipients
	index                    [2]string
	seq                      []byte
	members                  [2][]byte
	bucketAt, indexAt        int64
}

const (
	layoutEpoch  = 3
	layoutOffset = 41
	layoutDay    = 20000
	layoutTTL    = 5000 // identity TTL
)

func newLayout(t *testing.T, f *fix) layout {
	r := randU128(t).Bytes()
	p := "qim:test:mailbox-layout:" + hex.EncodeToString(r[:]) + ":"
	s, err := contract.ComposeMailboxSeq(layoutEpoch, layoutOffset)
	if err != nil {
		t.Fatal(err)
	}
	seq := appendSeq(nil, s)
	l := layout{epoch: p + "epoch", wm: p + "wm", ident: p + "ident", cursor: p + "cursor",
		prefix: [2]string{p + "b1:", p + "b2:"}, index: [2]string{p + "i1", p + "i2"}, seq: seq,
		members: [2][]byte{append(append([]byte(nil), seq...), 0, 0, 0, 7, 'o', 'n', 'e'),
			append(append([]byte(nil), seq...), 0, 0, 0, 9, 't', 'w', 'o', '!')},
		bucketAt: time.Now().Unix() + 3*86400}
	l.indexAt = l.bucketAt + 1000
	f.rdb.Set(f.ctx, l.epoch, layoutEpoch, time.Hour)
	f.rdb.Set(f.ctx, l.wm, layoutOffset-1, time.Hour)
	t.Cleanup(func() {
		f.rdb.Del(f.ctx, l.epoch, l.wm, l.ident, l.cursor, l.index[0], l.index[1], l.bucket(0), l.bucket(1))
	})
	return l
}

func (l layout) bucket(i int) string { return l.prefix[i] + "20000" }

func (l layout) materialize(offset int64, prev string) *materializeArgs {
	return &materializeArgs{EpochKey: l.epoch, WatermarkKey: l.wm, IdentityKey: l.ident,
		Buckets: []string{l.bucket(0), l.bucket(1)}, Indexes: []string{l.index[0], l.index[1]},
		Epoch: layoutEpoch, Offset: offset, PrevOffset: prev, Digest: bytes.Repeat([]byte{'d'}, 32), Seq: l.seq,
		Day: layoutDay, BucketExpireAt: l.bucketAt, IndexExpireAt: l.indexAt, IdentityTTL: layoutTTL, Settled: "1",
		Members: [][]byte{l.members[0], l.members[1]}}
}

// materialize.lua, expiries of a day the index already lists: far from the bucket's expiry
// (settled 1) the entry leaves them as the first entry set them; near it (settled 0) a bucket
// that expired while its day stayed listed comes back with its expiry, never without one.
func TestLayoutMaterializeListedDay(t *testing.T) {
	f := newFix(t)
	l := newLayout(t, f)
	runOne(t, f, scripts.materialize, l.materialize(layoutOffset, "40"))
	moved := time.Unix(l.bucketAt+77, 0)
	f.rdb.ExpireAt(f.ctx, l.bucket(0), moved)
	f.rdb.Del(f.ctx, l.bucket(1)) // expired; its day stays listed in index 1
	next := l.materialize(layoutOffset+1, "41")
	s42, err := contract.ComposeMailboxSeq(layoutEpoch, layoutOffset+1)
	if err != nil {
		t.Fatal(err)
	}
	next.Seq, next.Digest, next.Settled = appendSeq(nil, s42), bytes.Repeat([]byte{'e'}, 32), "0"
	next.IdentityKey = l.ident + ":next"
	t.Cleanup(func() { f.rdb.Del(f.ctx, next.IdentityKey) })
	next.Members = [][]byte{append(appendSeq(nil, s42), 0, 0, 0, 9, 'a'), append(appendSeq(nil, s42), 0, 0, 0, 9, 'b')}
	settledOne := *next
	settledOne.Buckets, settledOne.Indexes, settledOne.Members = next.Buckets[:1], next.Indexes[:1], next.Members[:1]
	settledOne.Settled = "1"
	runOne(t, f, scripts.materialize, &settledOne)
	if at := f.rdb.ExpireTime(f.ctx, l.bucket(0)).Val(); at != time.Duration(moved.Unix())*time.Second {
		t.Errorf("settled: bucket 0 expires at %v, want the expiry it had (%v)", at, moved.Unix())
	}
	unsettled := *next
	unsettled.Offset, unsettled.PrevOffset = layoutOffset+2, strconv.FormatInt(layoutOffset+1, 10)
	s43, _ := contract.ComposeMailboxSeq(layoutEpoch, layoutOffset+2)
	unsettled.Seq = appendSeq(nil, s43)
	unsettled.Members = [][]byte{append(appendSeq(nil, s43), 0, 0, 0, 9, 'c'), append(appendSeq(nil, s43), 0, 0, 0, 9, 'd')}
	unsettled.IdentityKey = l.ident + ":unsettled"
	t.Cleanup(func() { f.rdb.Del(f.ctx, unsettled.IdentityKey) })
	runOne(t, f, scripts.materialize, &unsettled)
	for i := range 2 {
		if at := f.rdb.ExpireTime(f.ctx, l.bucket(i)).Val(); at != time.Duration(l.bucketAt)*time.Second {
			t.Errorf("unsettled: bucket %d expires at %v, want bucket_expire_at %d", i, at, l.bucketAt)
		}
	}
}

// materialize.lua: fresh, then a retry of the same record, then a later record of the same
// dispatch (a duplicate). Each answers the canonical seq of the first.
func TestLayoutMaterialize(t *testing.T) {
	f := newFix(t)
	l := newLayout(t, f)
	// The duplicate is the same dispatch at the next offset: its own seq, members that start
	// with it, the same identity key and digest.
	s42, err := contract.ComposeMailboxSeq(layoutEpoch, layoutOffset+1)
	if err != nil {
		t.Fatal(err)
	}
	dup := l.materialize(layoutOffset+1, "41")
	dup.Seq = appendSeq(nil, s42)
	dup.Members = [][]byte{appendSeq(nil, s42), appendSeq(nil, s42)}
	for i, m := range dup.Members {
		dup.Members[i] = append(m, 0, 0, 0, 7, 'x')
	}
	steps := []struct {
		name string
		args *materializeArgs
		want materializeOut
		wm   string
	}{
		{"fresh", l.materialize(layoutOffset, "40"), materializeOut{Seq: string(l.seq), Duplicate: 0, Kind: "F"}, "41"},
		{"retry", l.materialize(layoutOffset, "40"), materializeOut{Seq: string(l.seq), Duplicate: 0, Kind: "R"}, "41"},
		{"duplicate", dup, materializeOut{Seq: string(l.seq), Duplicate: 1, Kind: "D"}, "42"},
	}
	for _, s := range steps {
		if got := runOne(t, f, scripts.materialize, s.args); got != s.want {
			t.Errorf("%s: reply %+v, want %+v", s.name, got, s.want)
		}
		if wm := f.rdb.Get(f.ctx, l.wm).Val(); wm != s.wm {
			t.Errorf("%s: watermark %s, want %s", s.name, wm, s.wm)
		}
		for i := range 2 {
			if got := f.rdb.ZRange(f.ctx, l.bucket(i), 0, -1).Val(); !reflect.DeepEqual(got, []string{string(l.members[i])}) {
				t.Errorf("%s: bucket %d holds %q, want its own member only", s.name, i, got)
			}
			if at := f.rdb.ExpireTime(f.ctx, l.bucket(i)).Val(); at != time.Duration(l.bucketAt)*time.Second {
				t.Errorf("%s: bucket %d expires at %v, want bucket_expire_at", s.name, i, at)
			}
			if d := f.rdb.HGet(f.ctx, l.index[i], "d20000").Val(); d != string(l.seq) {
				t.Errorf("%s: index %d day field %x", s.name, i, d)
			}
			if at := f.rdb.ExpireTime(f.ctx, l.index[i]).Val(); at != time.Duration(l.indexAt)*time.Second {
				t.Errorf("%s: index %d expires at %v, want index_expire_at", s.name, i, at)
			}
		}
		id := f.rdb.Get(f.ctx, l.ident).Val()
		if ttl := f.rdb.TTL(f.ctx, l.ident).Val(); id != string(bytes.Repeat([]byte{'d'}, 32))+string(l.seq) ||
			ttl <= 0 || ttl > layoutTTL*time.Second {
			t.Errorf("%s: identity %x with TTL %v", s.name, id, ttl)
		}
	}
}

// pull.lua reads what materialize wrote and stores the device cursor; trim.lua then raises the
// trim mark (a retry answers the same mark), and pull answers EXP.
func TestLayoutPullAndTrim(t *testing.T) {
	f := newFix(t)
	l := newLayout(t, f)
	runOne(t, f, scripts.materialize, l.materialize(layoutOffset, "40"))
	pull := func(cursor []byte) *pullArgs {
		lower := []byte("-")
		if cursor != nil {
			s, _ := parseSeq(string(cursor))
			lower = appendSeq([]byte{'['}, s+1)
		}
		return &pullArgs{EpochKey: l.epoch, WatermarkKey: l.wm, IndexKey: l.index[1], CursorKey: l.cursor,
			Cursor: cursor, Lower: lower, Limit: 3, MaxBytes: 1000, Prefix: l.prefix[1], Store: "1", TTL: 777, Window: 11}
	}
	trim := &trimArgs{IndexKey: l.index[1], Prefix: l.prefix[1], Cutoff: layoutDay + 1, TTL: 888}
	below := append(append([]byte(nil), l.seq[:7]...), l.seq[7]-1) // the seq just below the entry
	steps := []struct {
		name   string
		run    func() any
		want   any
		cursor string // the stored device cursor afterwards
	}{
		{"pull from zero", func() any { return runOne(t, f, scripts.pull, pull(nil)) },
			pullOut{Status: "OK", Next: string(l.seq), HasMore: 0, Members: []string{string(l.members[1])}}, ""},
		{"pull after the entry", func() any { return runOne(t, f, scripts.pull, pull(l.seq)) },
			pullOut{Status: "OK", Next: "", HasMore: 0, Members: []string{}}, string(l.seq)},
		{"trim", func() any { return runOne(t, f, scripts.trim, trim) }, trimOut{Mark: string(l.seq)}, string(l.seq)},
		{"trim retry", func() any { return runOne(t, f, scripts.trim, trim) }, trimOut{Mark: string(l.seq)}, string(l.seq)},
		{"pull below the mark", func() any { return runOne(t, f, scripts.pull, pull(below)) },
			pullOut{Status: "EXP", Next: string(l.seq), HasMore: 0, Members: []string{}}, string(l.seq)},
	}
	for _, s := range steps {
		if got := s.run(); !reflect.DeepEqual(got, s.want) {
			t.Errorf("%s: reply %+v, want %+v", s.name, got, s.want)
		}
		if c := f.rdb.Get(f.ctx, l.cursor).Val(); c != s.cursor {
			t.Errorf("%s: device cursor %x, want %x", s.name, c, s.cursor)
		}
	}
	if ttl := f.rdb.TTL(f.ctx, l.cursor).Val(); ttl <= 0 || ttl > 777*time.Second {
		t.Errorf("device cursor TTL %v, want the pull's ttl", ttl)
	}
	if n := f.rdb.Exists(f.ctx, l.bucket(1)).Val(); n != 0 {
		t.Error("trim left the bucket below the cutoff")
	}
	if m := f.rdb.HGetAll(f.ctx, l.index[1]).Val(); !reflect.DeepEqual(m, map[string]string{"t": string(l.seq)}) {
		t.Errorf("index after trim %q, want only the trim mark", m)
	}
}
