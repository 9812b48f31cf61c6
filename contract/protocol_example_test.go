package contract_test

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/contract/devtoken"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

// The frame examples of docs/protocol.md, built by the real encoders (devtoken, protobuf, wire)
// and checked against an independent bitwise CRC-32C, so every byte the doc shows is one a
// conforming client must produce. This is an external test package because contract may not
// import wire; the doc section helper comes from protocol_doc_test.go.

const (
	exampleSecret  = "example-secret-0123456789"
	exampleUser    = 42
	exampleDevice  = "phone-1"
	exampleVersion = "example/1"
)

var exampleExpiry = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)

// crc32cBitwise is CRC-32C written out from its definition (reflected polynomial 0x82F63B78,
// initial value and final XOR 0xFFFFFFFF), independent of hash/crc32's table and instructions.
func crc32cBitwise(b []byte) uint32 {
	crc := ^uint32(0)
	for _, x := range b {
		crc ^= uint32(x)
		for range 8 {
			if crc&1 != 0 {
				crc = crc>>1 ^ 0x82F63B78
			} else {
				crc >>= 1
			}
		}
	}
	return ^crc
}

func spaced(b []byte) string {
	parts := make([]string, len(b))
	for i, x := range b {
		parts[i] = fmt.Sprintf("%02x", x)
	}
	return strings.Join(parts, " ")
}

