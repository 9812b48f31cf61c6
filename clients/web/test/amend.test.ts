import { test } from "node:test";
import assert from "node:assert/strict";
import { create, toBinary } from "@bufbuild/protobuf";
import { IDBFactory } from "fake-indexeddb";
import { AmendAction, amendCustomType, amendmentOf, amendMessage, applyAmendment, MessageFlag, type Amendment } from "../src/amend.js";
import { QimClient } from "../src/client.js";
import { MessageType } from "../src/gen/contract.js";
import { HistoryMessageSchema, MessageAmendmentSchema } from "../src/gen/qim/v1/history_pb.js";
import { MailboxEventSchema } from "../src/gen/qim/v1/mailbox_pb.js";
import type { SendUpdate } from "../src/sends.js";
import { IndexedDBStore, MemoryStore, type PendingSend } from "../src/store.js";
import { fromHistory, type ChatMessage } from "../src/types.js";
import { FakeGateway } from "./fakegw.js";

const me = "7";
const direct = "1" + "0".repeat(31); // kind DIRECT
const group = "2" + "a".repeat(31); // kind GROUP
const enc = (s: string) => new TextEncoder().encode(s);

function msg(conversationId: string, seq: string, sender: string, body = "hi"): ChatMessage {
  return { messageId: seq.padStart(32, "0"), conversationId, conversationSeq: seq, senderUserId: sender, messageType: MessageType.TEXT,
    customType: "", body: enc(body), sentAtMs: 1, clientMessageId: "", flags: 0 };
}

function amendment(seq: string, targetSeq: string, action: number, body?: string): Amendment {
  const a: Amendment = { conversationId: direct, messageId: seq.padStart(32, "f"), conversationSeq: seq, targetSeq,
    targetMessageId: targetSeq.padStart(32, "0"), action, actorUserId: me, flags: [0, 1, 4, 2][action]! };
  if (body !== undefined) a.body = enc(body);
  return a;
}

async function online(store = new MemoryStore()): Promise<{ client: QimClient; gw: FakeGateway }> {
  let gw!: FakeGateway;
  const client = new QimClient({ url: "ws://fake", token: "t", store, webSocket: () => (gw = new FakeGateway(BigInt(me))) });
  const synced = new Promise((r) => client.on("synced", r)); // the first drain, so a later "synced" is a push's
  await client.connect();
  await synced;
  return { client, gw };
}

test("recall, edit and delete send a SEND with amend and nothing else, through the pending sends", async () => {
  const { client, gw } = await online();
  const updates: SendUpdate[] = [];
  client.on("send", (u) => updates.push(u));
  try {
    await client.recall({ peer: "9" }, msg(direct, "5", me)).committed;
    await client.edit({ group }, msg(group, "6", me), "fixed").committed;
    await client.deleteMessage({ peer: "8" }, msg(direct, "18446744073709551615", "8")).committed;
    assert.equal(gw.sends.length, 3);
    const [recall, edit, del] = gw.sends;
    assert.deepEqual({ t: recall!.target, seq: recall!.amend?.targetSeq, act: recall!.amend?.action }, { t: { case: "peerUserId", value: 9n }, seq: 5n, act: AmendAction.RECALL });
    assert.deepEqual({ t: edit!.target.case, g: Buffer.from(edit!.target.value as Uint8Array).toString("hex"), seq: edit!.amend?.targetSeq, act: edit!.amend?.action },
      { t: "groupId", g: group, seq: 6n, act: AmendAction.EDIT });
    assert.deepEqual(edit!.body, enc("fixed"));
    assert.deepEqual({ t: del!.target, seq: del!.amend?.targetSeq, act: del!.amend?.action }, { t: { case: "peerUserId", value: 8n }, seq: (1n << 64n) - 1n, act: AmendAction.DELETE });
    for (const r of gw.sends) {
      assert.equal(r.messageType, 0);
      assert.equal(r.customType, "");
      assert.deepEqual(r.mentions, []);
      assert.equal(r.clientMessageId.length, 16);
    }
    assert.deepEqual(recall!.body, new Uint8Array(0));
    assert.deepEqual(del!.body, new Uint8Array(0));
    assert.deepEqual(updates.map((u) => [u.state, u.amend?.action]), [
      ["pending", 1], ["committed", 1], ["pending", 2], ["committed", 2], ["pending", 3], ["committed", 3]]);
  } finally {
    client.close();
  }
});

