package webit

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/contract/devtoken"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

// vectors is clients/web/test/vectors.json: what the Go encoders produce, for the TS SDK's unit
// tests to decode and re-encode byte for byte.
type vectors struct {
	CRC      []crcVector     `json:"crc"`
	Frames   []frameVector   `json:"frames"`
	Stream   streamVector    `json:"stream"`
	IDs      idVectors       `json:"ids"`
	Messages []messageVector `json:"messages"`
}

type crcVector struct {
	InputHex string `json:"input_hex"`
	CRC      uint32 `json:"crc"`
}

// frameVector is one message written as one frame.
type frameVector struct {
	Name       string `json:"name"`
	Opcode     uint16 `json:"opcode"`
	Stream     uint16 `json:"stream"`
	RequestID  uint32 `json:"request_id"`
	PayloadHex string `json:"payload_hex"`
	FrameHex   string `json:"frame_hex"`
}

// streamVector is bytes a server writes: a chunked data message with a control message between
// its chunks, and the messages a reader must get from them, in order.
type streamVector struct {
	Bytes    []byte          `json:"bytes_base64"` // base64: the stream is larger than one chunk
	Messages []streamMessage `json:"messages"`
}

type streamMessage struct {
	Opcode     uint16 `json:"opcode"`
	RequestID  uint32 `json:"request_id"`
	PayloadLen int    `json:"payload_len"`
	FirstByte  byte   `json:"first_byte"`
	LastByte   byte   `json:"last_byte"`
}

// idVectors: u64 as canonical decimal with its 8 big-endian bytes, u128 as canonical hex with its
// 16 bytes (the ids a JS number cannot hold exactly).
type idVectors struct {
	U64  []idVector `json:"u64"`
	U128 []idVector `json:"u128"`
}

type idVector struct {
	Text     string `json:"text"`
	BytesHex string `json:"bytes_hex"`
}

// messageVector is one qim.v1 message: its canonical protobuf JSON and its deterministic bytes.
type messageVector struct {
	Type     string          `json:"type"`
	JSON     json.RawMessage `json:"json"`
	BytesHex string          `json:"bytes_hex"`
}

func buildVectors() ([]byte, error) {
	v := vectors{CRC: []crcVector{{hex.EncodeToString([]byte("123456789")), 0xE3069283}}}
	tok, err := devtoken.Issue([]byte("example-secret-0123456789"), devtoken.Claims{User: 42, Device: "phone-1",
		ExpiresAtMs: time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()})
	if err != nil {
		return nil, err
	}
	tenant0 := make([]byte, 16)
	for _, f := range []struct {
		name   string
		op     contract.Opcode
		stream uint16
		rid    uint32
		m      proto.Message
	}{
		{"auth", contract.OpAuth, wire.DataStream, 1, &qimv1.AuthRequest{Token: tok, DeviceId: "phone-1", ClientVersion: "example/1", TenantId: tenant0}},
		{"ping", contract.OpPing, wire.ControlStream, 7, &qimv1.Ping{ClientTimeMs: 1_700_000_000_000}},
		{"send", contract.OpSend, wire.DataStream, math.MaxUint32, sendRequest()},
	} {
		payload, err := proto.MarshalOptions{Deterministic: true}.Marshal(f.m)
		if err != nil {
			return nil, err
		}
		frame, err := wire.AppendMessage(nil, wire.Message{Opcode: f.op, StreamID: f.stream, RequestID: f.rid, Payload: payload})
		if err != nil {
			return nil, err
		}
		v.Frames = append(v.Frames, frameVector{f.name, uint16(f.op), f.stream, f.rid, hex.EncodeToString(payload), hex.EncodeToString(frame)})
	}
	if v.Stream, err = chunkedStream(); err != nil {
		return nil, err
	}
	v.IDs = idVectors{
		U64:  []idVector{u64(1), u64(1<<53 + 1), u64(math.MaxUint64)},
		U128: []idVector{u128(contract.U128{Lo: 1}), u128(contract.U128{Hi: 1 << 53, Lo: 1<<53 + 1}), u128(contract.U128{Hi: math.MaxUint64, Lo: math.MaxUint64})},
	}
	for _, m := range sampleMessages() {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if err != nil {
			return nil, err
		}
		j, err := protojson.Marshal(m)
		if err != nil {
			return nil, err
		}
		v.Messages = append(v.Messages, messageVector{string(m.ProtoReflect().Descriptor().FullName()), json.RawMessage(compact(j)), hex.EncodeToString(b)})
	}
	out, err := json.MarshalIndent(v, "", "  ")
	return append(out, '\n'), err
}

// compact re-marshals protojson's output, whose whitespace is deliberately unstable.
func compact(j []byte) []byte {
	var x any
	if err := json.Unmarshal(j, &x); err != nil {
		panic(fmt.Sprintf("protojson produced invalid JSON: %v", err))
	}
	out, _ := json.Marshal(x)
	return out
}

func u64(n uint64) idVector {
	b := make([]byte, 8)
	for i := range 8 {
		b[i] = byte(n >> (56 - 8*i))
	}
	return idVector{fmt.Sprint(n), hex.EncodeToString(b)}
}

func u128(u contract.U128) idVector {
	b := u.Bytes()
	return idVector{u.String(), hex.EncodeToString(b[:])}
}

// chunkedStream: a MAILBOX_BATCH just above one chunk, cut into two chunks with a PONG between
// them, as the gateway writes them (docs/protocol.md §2.3).
func chunkedStream() (streamVector, error) {
	payload := make([]byte, wire.ChunkSize+1000)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	batch, err := wire.AppendMessage(nil, wire.Message{Opcode: contract.OpMailboxBatch, StreamID: wire.DataStream, RequestID: 2, Payload: payload})
	if err != nil {
		return streamVector{}, err
	}
	pongPayload, _ := proto.Marshal(&qimv1.Pong{ClientTimeMs: 1, ServerTimeMs: 2, HeartbeatIntervalMs: 60_000, HeartbeatTimeoutMs: 150_000})
	pong, err := wire.AppendMessage(nil, wire.Message{Opcode: contract.OpPong, StreamID: wire.ControlStream, RequestID: 3, Payload: pongPayload})
	if err != nil {
		return streamVector{}, err
	}
	first := wire.HeaderSize + wire.ChunkSize
	all := append(append(append([]byte(nil), batch[:first]...), pong...), batch[first:]...)
	return streamVector{all, []streamMessage{
		{uint16(contract.OpPong), 3, len(pongPayload), pongPayload[0], pongPayload[len(pongPayload)-1]},
		{uint16(contract.OpMailboxBatch), 2, len(payload), payload[0], payload[len(payload)-1]},
	}}, nil
}
