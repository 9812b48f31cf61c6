package contract

import (
	"errors"
	"math/rand/v2"
	"testing"
)

func TestMailboxSeqComposeSplitRoundTrip(t *testing.T) {
	cases := []struct {
		epoch  uint16
		offset uint64
		want   uint64
	}{
		{1, 0, 1 << 48},
		{1, 1, 1<<48 | 1},
		{2, 12345, 2<<48 | 12345},
		{MaxShardEpoch, MaxLogOffset, 1<<63 - 1},
	}
	for _, c := range cases {
		s, err := ComposeMailboxSeq(c.epoch, c.offset)
		if err != nil {
			t.Fatalf("compose(%d,%d): %v", c.epoch, c.offset, err)
		}
		if uint64(s) != c.want {
			t.Errorf("compose(%d,%d) = %#x, want %#x", c.epoch, c.offset, uint64(s), c.want)
		}
		if e, o := s.Split(); e != c.epoch || o != c.offset {
			t.Errorf("split(%#x) = (%d,%d), want (%d,%d)", uint64(s), e, o, c.epoch, c.offset)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 10000; i++ {
		e := uint16(1 + r.IntN(MaxShardEpoch))
		o := r.Uint64() & MaxLogOffset
		s, err := ComposeMailboxSeq(e, o)
		if err != nil || s.Epoch() != e || s.LogOffset() != o || uint64(s)>>63 != 0 {
			t.Fatalf("round trip (%d,%d) -> %#x, %v", e, o, uint64(s), err)
		}
	}
}

func TestMailboxSeqRejects(t *testing.T) {
	cases := []struct {
		name   string
		epoch  uint16
		offset uint64
	}{
		{"epoch zero is reserved for the empty cursor", 0, 5},
		{"epoch with bit 15 would set bit 63", MaxShardEpoch + 1, 0},
		{"epoch max u16", 0xFFFF, 0},
		{"offset beyond 48 bits", 1, MaxLogOffset + 1},
	}
	for _, c := range cases {
		if _, err := ComposeMailboxSeq(c.epoch, c.offset); !errors.Is(err, ErrMailboxSeq) {
			t.Errorf("%s: err = %v, want ErrMailboxSeq", c.name, err)
		}
	}
	for _, v := range []uint64{1 << 63, 1<<63 | 1, ^uint64(0)} {
		if _, err := NewMailboxSeq(v); !errors.Is(err, ErrBit63) {
			t.Errorf("NewMailboxSeq(%#x) err = %v, want ErrBit63", v, err)
		}
		if _, err := NewConversationSeq(v); !errors.Is(err, ErrBit63) {
			t.Errorf("NewConversationSeq(%#x) err = %v, want ErrBit63", v, err)
		}
	}
	if _, err := NewMailboxSeq(1<<63 - 1); err != nil {
		t.Errorf("largest valid mailbox_seq rejected: %v", err)
	}
}

// A device that has applied nothing holds cursor 0; the very first dispatch record of a shard
// (log offset 0) must still be delivered to it. This broke once when epoch 0 was allowed.
func TestZeroCursorIncludesLogOffsetZero(t *testing.T) {
	first, err := ComposeMailboxSeq(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	var zero MailboxSeq
	if !first.After(zero) {
		t.Fatalf("entry at (epoch 1, offset 0) = %#x is not after the zero cursor", uint64(first))
	}
	if first.After(first) {
		t.Fatal("an applied entry must not be after its own cursor")
	}
}

func TestMailboxSeqMonotoneAcrossEpochs(t *testing.T) {
	hi, _ := ComposeMailboxSeq(1, MaxLogOffset)
	lo, _ := ComposeMailboxSeq(2, 0)
	if !lo.After(hi) {
		t.Fatal("a new epoch must sort after every offset of the previous epoch")
	}
}

func TestSeqBucket(t *testing.T) {
	for _, c := range []struct{ seq, bucket uint64 }{{0, 0}, {1023, 0}, {1024, 1}, {5000, 4}} {
		if got := ConversationSeq(c.seq).SeqBucket(); got != c.bucket {
			t.Errorf("bucket(%d) = %d, want %d", c.seq, got, c.bucket)
		}
	}
}
