package sdk

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// Every answer opcode of a call reaches its caller by request id, with no per-opcode case in the
// engine: a READ_RECEIPTS_BATCH the engine once dropped left ReadReceipts waiting forever.
func TestReadReceiptsAnswerReachesTheCall(t *testing.T) {
	h := newHarness(t)
	h.connect()
	group := contract.DeriveGroupID(contract.TenantID{}, peer, contract.U128{Lo: 7})
	gid := group.Bytes()
	c := &rpcCmd{op: contract.OpPullReadReceipts, want: contract.OpReadReceiptsBatch,
		msg: &qimv1.PullReadReceipts{ConversationId: gid[:], ConversationSeq: 4}, reply: make(chan rpcResult, 1)}
	h.e.startRPC(c, h.now)
	b := &qimv1.ReadReceiptsBatch{ConversationId: gid[:], ConversationSeq: 4, ReadCount: 1, AudienceCount: 2,
		Reads: []*qimv1.MemberRead{{UserId: 5, ReadConversationSeq: 4}, {UserId: 6, ReadConversationSeq: 3}}}
	h.frame(contract.OpReadReceiptsBatch, h.lastSent(contract.OpPullReadReceipts).id, b)
	select { // the harness hands frames to the engine synchronously
	case r := <-c.reply:
		if r.err != nil {
			t.Fatal(r.err)
		}
	default:
		t.Fatal("READ_RECEIPTS_BATCH did not answer the call")
	}
	got, err := receiptsOf(group, 4, b)
	if err != nil || got.ReadCount != 1 || got.Audience != 2 || len(got.Reads) != 2 || got.Reads[1].Read != 3 {
		t.Fatalf("receipts %+v %v", got, err)
	}
	b.ConversationSeq = 5
	if _, err := receiptsOf(group, 4, b); !errors.Is(err, ErrProtocol) {
		t.Fatalf("an answer about another seq: %v, want ErrProtocol", err)
	}
	b.ConversationSeq, b.ReadCount = 4, 3
	if _, err := receiptsOf(group, 4, b); !errors.Is(err, ErrProtocol) {
		t.Fatalf("read by more than the audience: %v, want ErrProtocol", err)
	}
}

// SetGroupTyping sends a TYPING naming the group (and no peer); a direct conversation is refused
// before anything is queued.
func TestGroupTypingFrame(t *testing.T) {
	h := newHarness(t)
	group := contract.DeriveGroupID(contract.TenantID{}, peer, contract.U128{Lo: 9})
	c := &Client{typing: make(chan *qimv1.Typing, 1)}
	if c.SetGroupTyping(contract.DirectConversationID(contract.TenantID{}, self, peer), true) {
		t.Fatal("SetGroupTyping accepted a direct conversation")
	}
	if !c.SetGroupTyping(group, true) {
		t.Fatal("SetGroupTyping refused a group")
	}
	h.connect()
	h.answerPull(false)
	h.e.sendTyping(<-c.typing)
	var tp qimv1.Typing
	sent := h.sent(contract.OpTyping)
	gid := group.Bytes()
	if len(sent) != 1 || proto.Unmarshal(sent[0].payload, &tp) != nil || string(tp.GetGroupId()) != string(gid[:]) ||
		tp.GetPeerUserId() != 0 || !tp.GetTyping() {
		t.Fatalf("TYPING frames %+v (%v), want one naming the group", sent, &tp)
	}
}
