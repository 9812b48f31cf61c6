package msgstore

import "google.golang.org/protobuf/encoding/protowire"

// seqFieldNumber is MessageRecord.conversation_seq (records.proto field 4).
const seqFieldNumber protowire.Number = 4

// AppendSeq appends conversation_seq (field 4, varint) to a canonical MessageRecord encoded
// without it, exactly as the reserve scripts do in Lua: tag byte 0x20, then the varint of seq.
// Protobuf keeps the last occurrence of a scalar field, so the result decodes with
// ConversationSeq == seq even if the input carried field 4. It is the Go half of the two-step
// path and of the test that proves Go and Lua produce identical bytes.
func AppendSeq(record []byte, seq uint64) []byte {
	out := make([]byte, 0, len(record)+1+protowire.SizeVarint(seq))
	out = append(out, record...)
	out = protowire.AppendTag(out, seqFieldNumber, protowire.VarintType)
	return protowire.AppendVarint(out, seq)
}
