package mailboxstore

import (
	"slices"
	"strconv"
	"testing"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/keyfamily"
)

// Zset scores are doubles: compose(32, 0) = 2^53 and compose(32, 1) = 2^53+1 are the same double.
// Members are ordered by bytes instead, so they stay distinct and ordered at any epoch, and a
// cursor between them is exact. At the top of the offset space the upper bound carries into the
// next epoch (seq_next), which must not lose the last offset.
func TestSeqExactAboveTwoTo53(t *testing.T) {
	for _, tc := range []struct {
		epoch uint16
		start int64
	}{{32, 0}, {contract.MaxShardEpoch, contract.MaxLogOffset - 2}} {
		t.Run(strconv.Itoa(int(tc.epoch)), func(t *testing.T) {
			f := newFix(t)
			if err := f.rdb.Set(f.ctx, epochKey(f.shard), int(tc.epoch), 0).Err(); err != nil {
				t.Fatal(err)
			}
			f.ep = tc.epoch
			if tc.start > 0 {
				if err := f.rdb.Set(f.ctx, watermarkKey(f.shard), tc.start-1, 0).Err(); err != nil {
					t.Fatal(err)
				}
			}
			a := f.user()
			var want []contract.MailboxSeq
			for o := tc.start; o < tc.start+3; o++ {
				out := f.apply(f.mat(newDispatchID(t), 1, o, testDay, a))
				want = append(want, out[0].Seq)
			}
			if float64(want[0]) != float64(want[1]) && tc.epoch == 32 {
				t.Fatal("test premise: these seqs should collide as doubles")
			}
			if got := seqs(f.pull(a, 0, 100, 1<<20)); !slices.Equal(got, want) {
				t.Fatalf("zero cursor: %v, want %v", got, want)
			}
			for i := range want {
				if got := seqs(f.pull(a, want[i], 100, 1<<20)); !slices.Equal(got, want[i+1:]) {
					t.Fatalf("cursor %d: %v, want %v", want[i], got, want[i+1:])
				}
			}
		})
	}
}

func TestSeqBytesRoundTrip(t *testing.T) {
	for _, v := range []uint64{0, 1, 1 << 48, 1<<53 + 1, 1<<63 - 1} {
		s, err := parseSeq(string(appendSeq(nil, contract.MailboxSeq(v))))
		if err != nil || uint64(s) != v {
			t.Fatalf("%d: got %d, %v", v, s, err)
		}
	}
	if _, err := parseSeq(string(appendSeq(nil, contract.MailboxSeq(1<<63)))); err == nil {
		t.Fatal("bit 63 accepted")
	}
}

// The key layout is a storage contract (doc.go); changing it orphans every stored mailbox.
func TestKeyLayoutGolden(t *testing.T) {
	tenant := contract.U128{Hi: 0x0102030405060708, Lo: 0x090a0b0c0d0e0f10}
	uk := newUserKeys(12, tenant, 42)
	got := []string{epochKey(12), watermarkKey(12), identityKey(12, contract.DispatchID{Hi: 1, Lo: 2}),
		uk.bucketKey(20000), uk.index, cursorKey(12, tenant, 42, "phone")}
	want := []string{
		"qim:mbepoch:{s12}", "qim:mbwm:{s12}",
		"qim:mbdp:{s12}:00000000000000010000000000000002",
		"qim:mb:{s12}:0102030405060708090a0b0c0d0e0f10:42:20000",
		"qim:mbix:{s12}:0102030405060708090a0b0c0d0e0f10:42",
		"qim:mbcur:{s12}:0102030405060708090a0b0c0d0e0f10:42:phone",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("keys\n got %q\nwant %q", got, want)
	}
}

// Every key this package builds belongs to exactly the family declared for it; a neighbouring
// layout belongs to none, so an unknown key in the gate's scan really is unknown.
func TestKeyFamiliesClassifyBuiltKeys(t *testing.T) {
	fams := KeyFamilies()
	for _, f := range fams {
		if err := f.Validate(); err != nil {
			t.Error(err)
		}
	}
	tenant := contract.U128{Hi: 0x0102030405060708, Lo: 0x090a0b0c0d0e0f10}
	uk := newUserKeys(63, tenant, 1<<64-1)
	for key, want := range map[string]string{
		epochKey(0):      "mailboxstore.shard_epoch",
		watermarkKey(63): "mailboxstore.watermark",
		identityKey(5, contract.DispatchID{Hi: 1, Lo: 2}): "mailboxstore.dispatch_identity",
		uk.bucketKey(20000):                     "mailboxstore.day_bucket",
		uk.index:                                "mailboxstore.day_index",
		cursorKey(63, tenant, 42, "phone:a\nb"): "mailboxstore.cursor",
		uk.bucket:                               "",
		uk.index + ":":                          "",
		epochKey(1) + ":x":                      "",
		cursorKey(63, tenant, 42, ""):           "",
	} {
		got := keyfamily.MatchingNames(fams, key)
		if (want == "" && len(got) != 0) || (want != "" && (len(got) != 1 || got[0] != want)) {
			t.Errorf("%q belongs to %v, want %q", key, got, want)
		}
	}
	var entries []string
	for _, f := range fams {
		if f.MailboxEntries {
			entries = append(entries, f.Name)
		}
	}
	if !slices.Equal(entries, []string{"mailboxstore.day_bucket"}) {
		t.Errorf("families counting mailbox entries: %v", entries)
	}
}
