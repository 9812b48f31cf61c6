package session

import (
	"bytes"
	"testing"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

const (
	me   = contract.UserID(7)
	them = contract.UserID(9)
)

// rec builds a record of a direct conversation between me and them.
func rec(seq uint64, sender contract.UserID, typ contract.MessageType, flags uint32) *internalv1.MessageRecord {
	peer := them
	if sender == them {
		peer = me
	}
	return &internalv1.MessageRecord{ConversationSeq: seq, SenderUserId: uint64(sender), DirectPeerUserId: uint64(peer),
		MessageType: uint32(typ), Flags: flags, Body: []byte("hi"), ClientMessageId: bytes.Repeat([]byte{byte(seq)}, 16)}
}

var directConv = contract.ConversationID{Hi: uint64(contract.KindDirect) << 60, Lo: 1}

// The unread definition: seq > read, not mine, not CONTROL, not recalled or deleted; exact up to
// the window, saturated beyond; holes never count; never latest − read.
func TestCountUnread(t *testing.T) {
	T, C := contract.MessageText, contract.MessageControl
	tests := []struct {
		name         string
		latest, read uint64
		recs         []*internalv1.MessageRecord
		unread       uint32
		exact        bool
	}{
		{"nothing", 0, 0, nil, 0, true},
		{"three from them", 3, 0, []*internalv1.MessageRecord{rec(3, them, T, 0), rec(2, them, T, 0), rec(1, them, T, 0)}, 3, true},
		{"read watermark", 3, 2, []*internalv1.MessageRecord{rec(3, them, T, 0), rec(2, them, T, 0)}, 1, true},
		{"own messages never count", 4, 0, []*internalv1.MessageRecord{rec(4, me, T, 0), rec(3, me, T, 0), rec(2, them, T, 0)}, 1, true},
		{"control never counts", 2, 0, []*internalv1.MessageRecord{rec(2, them, C, 0), rec(1, them, T, 0)}, 1, true},
		{"recalled and deleted never count", 3, 0, []*internalv1.MessageRecord{rec(3, them, T, flagRecalled), rec(2, them, T, flagDeleted), rec(1, them, T, 0)}, 1, true},
		{"holes are not unread (latest − read would say 9)", 10, 1, []*internalv1.MessageRecord{rec(10, them, T, 0), rec(4, them, T, 0)}, 2, true},
		{"unknown types count", 1, 0, []*internalv1.MessageRecord{rec(1, them, contract.MessageType(99), 0)}, 1, true},
		{"window edge is exact", 250, 50, []*internalv1.MessageRecord{rec(250, them, T, 0)}, 1, true},
		{"beyond the window saturates", 251, 50, []*internalv1.MessageRecord{rec(251, them, T, 0)}, contract.UnreadExactWindow, false},
		{"records at or below read are ignored", 5, 5, []*internalv1.MessageRecord{rec(5, them, T, 0), rec(4, them, T, 0)}, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, exact := countUnread(window{self: me, conv: directConv, latest: tc.latest, read: tc.read, recs: tc.recs})
			if n != tc.unread || exact != tc.exact {
				t.Fatalf("unread = (%d, %v), want (%d, %v)", n, exact, tc.unread, tc.exact)
			}
		})
	}
}

func TestSummarizeHead(t *testing.T) {
	big := rec(5, them, contract.MessageText, 0)
	big.Body = make([]byte, 2000)
	tests := []struct {
		name     string
		recs     []*internalv1.MessageRecord
		headSeq  uint64 // 0: no head
		body     bool
		anchor   bool
		latest   uint64
		wantPeer contract.UserID
	}{
		{"newest heads", []*internalv1.MessageRecord{rec(3, them, contract.MessageText, 0), rec(2, me, contract.MessageText, 0)}, 3, true, false, 3, them},
		{"control never heads by itself", []*internalv1.MessageRecord{rec(3, them, contract.MessageControl, 0), rec(2, me, contract.MessageText, 0)}, 2, true, true, 3, them},
		{"only control: no head", []*internalv1.MessageRecord{rec(1, them, contract.MessageControl, 0)}, 0, false, false, 1, them},
		{"recalled heads without body", []*internalv1.MessageRecord{rec(4, them, contract.MessageText, flagRecalled)}, 4, false, false, 4, them},
		{"large body left out", []*internalv1.MessageRecord{big}, 5, false, false, 5, them},
		{"own message carries the anchor", []*internalv1.MessageRecord{rec(6, me, contract.MessageText, 0)}, 6, true, true, 6, them},
		{"empty", nil, 0, false, false, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := summarize(window{self: me, conv: directConv, latest: tc.latest, recs: tc.recs}, 1024)
			if s.latestSeq != tc.latest || s.peer != tc.wantPeer {
				t.Fatalf("latest %d peer %d, want %d %d", s.latestSeq, s.peer, tc.latest, tc.wantPeer)
			}
			if tc.headSeq == 0 {
				if s.head != nil {
					t.Fatalf("head = %v, want none", s.head)
				}
				return
			}
			if s.head == nil || s.head.GetConversationSeq() != tc.headSeq {
				t.Fatalf("head = %v, want seq %d", s.head, tc.headSeq)
			}
			if (s.head.Body != nil) != tc.body || (len(s.head.GetClientMessageId()) != 0) != tc.anchor {
				t.Fatalf("head body present %v anchor %x, want body %v anchor %v", s.head.Body != nil, s.head.GetClientMessageId(), tc.body, tc.anchor)
			}
		})
	}
}

func TestExactWindowBoundary(t *testing.T) {
	for _, tc := range []struct {
		latest, read uint64
		want         bool
	}{{0, 0, true}, {200, 0, true}, {201, 0, false}, {201, 1, true}, {5, 9, true}} {
		if got := exactWindow(tc.latest, tc.read); got != tc.want {
			t.Errorf("exactWindow(%d, %d) = %v", tc.latest, tc.read, got)
		}
	}
}
