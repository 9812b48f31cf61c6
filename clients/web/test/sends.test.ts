import { test } from "node:test";
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import type { Connection } from "../src/connection.js";
import { ConnectionClosedError, QimError } from "../src/errors.js";
import { ErrorCode } from "../src/gen/contract.js";
import { SendAckSchema } from "../src/gen/qim/v1/send_pb.js";
import { Sends, type SendUpdate } from "../src/sends.js";
import { MemoryStore } from "../src/store.js";
import type { Ack } from "../src/types.js";

/** fakeConn answers SEND calls with what next() returns, recording each client_message_id. */
function fakeConn(next: (cmid: string) => Promise<unknown>) {
  const calls: string[] = [];
  const conn = {
    isClosed: false,
    async call(_op: number, _s: unknown, req: { clientMessageId: Uint8Array }) {
      const id = Buffer.from(req.clientMessageId).toString("hex");
      calls.push(id);
      return next(id);
    },
  };
  return { conn: conn as unknown as Connection & { isClosed: boolean }, calls };
}

function ackFor(cmid: string, seq: bigint) {
  return create(SendAckSchema, { clientMessageId: Buffer.from(cmid, "hex"), messageId: new Uint8Array(16).fill(7),
    conversationId: new Uint8Array(16).fill(1), conversationSeq: seq, committedAtMs: 5n });
}

const settle = () => new Promise((r) => setTimeout(r, 5));

test("pending is emitted before send returns, then committed exactly once though the mailbox copy races the ack", async () => {
  const updates: SendUpdate[] = [];
  let answer!: (a: unknown) => void;
  const { conn } = fakeConn(() => new Promise((r) => (answer = r)));
  const store = new MemoryStore();
  const s = new Sends(store, (u) => updates.push(u), () => conn);
  const h = s.start({ peer: "9007199254740993" }, new Uint8Array([1]), 1, "");
  assert.deepEqual(updates.map((u) => u.state), ["pending"]);
  await settle();
  assert.equal((await store.pending()).length, 1, "stored before its first attempt");
  const copy: Ack = { clientMessageId: h.clientMessageId, messageId: "07".repeat(16), conversationId: "01".repeat(16), conversationSeq: "3", committedAtMs: 5 };
  s.settleFromMailbox(copy); // the sender's own copy arrives first
  answer(ackFor(h.clientMessageId, 3n)); // then the ack
  assert.deepEqual(await h.committed, copy);
  await settle();
  assert.deepEqual(updates.map((u) => u.state), ["pending", "committed"]);
  assert.equal((await store.pending()).length, 0);
});

test("a lost connection keeps the send pending; the resend reuses its id", async () => {
  let fail = true;
  const { conn, calls } = fakeConn(async (id) => {
    if (fail) {
      conn.isClosed = true;
      throw new ConnectionClosedError("gone");
    }
    return ackFor(id, 1n);
  });
  const updates: SendUpdate[] = [];
  const s = new Sends(new MemoryStore(), (u) => updates.push(u), () => conn);
  const h = s.start({ group: "20".repeat(16) }, new Uint8Array([2]), 1, "");
  await settle();
  assert.deepEqual(updates.map((u) => u.state), ["pending"]);
  fail = false;
  conn.isClosed = false;
  s.resendAll();
  await h.committed;
  assert.equal(calls.length, 2);
  assert.equal(calls[0], calls[1], "the retry used another client_message_id");
  assert.deepEqual(updates.map((u) => u.state), ["pending", "committed"]);
});

test("a refusal retrying cannot change fails the send once; a retryable one is retried", async () => {
  let n = 0;
  const { conn } = fakeConn(async () => {
    n++;
    throw new QimError(n === 1 ? ErrorCode.UNAVAILABLE : ErrorCode.NOT_MEMBER, "x");
  });
  const updates: SendUpdate[] = [];
  const s = new Sends(new MemoryStore(), (u) => updates.push(u), () => conn);
  const h = s.start({ peer: "1" }, new Uint8Array(), 1, "");
  await assert.rejects(h.committed, (e: QimError) => e.code === ErrorCode.NOT_MEMBER);
  assert.equal(n, 2, "UNAVAILABLE was not retried");
  assert.deepEqual(updates.map((u) => u.state), ["pending", "failed"]);
});

test("sends stored by an earlier session come back pending and are sent with their ids", async () => {
  const store = new MemoryStore();
  const offline = new Sends(store, () => undefined, () => undefined);
  const first = offline.start({ peer: "2" }, new Uint8Array([9]), 1, "");
  await settle();
  const { conn, calls } = fakeConn(async (id) => ackFor(id, 4n));
  const updates: SendUpdate[] = [];
  const next = new Sends(store, (u) => updates.push(u), () => conn);
  await next.restore();
  next.resendAll();
  assert.equal((await next.waitFor(first.clientMessageId))!.conversationSeq, "4");
  assert.deepEqual(calls, [first.clientMessageId]);
  assert.deepEqual(updates.map((u) => u.state), ["pending", "committed"]);
});
