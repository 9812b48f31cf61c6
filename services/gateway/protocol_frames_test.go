package gateway

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"net"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/wire"
)

// The statements of docs/protocol.md about opcodes, size limits and the frames the server
// writes, checked against a real gateway (the connection-level cases are in protocol_test.go).

// TestOpcodeTableMatchesGateway sends every opcode of the contract table on an authenticated
// connection: an uplink row marked served must be handled, every other opcode is answered
// UNIMPLEMENTED and the connection stays usable.
func TestOpcodeTableMatchesGateway(t *testing.T) {
	h := startGateway(t, harnessOpts{})
	c := h.login(newIdentity(t, "ops"))
	for _, info := range contract.Opcodes() {
		if info.Op == contract.OpAuth || info.Op == contract.OpLogout {
			continue // second_auth and logout: TestProtocolCases
		}
		id := c.nextID()
		c.writeBytes(info.Op, id, nil)
		if info.Op == contract.OpPong {
			c.ping() // a client PONG gets no answer, so the next frame answers this PING
			continue
		}
		m := c.read(caseWait)
		var e qimv1.ErrorFrame
		if m.Opcode == contract.OpError {
			_ = proto.Unmarshal(m.Payload, &e)
		}
		unimplemented := m.Opcode == contract.OpError && contract.ErrorCode(e.GetCode()) == contract.ErrCodeUnimplemented
		handled := info.Served && info.Direction&contract.Uplink != 0
		if m.RequestID != id || unimplemented == handled {
			t.Errorf("%s (served=%v, %v): answered %v %v request %d", info.Name, info.Served, info.Direction, m.Opcode,
				contract.ErrorCode(e.GetCode()), m.RequestID)
		}
	}
	c.ping()
}

// bigBatchAnswer is what the mailbox fake answers in TestFramingAndLimits: large enough to be
// chunked, compressible enough that a compressing server would compress it.
var bigBatchAnswer = &qimv1.MailboxBatch{Entries: []*qimv1.MailboxEvent{{MailboxSeq: 1 << 48,
	Body: bytes.Repeat([]byte("compressible "), 200<<10/13)}}}

