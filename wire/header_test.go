package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/qim-dev/qim/contract"
)

// goldenHeader and goldenHex freeze the header layout: if this test fails, the change breaks
// every shipped client. The CRC was cross-checked against an independent bitwise CRC-32C.
var goldenHeader = Header{
	Flags:     FlagCompressed | FlagMore,
	Opcode:    contract.OpMailboxBatch,
	StreamID:  0x0102,
	RequestID: 0xDEADBEEF,
	Length:    0x00010000,
}

const goldenHex = "514d" + "01" + "03" + "0302" + "0102" + "deadbeef" + "00010000" + "36529447"

func TestHeaderGolden(t *testing.T) {
	got := hex.EncodeToString(AppendHeader(nil, goldenHeader))
	if got != goldenHex {
		t.Fatalf("header encoding changed:\n got %s\nwant %s", got, goldenHex)
	}
	b, _ := hex.DecodeString(goldenHex)
	h, err := ParseHeader(b)
	if err != nil || h != goldenHeader {
		t.Fatalf("ParseHeader(golden) = %+v, %v; want %+v", h, err, goldenHeader)
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	tests := []Header{
		{},
		{Opcode: contract.OpPing},
		{Flags: FlagMore, Opcode: contract.OpMailboxBatch, StreamID: 1, RequestID: 1, Length: ChunkSize},
		{Flags: FlagCompressed, Opcode: 0xFFFF, StreamID: 0xFFFF, RequestID: 0xFFFFFFFF, Length: MaxPayload},
		{Flags: FlagCompressed | FlagMore, Opcode: contract.OpSend, StreamID: 7, RequestID: 42, Length: 1},
	}
	for _, want := range tests {
		b := AppendHeader([]byte("prefix"), want)
		if len(b) != len("prefix")+HeaderSize {
			t.Fatalf("AppendHeader length %d", len(b))
		}
		got, err := ParseHeader(b[len("prefix"):])
		if err != nil || got != want {
			t.Errorf("round trip %+v: got %+v, %v", want, got, err)
		}
	}
}

// TestHeaderRejects covers each header-level check, including that a reserved flag is rejected
// even under a correct CRC (the peer meant it, so it is not corruption).
func TestHeaderRejects(t *testing.T) {
	valid := AppendHeader(nil, goldenHeader)
	// AppendHeader does not validate, so it produces reserved flags under a correct CRC.
	withFlags := func(f Flags) []byte {
		h := goldenHeader
		h.Flags = f
		return AppendHeader(nil, h)
	}
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"short", valid[:HeaderSize-1], errShortHeader},
		{"bad magic", func() []byte { b := append([]byte(nil), valid...); b[0] = 'X'; return b }(), ErrBadMagic},
		{"bad version", func() []byte { b := append([]byte(nil), valid...); b[2] = 2; return b }(), ErrBadVersion},
		{"version zero", func() []byte { b := append([]byte(nil), valid...); b[2] = 0; return b }(), ErrBadVersion},
		{"bad crc", func() []byte { b := append([]byte(nil), valid...); b[19] ^= 0xFF; return b }(), ErrBadCRC},
		{"need ack", withFlags(FlagNeedAck), ErrBadFlags},
		{"reserved 0x08", withFlags(FlagCompressed | 0x08), ErrBadFlags},
		{"reserved 0x80", withFlags(0x80), ErrBadFlags},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ParseHeader(tt.b); !errors.Is(err, tt.want) {
				t.Fatalf("ParseHeader = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestHeaderSingleBitFlips: no single-bit corruption of the CRC-covered bytes may decode; each
// must be caught as CRC failure or, for magic and version, as the more specific error.
func TestHeaderSingleBitFlips(t *testing.T) {
	valid := AppendHeader(nil, goldenHeader)
	for i := 0; i < crcOffset*8; i++ {
		b := append([]byte(nil), valid...)
		b[i/8] ^= 1 << (i % 8)
		_, err := ParseHeader(b)
		switch {
		case err == nil:
			t.Fatalf("bit %d flipped: header decoded", i)
		case i < 16 && !errors.Is(err, ErrBadMagic),
			i >= 16 && i < 24 && !errors.Is(err, ErrBadVersion),
			i >= 24 && !errors.Is(err, ErrBadCRC):
			t.Fatalf("bit %d flipped: unexpected error %v", i, err)
		}
		// The Reader must agree, with a payload present so length changes are not the reason.
		frame := append(b, make([]byte, goldenHeader.Length)...)
		if _, err := NewReader(bytes.NewReader(frame)).ReadMessage(); err == nil {
			t.Fatalf("bit %d flipped: Reader decoded a message", i)
		}
	}
}

func TestAppendFrameValidates(t *testing.T) {
	if _, err := AppendFrame(nil, Header{Flags: FlagNeedAck}, nil); !errors.Is(err, ErrBadFlags) {
		t.Errorf("NEED_ACK: %v", err)
	}
	if _, err := AppendFrame(nil, Header{Flags: 0x40}, nil); !errors.Is(err, ErrBadFlags) {
		t.Errorf("reserved bit: %v", err)
	}
	var oe *OversizeError
	if _, err := AppendFrame(nil, Header{}, make([]byte, MaxPayload+1)); !errors.As(err, &oe) ||
		oe.Length != MaxPayload+1 || oe.Limit != MaxPayload || !errors.Is(err, ErrOversize) {
		t.Errorf("oversize: %v", err)
	}
	b := mustFrame(t, nil, Header{Opcode: contract.OpSend, Length: 999}, []byte("abc"))
	fs := splitFrames(t, b)
	if len(fs) != 1 || fs[0].Length != 3 || string(fs[0].payload) != "abc" {
		t.Errorf("AppendFrame must set Length from the payload: %+v", fs)
	}
}