test("an amendment through the wrong target, of a CONTROL or an uncommitted message, is refused before it is stored", async () => {
  const { client, gw } = await online();
  try {
    assert.throws(() => client.recall({ group }, msg(direct, "5", me)), RangeError);
    assert.throws(() => client.recall({ peer: "9" }, msg(group, "5", me)), RangeError);
    assert.throws(() => client.deleteMessage({ peer: "9" }, msg(direct, "5", "8")), RangeError, "a direct message from 8 amended through 9");
    assert.throws(() => client.edit({ peer: "9" }, { ...msg(direct, "5", me), messageType: MessageType.CONTROL }, "x"), RangeError);
    assert.throws(() => client.recall({ peer: "9" }, msg(direct, "0", me)), RangeError);
    assert.throws(() => client.recall({ peer: "9" }, msg("3" + "0".repeat(31), "5", me)), RangeError, "a room message");
    assert.equal((await client.store.pending()).length, 0);
    assert.equal(gw.sends.length, 0);
  } finally {
    client.close();
  }
});

test("a pending amendment survives a reload and is resent as an amendment with its id", async () => {
  const store = new MemoryStore();
  // A record stored before amendments existed: no amend field, resent as a plain message.
  const old: PendingSend = { clientMessageId: "ab".repeat(16), target: { peer: "9" }, messageType: 1, customType: "", body: enc("old"), createdAtMs: 1 };
  await store.putPending(old);
  const offline = new QimClient({ url: "ws://fake", token: "t", store }); // never connected
  const h = offline.edit({ peer: "9" }, msg(direct, "42", me), "v2");
  await new Promise((r) => setTimeout(r, 5));
  offline.close();
  const stored = (await store.pending()).find((p) => p.clientMessageId === h.clientMessageId);
  assert.deepEqual(stored?.amend, { targetSeq: "42", action: AmendAction.EDIT });

  const { client, gw } = await online(store);
  try {
    await client.settled(h.clientMessageId);
    await client.settled(old.clientMessageId);
    const byId = new Map(gw.sends.map((r) => [Buffer.from(r.clientMessageId).toString("hex"), r]));
    const again = byId.get(h.clientMessageId);
    assert.deepEqual({ seq: again?.amend?.targetSeq, act: again?.amend?.action, body: again?.body, type: again?.messageType },
      { seq: 42n, act: AmendAction.EDIT, body: enc("v2"), type: 0 });
    assert.equal(byId.get(old.clientMessageId)?.amend, undefined);
    assert.equal(byId.get(old.clientMessageId)?.messageType, 1);
    assert.equal((await store.pending()).length, 0);
  } finally {
    client.close();
  }
});

test("IndexedDBStore keeps a pending amendment's amend field across a reopen", async () => {
  const factory = new IDBFactory();
  const a = await IndexedDBStore.open("qim-7", factory);
  await a.putPending({ clientMessageId: "cd".repeat(16), target: { group }, messageType: 0, customType: "", body: new Uint8Array(), createdAtMs: 1,
    amend: { targetSeq: "9007199254740993", action: AmendAction.DELETE } });
  a.close();
  const b = await IndexedDBStore.open("qim-7", factory);
  assert.deepEqual((await b.pending())[0]!.amend, { targetSeq: "9007199254740993", action: AmendAction.DELETE });
  b.close();
});

