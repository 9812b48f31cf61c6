import { test } from "node:test";
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { QimClient } from "../src/client.js";
import { MessageType } from "../src/gen/contract.js";
import { MailboxEventSchema, type MailboxEvent } from "../src/gen/qim/v1/mailbox_pb.js";
import { MemoryStore } from "../src/store.js";
import { FakeGateway } from "./fakegw.js";

function event(seq: number): MailboxEvent {
  const id = new Uint8Array(16);
  id[15] = seq;
  return create(MailboxEventSchema, { mailboxSeq: BigInt(seq), messageId: id, conversationId: new Uint8Array(16).fill(0x10),
    conversationSeq: BigInt(seq), senderUserId: 9n, messageType: MessageType.TEXT, body: new Uint8Array([seq]) });
}

// A message materialized just after the login is pushed while the offline ones are still being
// pulled: the client hands them out in mailbox order all the same (the push waits for the pull
// it schedules), each once. Applied at once, the push overtook them (seen in the TS integration
// test: "three", "one", "two").
test("a push during the first pull does not overtake the pulled messages", async () => {
  let gw!: FakeGateway;
  const client = new QimClient({ url: "ws://fake", token: "t", store: new MemoryStore(), webSocket: () => {
    gw = new FakeGateway(7n);
    gw.mailbox.push(event(1), event(2));
    let first = true;
    gw.onPull = () => {
      if (!first) return;
      first = false;
      gw.mailbox.push(event(3));
      gw.push([event(3)]); // written before the pull's answer
    };
    return gw;
  } });
  const seen: number[] = [];
  client.on("message", (m) => seen.push(Number(m.conversationSeq)));
  const synced = new Promise((r) => client.on("synced", r));
  await client.connect();
  await synced;
  await new Promise((r) => setTimeout(r, 20));
  try {
    assert.deepEqual(seen, [1, 2, 3]);
  } finally {
    client.close();
  }
});