func TestFramingAndLimits(t *testing.T) {
	h := startGateway(t, harnessOpts{mailbox: &fakeMailbox{pull: func(*internalv1.AuthenticatedPullMailbox) *internalv1.PullMailboxOutcome {
		return &internalv1.PullMailboxOutcome{Batch: bigBatchAnswer}
	}}})
	c := h.login(newIdentity(t, "limits"))

	t.Run("a single frame may carry up to 4 MiB, far above the 64 KiB chunk size", func(t *testing.T) {
		cmid := bytes.Repeat([]byte{7}, 16)
		b, _ := proto.Marshal(&qimv1.SendRequest{ClientMessageId: cmid, Target: &qimv1.SendRequest_PeerUserId{PeerUserId: 9},
			MessageType: 1, Body: make([]byte, 100<<10)})
		id := c.nextID()
		c.writeRaw(frameOf(contract.OpSend, 0, wire.DataStream, id, b))
		if m := c.expect(contract.OpSendAck, nil); m.RequestID != id {
			t.Fatalf("SEND_ACK request id %d, want %d", m.RequestID, id)
		}
	})
	t.Run("a request other than SEND may use exactly 64 KiB", func(t *testing.T) {
		id := c.nextID()
		c.writeBytes(contract.OpPullMailbox, id, make([]byte, requestMaxBytes))
		c.expect(contract.OpMailboxBatch, nil)
	})
	t.Run("the 64 KiB request limit counts decompressed bytes", func(t *testing.T) {
		for _, size := range []int{requestMaxBytes, requestMaxBytes + 1} {
			b, err := wire.AppendMessage(nil, wire.Message{Opcode: contract.OpPullMailbox, StreamID: wire.DataStream,
				RequestID: c.nextID(), Flags: wire.FlagCompressed, Payload: make([]byte, size)})
			if err != nil || len(b) > 1<<10 {
				t.Fatalf("compressed request of %d bytes: %d bytes on the wire, %v", size, len(b), err)
			}
			c.writeRaw(b)
			if size == requestMaxBytes {
				c.expect(contract.OpMailboxBatch, nil)
			} else {
				c.expectError(contract.ErrCodePayloadTooLarge, c.reqID)
			}
		}
		c.ping()
	})
	t.Run("the server writes data on stream 1 in chunks of at most 64 KiB, uncompressed, and control on stream 0", func(t *testing.T) {
		nc, err := net.DialTimeout("tcp", h.addrs.TCP, caseWait)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		_ = nc.SetReadDeadline(time.Now().Add(caseWait))
		auth, _ := proto.Marshal(&qimv1.AuthRequest{Token: newIdentity(t, "raw").token})
		ping, _ := proto.Marshal(&qimv1.Ping{ClientTimeMs: 1})
		writeAllRaw(t, nc, frameOf(contract.OpAuth, 0, wire.DataStream, 1, auth))
		if hd, _ := readRawFrame(t, nc); hd.Opcode != contract.OpAuthOK || hd.StreamID != wire.DataStream || hd.RequestID != 1 {
			t.Fatalf("first frame %+v, want AUTH_OK on stream 1 for request 1", hd)
		}
		writeAllRaw(t, nc, append(frameOf(contract.OpPullMailbox, 0, wire.DataStream, 2, nil), frameOf(contract.OpPing, 0, 0, 3, ping)...))
		var batch []byte
		chunks, done, pong := 0, false, false
		for !done || !pong {
			hd, payload := readRawFrame(t, nc)
			switch {
			case hd.Flags&wire.FlagCompressed != 0:
				t.Fatalf("%v arrived COMPRESSED", hd.Opcode)
			case hd.Opcode == contract.OpPong && hd.StreamID == wire.ControlStream && hd.RequestID == 3:
				pong = true
			case hd.Opcode == contract.OpMailboxBatch && hd.StreamID == wire.DataStream && hd.RequestID == 2 && hd.Length <= wire.ChunkSize:
				chunks++
				batch = append(batch, payload...)
				done = hd.Flags&wire.FlagMore == 0
			default:
				t.Fatalf("unexpected frame %+v", hd)
			}
		}
		if want, _ := proto.Marshal(bigBatchAnswer); !bytes.Equal(batch, want) || chunks != (len(want)+wire.ChunkSize-1)/wire.ChunkSize {
			t.Fatalf("MAILBOX_BATCH of %d bytes in %d chunks, want %d bytes in full chunks", len(batch), chunks, len(want))
		}
	})
}

// frame encodes one frame; header-level breakage is applied to the result by the caller.
func encodeFrame(h wire.Header, payload []byte) []byte {
	h.Length = uint32(len(payload))
	return append(wire.AppendHeader(nil, h), payload...)
}

func frameOf(op contract.Opcode, flags wire.Flags, stream uint16, reqID uint32, payload []byte) []byte {
	return encodeFrame(wire.Header{Flags: flags, Opcode: op, StreamID: stream, RequestID: reqID}, payload)
}

// reseal recomputes the header CRC after a test changed a header field.
func resealCRC(b []byte) []byte {
	binary.BigEndian.PutUint32(b[16:20], crc32.Checksum(b[:16], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func writeAllRaw(t *testing.T, nc net.Conn, b []byte) {
	t.Helper()
	if _, err := nc.Write(b); err != nil {
		t.Fatal(err)
	}
}

// readFrame reads one raw frame, without the reassembly wire.Reader does.
func readRawFrame(t *testing.T, nc net.Conn) (wire.Header, []byte) {
	t.Helper()
	b := make([]byte, wire.HeaderSize)
	if _, err := io.ReadFull(nc, b); err != nil {
		t.Fatal(err)
	}
	hd, err := wire.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, hd.Length)
	if _, err := io.ReadFull(nc, payload); err != nil {
		t.Fatal(err)
	}
	return hd, payload
}
