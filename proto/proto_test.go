package proto_test

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// Every row of the opcode table names a message of package qim.v1; the codec resolves frames
// through that name, so a missing or misspelt message would only fail at run time.
func TestOpcodeMessagesExist(t *testing.T) {
	ops := contract.Opcodes()
	if len(ops) == 0 {
		t.Fatal("contract.Opcodes() is empty")
	}
	for _, info := range ops {
		name := protoreflect.FullName("qim.v1." + info.Message)
		desc, err := protoregistry.GlobalFiles.FindDescriptorByName(name)
		if err != nil {
			t.Errorf("%s (0x%04X): message %s not registered: %v", info.Name, uint16(info.Op), name, err)
			continue
		}
		if _, ok := desc.(protoreflect.MessageDescriptor); !ok {
			t.Errorf("%s: %s is a %T, not a message", info.Name, name, desc)
			continue
		}
		mt, err := protoregistry.GlobalTypes.FindMessageByName(name)
		if err != nil {
			t.Errorf("%s: no Go type for %s: %v", info.Name, name, err)
			continue
		}
		if got := mt.Descriptor().ParentFile().Package(); got != "qim.v1" {
			t.Errorf("%s: %s is in package %s, want qim.v1", info.Name, name, got)
		}
	}
}

// A newer SDK may send fields this server does not know; they must survive a decode/encode
// round trip because the server never re-serialises a client message with fields dropped.
func TestUnknownFieldsSurviveUplinkRoundTrip(t *testing.T) {
	in := &qimv1.SendRequest{
		ClientMessageId: bytes.Repeat([]byte{0xAB}, 16),
		Target:          &qimv1.SendRequest_GroupId{GroupId: bytes.Repeat([]byte{0x01}, 16)},
		MessageType:     1,
		Body:            []byte("hello"),
		Mentions:        []uint64{7, 9},
	}
	known, err := proto.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	// Unknown field 1000 (length-delimited) and 1001 (varint), as a future SDK might add.
	var unknown []byte
	unknown = protowire.AppendTag(unknown, 1000, protowire.BytesType)
	unknown = protowire.AppendBytes(unknown, []byte("from the future"))
	unknown = protowire.AppendTag(unknown, 1001, protowire.VarintType)
	unknown = protowire.AppendVarint(unknown, 1<<40)
	wire := append(append([]byte(nil), known...), unknown...)

	var decoded qimv1.SendRequest
	if err := proto.Unmarshal(wire, &decoded); err != nil {
		t.Fatal(err)
	}
	if got := decoded.ProtoReflect().GetUnknown(); !bytes.Equal(got, unknown) {
		t.Fatalf("unknown fields after decode = %x, want %x", got, unknown)
	}
	out, err := proto.Marshal(&decoded)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, unknown) {
		t.Fatalf("re-encoded message lost the unknown fields:\n got %x\nwant it to contain %x", out, unknown)
	}
	var again qimv1.SendRequest
	if err := proto.Unmarshal(out, &again); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&again, &decoded) || !bytes.Equal(again.GetGroupId(), in.GetGroupId()) {
		t.Fatalf("second decode differs: %v vs %v", &again, &decoded)
	}
}

// message_type is a raw uint32, not an enum: a value no binary knows yet (77) must come out of
// the internal record and the client view exactly as it went in.
func TestRawMessageTypeRoundTrips(t *testing.T) {
	const unknownType = 77
	for _, tc := range []struct {
		name string
		msg  proto.Message
		get  func(proto.Message) uint32
	}{
		{
			name: "internal.v1.MessageRecord",
			msg:  &internalv1.MessageRecord{MessageType: unknownType, Body: []byte{1, 2, 3}},
			get:  func(m proto.Message) uint32 { return m.(*internalv1.MessageRecord).GetMessageType() },
		},
		{
			name: "qim.v1.MailboxEvent",
			msg:  &qimv1.MailboxEvent{MessageType: unknownType, Body: []byte{1, 2, 3}},
			get:  func(m proto.Message) uint32 { return m.(*qimv1.MailboxEvent).GetMessageType() },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := proto.Marshal(tc.msg)
			if err != nil {
				t.Fatal(err)
			}
			out := tc.msg.ProtoReflect().New().Interface()
			if err := proto.Unmarshal(b, out); err != nil {
				t.Fatal(err)
			}
			if got := tc.get(out); got != unknownType {
				t.Fatalf("message_type = %d after round trip, want %d", got, unknownType)
			}
			if !proto.Equal(out, tc.msg) {
				t.Fatalf("round trip changed the message: %v -> %v", tc.msg, out)
			}
		})
	}
}

// Enumerated values are raw uint32 everywhere on purpose (unknown values must pass through);
// a protobuf enum slipping into either package would silently break that rule.
func TestNoProtoEnums(t *testing.T) {
	for _, fd := range []protoreflect.FileDescriptor{
		qimv1.File_qim_v1_common_proto,
		qimv1.File_qim_v1_connection_proto,
		qimv1.File_qim_v1_send_proto,
		qimv1.File_qim_v1_mailbox_proto,
		qimv1.File_qim_v1_session_proto,
		qimv1.File_qim_v1_history_proto,
		qimv1.File_qim_v1_group_proto,
		qimv1.File_qim_v1_room_proto,
		internalv1.File_qiminternal_v1_records_proto,
	} {
		if n := fd.Enums().Len(); n != 0 {
			t.Errorf("%s declares %d top-level enums", fd.Path(), n)
		}
		msgs := fd.Messages()
		for i := 0; i < msgs.Len(); i++ {
			md := msgs.Get(i)
			if md.Enums().Len() != 0 {
				t.Errorf("%s declares a nested enum", md.FullName())
			}
			fields := md.Fields()
			for j := 0; j < fields.Len(); j++ {
				if f := fields.Get(j); f.Kind() == protoreflect.EnumKind {
					t.Errorf("%s is an enum field", f.FullName())
				}
			}
		}
	}
}
