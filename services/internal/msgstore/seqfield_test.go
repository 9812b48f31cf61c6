package msgstore

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// Golden vectors: the stored record format is frozen, so these bytes must never change.
func TestAppendSeqGolden(t *testing.T) {
	base := []byte{0x0a, 0x01, 0xff} // field 1 (tenant_id), 1 byte
	tests := []struct {
		seq  uint64
		tail []byte
	}{
		{1, []byte{0x20, 0x01}},
		{127, []byte{0x20, 0x7f}},
		{128, []byte{0x20, 0x80, 0x01}},
		{300, []byte{0x20, 0xac, 0x02}},
		{1 << 21, []byte{0x20, 0x80, 0x80, 0x80, 0x01}},
		{1<<53 - 1, []byte{0x20, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f}},
	}
	for _, tc := range tests {
		got := AppendSeq(base, tc.seq)
		if want := append(append([]byte{}, base...), tc.tail...); !bytes.Equal(got, want) {
			t.Errorf("AppendSeq(%d) = %x, want %x", tc.seq, got, want)
		}
		if !bytes.Equal(base, []byte{0x0a, 0x01, 0xff}) {
			t.Fatal("AppendSeq modified its input")
		}
	}
}

// Appending field 4 to a record that already carries one must still decode to the appended seq
// (protobuf: last occurrence of a scalar wins), which is what makes the append valid.
func TestAppendSeqDecodes(t *testing.T) {
	for _, withOld := range []bool{false, true} {
		rec := &internalv1.MessageRecord{Body: []byte("hello"), ConversationId: make([]byte, 16)}
		if withOld {
			rec.ConversationSeq = 99
		}
		b, err := proto.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		var got internalv1.MessageRecord
		if err := proto.Unmarshal(AppendSeq(b, 4242), &got); err != nil {
			t.Fatal(err)
		}
		if got.GetConversationSeq() != 4242 || string(got.GetBody()) != "hello" {
			t.Errorf("withOld=%v: decoded seq %d body %q", withOld, got.GetConversationSeq(), got.GetBody())
		}
	}
}
