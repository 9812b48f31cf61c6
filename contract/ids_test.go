package contract

import (
	"bytes"
	"errors"
	"sort"
	"testing"
)

func TestMessageIDLayoutGolden(t *testing.T) {
	m, err := NewMessageID(1_700_000_000_000, 7, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	// Frozen: the bit layout is a storage and wire contract.
	if got, want := m.String(), "018bcfe5680000000007000100030000"; got != want {
		t.Fatalf("layout changed: %s, want %s", got, want)
	}
	if m.TimeMs() != 1_700_000_000_000 || m.Logical() != 7 || m.RegionID() != 1 || m.WriterID() != 3 || m.Reserved() != 0 {
		t.Fatalf("fields: %d %d %d %d %d", m.TimeMs(), m.Logical(), m.RegionID(), m.WriterID(), m.Reserved())
	}
	big, _ := NewMessageID(1<<48-1, 1<<32-1, 0xFFFF, 0xFFFF)
	if big.TimeMs() != 1<<48-1 || big.Logical() != 1<<32-1 || big.RegionID() != 0xFFFF || big.WriterID() != 0xFFFF {
		t.Fatal("max fields do not round trip")
	}
	if _, err := NewMessageID(0, 1, 1, 1); !errors.Is(err, ErrMessageIDField) {
		t.Fatal("zero time accepted")
	}
	if _, err := NewMessageID(1<<48, 1, 1, 1); !errors.Is(err, ErrMessageIDField) {
		t.Fatal("49-bit time accepted")
	}
}

func TestMessageIDOrderMatchesBytesAndHLC(t *testing.T) {
	ids := []MessageID{}
	for _, f := range []struct {
		ms      uint64
		logical uint32
		region  uint16
		writer  uint16
	}{{5, 0, 9, 9}, {4, 1 << 20, 9, 9}, {5, 1, 0, 0}, {5, 0, 9, 10}, {6, 0, 0, 0}, {4, 70000, 1, 1}} {
		m, err := NewMessageID(f.ms, f.logical, f.region, f.writer)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m)
	}
	byCompare := append([]MessageID(nil), ids...)
	sort.Slice(byCompare, func(i, j int) bool { return byCompare[i].Compare(byCompare[j]) < 0 })
	byBytes := append([]MessageID(nil), ids...)
	sort.Slice(byBytes, func(i, j int) bool {
		a, b := byBytes[i].Bytes(), byBytes[j].Bytes()
		return bytes.Compare(a[:], b[:]) < 0
	})
	for i := range byCompare {
		if byCompare[i] != byBytes[i] {
			t.Fatalf("Compare order differs from byte order at %d", i)
		}
		if i > 0 {
			p, c := byCompare[i-1], byCompare[i]
			if p.TimeMs() > c.TimeMs() || (p.TimeMs() == c.TimeMs() && p.Logical() > c.Logical()) {
				t.Fatalf("order is not (time, logical) first: %s before %s", p, c)
			}
		}
	}
	a, _ := NewMessageID(5, 0, 9, 9)
	b, _ := NewMessageID(5, 0, 9, 10)
	if a == b {
		t.Fatal("two writers in the same millisecond produced equal ids")
	}
}

func TestParseIDs(t *testing.T) {
	if _, err := ParseClientMessageID(make([]byte, 16)); !errors.Is(err, ErrZeroID) {
		t.Errorf("zero client_message_id: %v", err)
	}
	for _, n := range []int{0, 15, 17} {
		if _, err := ParseClientMessageID(make([]byte, n)); !errors.Is(err, ErrBadLength) {
			t.Errorf("client_message_id of %d bytes: %v", n, err)
		}
	}
	ok := bytes.Repeat([]byte{1}, 16)
	if _, err := ParseClientMessageID(ok); err != nil {
		t.Error(err)
	}
	bad := make([]byte, 16)
	bad[0], bad[15] = 1, 1
	if _, err := ParseMessageID(bad); !errors.Is(err, ErrMessageIDField) {
		t.Errorf("reserved bits accepted: %v", err)
	}
	if _, err := ParseConversationID(make([]byte, 16)); !errors.Is(err, ErrConversationID) {
		t.Errorf("kind 0 conversation accepted: %v", err)
	}
}

func TestConversationIDs(t *testing.T) {
	tenant := U128{}
	ab, ba := DirectConversationID(tenant, 1, 2), DirectConversationID(tenant, 2, 1)
	if ab != ba {
		t.Fatal("direct conversation id depends on argument order")
	}
	if got, want := ab.String(), "1dacf33da28e374f120e96885e06779a"; got != want {
		t.Fatalf("direct id vector changed: %s, want %s", got, want)
	}
	if ab.Kind() != KindDirect {
		t.Fatalf("kind = %v", ab.Kind())
	}
	if DirectConversationID(U128{Lo: 1}, 1, 2) == ab {
		t.Fatal("tenant not part of the direct id")
	}
	raw := U128{Hi: 0xF123456789ABCDEF, Lo: 42}
	g, err := GroupConversationID(raw)
	if err != nil {
		t.Fatal(err)
	}
	g2, _ := GroupConversationID(U128(withKind(raw, KindRoom)))
	if g != g2 || g.Kind() != KindGroup {
		t.Fatal("group id is not canonical regardless of the kind bits the client sent")
	}
	r, _ := RoomConversationID(raw)
	if r.Kind() != KindRoom || r == g {
		t.Fatal("room and group ids collide")
	}
	if _, err := GroupConversationID(U128{Hi: 0xF << 60}); !errors.Is(err, ErrConversationID) {
		t.Fatal("group id that is zero after stripping the kind accepted")
	}
	b := ab.Bytes()
	back, err := ParseConversationID(b[:])
	if err != nil || back != ab {
		t.Fatalf("parse round trip: %v", err)
	}
}