test("an amendment CONTROL message is emitted as message, then amended; other CONTROL messages are not", async () => {
  const { client, gw } = await online();
  const seen: string[] = [];
  const got: Amendment[] = [];
  client.on("message", (m) => seen.push(`message ${m.conversationSeq}`));
  client.on("amended", (a) => {
    seen.push(`amended ${a.conversationSeq}`);
    got.push(a);
  });
  const ev = (seq: bigint, customType: string, body: Uint8Array | undefined) => create(MailboxEventSchema, {
    mailboxSeq: seq, eventType: 1, messageId: new Uint8Array(16).fill(Number(seq)), conversationId: Buffer.from(group, "hex"), conversationSeq: seq,
    senderUserId: 8n, messageType: MessageType.CONTROL, customType, body, sentAtMs: 3n });
  const edit = toBinary(MessageAmendmentSchema, create(MessageAmendmentSchema, {
    targetSeq: 4n, targetMessageId: new Uint8Array(16).fill(4), action: AmendAction.EDIT, actorUserId: 8n, body: enc("new") }));
  const recall = toBinary(MessageAmendmentSchema, create(MessageAmendmentSchema, {
    targetSeq: 5n, targetMessageId: new Uint8Array(16).fill(5), action: AmendAction.RECALL, actorUserId: 18446744073709551615n }));
  try {
    const done = new Promise<void>((r) => client.on("synced", () => r()));
    gw.push([ev(20n, amendCustomType, edit), ev(21n, "qim.membership.v1", new Uint8Array([1])), ev(22n, amendCustomType, undefined),
      ev(23n, amendCustomType, recall), ev(24n, amendCustomType, new Uint8Array([0xff]))]);
    await done;
    assert.deepEqual(seen, ["message 20", "amended 20", "message 21", "message 22", "message 23", "amended 23", "message 24"]);
    assert.deepEqual(got[0], { conversationId: group, messageId: "14".repeat(16), conversationSeq: "20", targetSeq: "4", targetMessageId: "04".repeat(16),
      action: AmendAction.EDIT, actorUserId: "8", flags: MessageFlag.EDITED, body: enc("new") });
    assert.deepEqual(got[1], { conversationId: group, messageId: "17".repeat(16), conversationSeq: "23", targetSeq: "5", targetMessageId: "05".repeat(16),
      action: AmendAction.RECALL, actorUserId: "18446744073709551615", flags: MessageFlag.RECALLED });
  } finally {
    client.close();
  }
});

test("amendmentOf refuses an amendment naming no earlier message", () => {
  const body = toBinary(MessageAmendmentSchema, create(MessageAmendmentSchema, { targetSeq: 9n, targetMessageId: new Uint8Array(16), action: 1, actorUserId: 1n }));
  const control = { ...msg(direct, "9", "1"), messageType: MessageType.CONTROL, customType: amendCustomType, body };
  assert.equal(amendmentOf(control), undefined, "target seq not below the amendment's own");
  assert.equal(amendmentOf({ ...control, conversationSeq: "10" })?.targetSeq, "9");
});

test("the merge keeps the newest edit whatever the order, and a recall or delete drops the body for good", () => {
  const base = msg(direct, "3", me, "v0");
  const e1 = amendment("10", "3", AmendAction.EDIT, "v1");
  const e2 = amendment("11", "3", AmendAction.EDIT, "v2");
  const inOrder = amendMessage(amendMessage(base, e1), e2);
  const reversed = amendMessage(amendMessage(base, e2), e1);
  for (const m of [inOrder, reversed]) {
    assert.deepEqual(m.body, enc("v2"));
    assert.equal(m.flags, MessageFlag.EDITED);
    assert.equal(m.editSeq, "11");
  }
  assert.deepEqual(amendMessage(inOrder, e2), inOrder, "applying twice changed it");
  assert.deepEqual(base.body, enc("v0"), "the input was modified");

  const recalled = amendMessage(inOrder, amendment("12", "3", AmendAction.RECALL));
  assert.equal(recalled.body, undefined);
  assert.equal(recalled.flags, MessageFlag.RECALLED | MessageFlag.EDITED);
  const later = amendMessage(recalled, amendment("13", "3", AmendAction.EDIT, "v3"));
  assert.equal(later.body, undefined, "an edit brought a recalled body back");
  const deletedFirst = amendMessage(amendMessage(base, amendment("12", "3", AmendAction.DELETE)), e1);
  assert.equal(deletedFirst.body, undefined);
  assert.equal(deletedFirst.flags, MessageFlag.DELETED | MessageFlag.EDITED);

  const emptyEdit = amendMessage(base, amendment("10", "3", AmendAction.EDIT, ""));
  assert.deepEqual(emptyEdit.body, new Uint8Array(0), "an empty edit is a body, not an absent one");

  const list = [msg(direct, "2", "8"), base, msg(group, "3", me)];
  const out = applyAmendment(list, e1);
  assert.equal(out[0], list[0]);
  assert.equal(out[2], list[2], "the same seq of another conversation was amended");
  assert.deepEqual(out[1]!.body, enc("v1"));
});

test("history messages carry their flags", () => {
  const h = fromHistory(create(HistoryMessageSchema, { messageId: new Uint8Array(16).fill(1), conversationId: Buffer.from(direct, "hex"),
    conversationSeq: 3n, senderUserId: 7n, messageType: 1, flags: MessageFlag.RECALLED | MessageFlag.EDITED }));
  assert.equal(h.flags, 5);
  assert.equal(h.body, undefined);
});
