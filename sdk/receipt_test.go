package sdk

import (
	"testing"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// A READ_RECEIPT becomes a ReadReceipt event with the peer and its watermark.
func TestReadReceiptEvent(t *testing.T) {
	h := newHarness(t)
	h.connect()
	conv := contract.DirectConversationID(contract.TenantID{}, self, 7)
	cb := conv.Bytes()
	h.frame(contract.OpReadReceipt, 0, &qimv1.ReadReceipt{ConversationId: cb[:], ReaderUserId: 7, ReadConversationSeq: 12})
	var got []ReadReceipt
	for _, ev := range h.events {
		if r, ok := ev.(ReadReceipt); ok {
			got = append(got, r)
		}
	}
	if len(got) != 1 || got[0] != (ReadReceipt{Conversation: conv, Reader: 7, Seq: 12}) {
		t.Fatalf("ReadReceipt events %+v, want one from 7 at 12", got)
	}
}
