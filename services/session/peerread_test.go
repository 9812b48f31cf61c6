package session

import (
	"testing"
	"time"
)

// A direct row carries the peer's read watermark (a read receipt), fresh on every page and in a
// MARK_READ's entry, even though the peer's MARK_READ never touches this user's snapshot.
func TestDirectRowsCarryThePeersReadWatermark(t *testing.T) {
	e := newEnv(t, 2)
	r := e.mustRun(nil)
	alice, bob := e.user(), e.user()
	seqs := e.send(msg{from: alice, to: bob}, msg{from: alice, to: bob}, msg{from: alice, to: bob}) // a sender has read its own
	conv := e.conv(alice, bob)
	eventually(t, 20*time.Second, "the conversation listed for both", func() bool {
		return findEntry(r.list(alice), conv) != nil && findEntry(r.list(bob), conv) != nil
	})
	if got := findEntry(r.list(alice), conv).GetPeerReadConversationSeq(); got != 0 {
		t.Fatalf("before bob read: peer read %d, want 0", got)
	}
	if out := r.markRead(bob, conv, seqs[1]); out.GetErrorCode() != 0 {
		t.Fatal(out)
	}
	if got := findEntry(r.list(alice), conv).GetPeerReadConversationSeq(); got != seqs[1] {
		t.Fatalf("alice's row after bob read %d: peer read %d", seqs[1], got)
	}
	out := r.markRead(alice, conv, seqs[2])
	if got := out.GetEntry().GetPeerReadConversationSeq(); out.GetErrorCode() != 0 || got != seqs[1] {
		t.Fatalf("alice's MARK_READ entry: %v, peer read %d, want %d", out, got, seqs[1])
	}
}