// header checks one encoded header against the independent CRC and decodes it.
func header(t *testing.T, b []byte) wire.Header {
	t.Helper()
	if got, want := binary.BigEndian.Uint32(b[16:20]), crc32cBitwise(b[:16]); got != want {
		t.Fatalf("header CRC %08x, bitwise CRC-32C says %08x", got, want)
	}
	h, err := wire.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestProtocolDocAuthExample(t *testing.T) {
	if got := crc32cBitwise([]byte("123456789")); got != 0xE3069283 {
		t.Fatalf("bitwise CRC-32C check value %08x", got)
	}
	token, err := devtoken.Issue([]byte(exampleSecret), devtoken.Claims{User: exampleUser, Device: exampleDevice,
		ExpiresAtMs: exampleExpiry.UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	var tenant0 contract.TenantID
	t0 := tenant0.Bytes()
	req := &qimv1.AuthRequest{Token: token, DeviceId: exampleDevice, ClientVersion: exampleVersion, TenantId: t0[:]}
	payload, err := proto.MarshalOptions{Deterministic: true}.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	frame, err := wire.AppendMessage(nil, wire.Message{Opcode: contract.OpAuth, StreamID: wire.DataStream, RequestID: 1, Payload: payload})
	if err != nil {
		t.Fatal(err)
	}
	h := header(t, frame)
	if len(frame) != wire.HeaderSize+len(payload) || h.Flags != 0 {
		t.Fatalf("AUTH of %d bytes did not encode as one unflagged frame", len(payload))
	}

	var b strings.Builder
	fmt.Fprintf(&b, "The token is a dev token for tenant 0, user %d, device `%s`, expiring %s,\nsigned with the secret `%s`:\n\n",
		exampleUser, exampleDevice, exampleExpiry.Format(time.RFC3339), exampleSecret)
	fmt.Fprintf(&b, "```text\n%s\n```\n\n", token)
	b.WriteString("The `AuthRequest` payload, field by field (protobuf wire format: a tag byte `field << 3 | 2`,\nthe length, the bytes):\n\n")
	b.WriteString("| bytes | field | value |\n| --- | --- | --- |\n")
	fields := req.ProtoReflect().Descriptor().Fields()
	for rest := payload; len(rest) > 0; {
		num, typ, n := protowire.ConsumeTag(rest)
		v, m := protowire.ConsumeBytes(rest[n:])
		if n < 0 || typ != protowire.BytesType || m < 0 {
			t.Fatalf("unexpected field encoding at %x", rest)
		}
		fmt.Fprintf(&b, "| `%s` + %d bytes | %d `%s` | %s |\n", spaced(rest[:n+m-len(v)]), len(v), num,
			fields.ByNumber(num).Name(), exampleValue(fields.ByNumber(num), v))
		rest = rest[n+m:]
	}
	b.WriteString("\nThe header, field by field:\n\n| offset | bytes | field | value |\n| --- | --- | --- | --- |\n")
	for _, f := range []struct {
		off, size   int
		name, value string
	}{
		{0, 2, "magic", `"QM"`},
		{2, 1, "version", "1"},
		{3, 1, "flags", "none: not compressed, no more chunks"},
		{4, 2, "opcode", fmt.Sprintf("0x%04X %v", uint16(h.Opcode), h.Opcode)},
		{6, 2, "stream id", fmt.Sprintf("%d (the data stream)", h.StreamID)},
		{8, 4, "request id", fmt.Sprintf("%d (AUTH_OK or ERROR will carry it)", h.RequestID)},
		{12, 4, "length", fmt.Sprintf("%d payload bytes follow", h.Length)},
		{16, 4, "header CRC", fmt.Sprintf("CRC32C of bytes 0-15 = 0x%08X", binary.BigEndian.Uint32(frame[16:20]))},
	} {
		fmt.Fprintf(&b, "| %d | `%s` | %s | %s |\n", f.off, spaced(frame[f.off:f.off+f.size]), f.name, f.value)
	}
	fmt.Fprintf(&b, "\nThe whole frame, %d bytes, as the client writes it:\n\n```text\n%s```\n", len(frame), hex.Dump(frame))
	contract.CheckProtocolDocSection(t, "auth-example", b.String())
}

// exampleValue describes one field value of the AUTH example.
func exampleValue(fd protoreflect.FieldDescriptor, v []byte) string {
	switch {
	case fd.Name() == "token":
		return "the token above"
	case fd.Name() == "tenant_id":
		return "16 zero bytes: tenant 0"
	case fd.Kind() == protoreflect.StringKind:
		return fmt.Sprintf("%q", v)
	}
	return "`" + spaced(v) + "`"
}

// TestProtocolDocChunkExample shows what a client reads when the server answers a pull with a
// 100 KiB MAILBOX_BATCH and a PING meanwhile: the Writer puts the PONG between two chunks.
func TestProtocolDocChunkExample(t *testing.T) {
	batch, err := wire.AppendMessage(nil, wire.Message{Opcode: contract.OpMailboxBatch, StreamID: wire.DataStream, RequestID: 2,
		Payload: make([]byte, 100<<10)})
	if err != nil {
		t.Fatal(err)
	}
	pongPayload, _ := proto.Marshal(&qimv1.Pong{ClientTimeMs: 1, ServerTimeMs: 2, HeartbeatIntervalMs: 60_000, HeartbeatTimeoutMs: 150_000})
	pong, err := wire.AppendMessage(nil, wire.Message{Opcode: contract.OpPong, StreamID: wire.ControlStream, RequestID: 3, Payload: pongPayload})
	if err != nil {
		t.Fatal(err)
	}
	first := wire.HeaderSize + wire.ChunkSize
	frames := [][]byte{batch[:first], pong, batch[first:]}
	var b strings.Builder
	b.WriteString("| # | header (20 bytes) | opcode | stream | request | flags | length |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	for i, f := range frames {
		h := header(t, f)
		if len(f) != wire.HeaderSize+int(h.Length) {
			t.Fatalf("frame %d is not one whole frame", i+1)
		}
		flags := "—"
		if h.Flags&wire.FlagMore != 0 {
			flags = "MORE"
		}
		fmt.Fprintf(&b, "| %d | `%s` | %v | %d | %d | %s | %d |\n", i+1, spaced(f[:wire.HeaderSize]), h.Opcode, h.StreamID,
			h.RequestID, flags, h.Length)
	}
	contract.CheckProtocolDocSection(t, "chunk-example", b.String())
}
