// Integration tests on the real services (gates/webit starts them and sets WEBIT_*): the SDK over
// node's WebSocket against a gateway, two and three users, every conversation kind.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { QimClient, MemoryStore, ErrorCode, KickReason, PushPlatform, QimError, type Ack, type ClientEvents, type ChatMessage, type SendUpdate } from "../src/index.js";

function env(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run through go test ./gates/webit`);
  return v;
}

const url = env("WEBIT_URL");
const users = { a: env("WEBIT_A_USER"), b: env("WEBIT_B_USER"), c: env("WEBIT_C_USER") };
const clients: QimClient[] = [];
after(() => clients.forEach((c) => c.close()));

function client(who: "A" | "B" | "C" | "A2" | "A_LAPTOP", store = new MemoryStore()): QimClient {
  const c = new QimClient({ url, token: env(`WEBIT_${who}_TOKEN`), store, clientVersion: "webit/1" });
  clients.push(c);
  return c;
}

/** next resolves with the first event of type that pred accepts, or rejects after ms. */
function next<K extends keyof ClientEvents>(c: QimClient, type: K, pred: (ev: ClientEvents[K]) => boolean, ms = 60_000): Promise<ClientEvents[K]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error(`no ${String(type)} event within ${ms} ms`));
    }, ms);
    const off = c.on(type, (ev) => {
      if (!pred(ev)) return;
      clearTimeout(timer);
      off();
      resolve(ev);
    });
  });
}

/** eventually polls fn until it returns a value, for state the server derives after the ack (§7.4). */
async function eventually<T>(fn: () => Promise<T | undefined>, what: string, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`${what} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const text = (m: ChatMessage) => new TextDecoder().decode(m.body);
let conv = "";
const bStore = new MemoryStore();
let a: QimClient, b: QimClient;

test("1:1: committed exactly once, delivered once, unread rises and clears", async () => {
  a = client("A");
  b = client("B", bStore);
  assert.equal((await a.connect()).userId, users.a);
  await b.connect();
  const updates: SendUpdate[] = [];
  a.on("send", (u) => updates.push(u));
  const got = next(b, "message", (m) => text(m) === "hello from the web SDK");
  const h = a.send({ peer: users.b }, "hello from the web SDK");
  const ack = await h.committed;
  const m = await got;
  assert.equal(m.messageId, ack.messageId);
  assert.equal(m.senderUserId, users.a);
  conv = ack.conversationId;
  assert.deepEqual(updates.filter((u) => u.clientMessageId === h.clientMessageId).map((u) => u.state), ["pending", "committed"]);
  const row = await eventually(async () => (await b.api.sessions()).find((s) => s.conversationId === conv && s.unread === 1), "B's row with unread 1");
  assert.equal(row.peerUserId, users.a);
  assert.equal((await b.api.markRead(conv, ack.conversationSeq)).unread, 0);
  assert.equal((await b.api.sessions()).find((s) => s.conversationId === conv)!.unread, 0);
});

test("an offline user catches up from its stored cursor, each message once", async () => {
  // The cursor covering the first message must be stored before B goes: a client closed in the
  // middle of a pull gets that batch again from its older cursor (at-least-once, deduplicated by
  // message_id within a client's life), which is not what this test is about.
  await eventually(async () => ((await bStore.cursor()) !== "0" ? true : undefined), "B's cursor stored");
  b.close();
  const seen: string[] = [];
  const sent: Ack[] = [];
  for (const body of ["one", "two", "three"]) sent.push(await a.send({ peer: users.b }, body).committed);
  const b2 = client("B", bStore);
  b2.on("message", (m) => seen.push(m.messageId));
  await b2.connect();
  await eventually(async () => (sent.every((s) => seen.includes(s.messageId)) ? true : undefined), "the three messages");
  assert.deepEqual(seen, sent.map((s) => s.messageId), "a message was missed, repeated or one already applied came back");
  b = b2;
});

test("history pages older from the newest", async () => {
  const page = await b.api.history(conv, { limit: 2 });
  assert.deepEqual(page.records.map((r) => new TextDecoder().decode(r.body)), ["two", "three"]);
  assert.ok(page.hasMore);
  const older = await b.api.history(conv, { anchor: page.nextAnchor, limit: 10 });
  assert.deepEqual(older.records.map((r) => new TextDecoder().decode(r.body)), ["hello from the web SDK", "one"]);
  assert.equal(older.hasMore, false);
});

test("groups: create, message, members, read receipts, typing, leave; a former member's send fails once", async () => {
  const c = client("C");
  await c.connect();
  const g = await a.api.createGroup("web group", [users.b, users.c]);
  const gotB = next(b, "message", (m) => m.conversationId === g.conversationId && text(m) === "to the group");
  const gotC = next(c, "message", (m) => m.conversationId === g.conversationId && text(m) === "to the group");
  await a.send({ group: g.groupId }, "to the group").committed;
  await Promise.all([gotB, gotC]);
  assert.deepEqual((await b.api.members(g.groupId)).map((m) => m.userId).sort(), [users.a, users.b, users.c].sort());
  const sent = await a.send({ group: g.groupId }, "who read this?").committed;
  await eventually(async () => (await b.api.sessions()).find((s) => s.conversationId === g.conversationId && s.latestSeq === sent.conversationSeq), "B's row with the question");
  await b.api.markRead(g.conversationId, sent.conversationSeq);
  const r = await a.api.readReceipts(g.conversationId, sent.conversationSeq);
  assert.deepEqual([r.readCount, r.audience], [1, 2]);
  assert.deepEqual(r.reads.find((m) => m.userId === users.b)?.readSeq, sent.conversationSeq);
  await c.api.setReadReceipts(false);
  const hidden = await a.api.readReceipts(g.conversationId, sent.conversationSeq);
  assert.deepEqual([hidden.readCount, hidden.audience, hidden.reads.find((m) => m.userId === users.c)?.withheld], [1, 1, true]);
  await assert.rejects(c.api.readReceipts(g.conversationId, sent.conversationSeq), (e: unknown) => e instanceof QimError && e.code === ErrorCode.FORBIDDEN);
  await c.api.setReadReceipts(true);
  const typingC = next(c, "typing", (t) => t.conversationId === g.conversationId && t.userId === users.a && t.typing, 5_000);
  a.typingInGroup(g.groupId, true);
  await typingC;
  await c.api.leaveGroup(g.groupId);
  const states: string[] = [];
  c.on("send", (u) => states.push(u.state));
  await assert.rejects(c.send({ group: g.groupId }, "after leaving").committed, (e: QimError) => e.code === ErrorCode.NOT_MEMBER);
  assert.deepEqual(states, ["pending", "failed"]);
});

test("rooms: live events, then a rejoin replays from a room_seq", async () => {
  const room = Array.from(crypto.getRandomValues(new Uint8Array(16)), (x) => x.toString(16).padStart(2, "0")).join("");
  await a.joinRoom(room);
  await b.joinRoom(room);
  const live = next(b, "roomEvents", (e) => e.roomId === room);
  const { roomSeq } = await a.sendRoom(room, "in the room");
  const ev = await live;
  assert.equal(ev.events[0]!.roomSeq, roomSeq);
  await b.leaveRoom(room);
  const replayed = next(b, "roomEvents", (e) => e.roomId === room);
  const j = await b.joinRoom(room, roomSeq);
  assert.equal(j.replayTruncated, false);
  assert.equal(new TextDecoder().decode((await replayed).events[0]!.body), "in the room");
});

test("a read on one device reaches the user's other device as a conversation event", async () => {
  const laptop = client("A_LAPTOP");
  await laptop.connect();
  const ack = await b.send({ peer: users.a }, "read me on the laptop").committed;
  await eventually(async () => (await a.api.sessions()).find((s) => s.conversationId === ack.conversationId && s.latestSeq === ack.conversationSeq && s.unread > 0), "A's row with the new message unread");
  const cleared = next(a, "conversation", (c) => c.conversationId === ack.conversationId && c.unread === 0, 5_000);
  await laptop.api.markRead(ack.conversationId, ack.conversationSeq);
  assert.equal((await cleared).readSeq, ack.conversationSeq);
  laptop.close();
});

test("a read in a direct conversation reaches the peer as a receipt and in its session list", async () => {
  const ack = await b.send({ peer: users.a }, "read me and tell B").committed;
  await eventually(async () => (await a.api.sessions()).find((s) => s.conversationId === ack.conversationId && s.latestSeq === ack.conversationSeq), "A's row with B's message");
  const receipt = next(b, "receipt", (r) => r.conversationId === ack.conversationId && r.readSeq === ack.conversationSeq, 5_000);
  await a.api.markRead(ack.conversationId, ack.conversationSeq);
  assert.equal((await receipt).readerUserId, users.a);
  const row = (await b.api.sessions()).find((s) => s.conversationId === ack.conversationId);
  assert.equal(row?.peerReadSeq, ack.conversationSeq);
});

test("a reaction reaches the peer as an event and history serves the counts", async () => {
  const ack = await b.send({ peer: users.a }, "react to this").committed;
  await eventually(async () => (await a.api.history(ack.conversationId, { limit: 5 })).records.find((r) => r.conversationSeq === ack.conversationSeq), "B's message in A's history");
  const got = next(b, "reaction", (r) => r.conversationId === ack.conversationId && r.conversationSeq === ack.conversationSeq, 5_000);
  const r = await a.api.react({ peer: users.b }, ack.conversationSeq, "👍");
  assert.deepEqual([r.changed, r.reactions], [true, [{ key: "👍", count: 1, mine: true }]]);
  const ev = await got;
  assert.deepEqual([ev.userId, ev.key, ev.removed], [users.a, "👍", false]);
  const page = await b.api.history(ack.conversationId, { limit: 5 });
  assert.deepEqual(page.records.find((m) => m.conversationSeq === ack.conversationSeq)?.reactions, [{ key: "👍", count: 1, mine: false }]);
  assert.equal((await a.api.react({ peer: users.b }, ack.conversationSeq, "👍")).changed, false);
});

test("typing reaches the peer and is never stored", async () => {
  const got = next(b, "typing", (t) => t.userId === users.a && t.typing, 5_000);
  a.typing(users.b, true);
  const t = await got;
  assert.equal(t.expiresInMs, 6000);
});

test("a push token is registered, removed, and an unknown platform refused", async () => {
  assert.deepEqual(await b.api.registerPushToken(PushPlatform.FCM, "fcm-token-of-b"), { registered: true });
  assert.deepEqual(await b.api.registerPushToken(PushPlatform.FCM, ""), { registered: false });
  await assert.rejects(b.api.registerPushToken(9, "t"), (e: unknown) => e instanceof QimError && e.code === ErrorCode.INVALID_ARGUMENT);
});

test("a second login of the same device kicks the first, which does not reconnect", async () => {
  const kicked = next(a, "kicked", () => true);
  const ended = next(a, "state", (s) => s.state === "ended");
  const a2 = client("A2");
  await a2.connect();
  assert.equal((await kicked).reason, KickReason.REPLACED);
  await ended;
  await new Promise((r) => setTimeout(r, 1000));
  assert.equal(a.state, "ended");
  assert.equal(a2.state, "online");
});
