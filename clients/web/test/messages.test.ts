import { test } from "node:test";
import assert from "node:assert/strict";
import { createRegistry, fromBinary, fromJson, toBinary, toJson, type DescMessage, type JsonValue } from "@bufbuild/protobuf";
import { file_qim_v1_common } from "../src/gen/qim/v1/common_pb.js";
import { file_qim_v1_connection } from "../src/gen/qim/v1/connection_pb.js";
import { file_qim_v1_group } from "../src/gen/qim/v1/group_pb.js";
import { file_qim_v1_history } from "../src/gen/qim/v1/history_pb.js";
import { file_qim_v1_mailbox } from "../src/gen/qim/v1/mailbox_pb.js";
import { file_qim_v1_room } from "../src/gen/qim/v1/room_pb.js";
import { file_qim_v1_send } from "../src/gen/qim/v1/send_pb.js";
import { file_qim_v1_session } from "../src/gen/qim/v1/session_pb.js";
import { fromMailbox, fromSession } from "../src/types.js";
import { MailboxBatchSchema } from "../src/gen/qim/v1/mailbox_pb.js";
import { SessionListBatchSchema } from "../src/gen/qim/v1/session_pb.js";
import { hex, unhex, vectors } from "./vectors.js";

const registry = createRegistry(file_qim_v1_common, file_qim_v1_connection, file_qim_v1_group, file_qim_v1_history,
  file_qim_v1_mailbox, file_qim_v1_room, file_qim_v1_send, file_qim_v1_session);

function schema(name: string): DescMessage {
  const d = registry.getMessage(name);
  assert.ok(d, `no generated schema for ${name}`);
  return d;
}

// Protobuf does not fix field order on the wire: Go writes a set oneof member after the other
// fields, protobuf-es in field-number order. So the re-encoding must have the same length and
// decode to the same message, and equal bytes where no oneof is set.
test("every Go-encoded message decodes to the same JSON and re-encodes to an equal message", () => {
  for (const v of vectors.messages) {
    const s = schema(v.type);
    const m = fromBinary(s, unhex(v.bytes_hex));
    assert.deepEqual(toJson(s, m, { registry }), v.json, v.type);
    const again = toBinary(s, fromJson(s, v.json as JsonValue, { registry }));
    assert.equal(again.length, v.bytes_hex.length / 2, v.type);
    assert.deepEqual(toJson(s, fromBinary(s, again), { registry }), v.json, v.type);
    if (!/"(peerUserId|groupId|roomId)"/.test(JSON.stringify(v.json))) assert.equal(hex(again), v.bytes_hex, v.type);
  }
});

test("the SDK's values keep extreme ids exact and tell an absent body from an empty one", () => {
  const v = vectors.messages.find((m) => m.type === "qim.v1.MailboxBatch")!;
  const [full, empty, absent] = fromBinary(MailboxBatchSchema, unhex(v.bytes_hex)).entries.map(fromMailbox);
  assert.equal(full!.senderUserId, "18446744073709551615");
  assert.equal(full!.messageId, "ff".repeat(16));
  assert.deepEqual(full!.body, new TextEncoder().encode("hi"));
  assert.deepEqual(empty!.body, new Uint8Array());
  assert.equal(absent!.body, undefined);
  const s = vectors.messages.find((m) => m.type === "qim.v1.SessionListBatch")!;
  const [direct, group] = fromBinary(SessionListBatchSchema, unhex(s.bytes_hex)).sessions.map(fromSession);
  assert.equal(direct!.peerUserId, "18446744073709551615");
  assert.equal(direct!.latestSeq, "9007199254740993");
  assert.equal(direct!.groupId, undefined);
  assert.equal(group!.groupId, group!.conversationId);
  assert.equal(group!.unreadExact, true);
});
