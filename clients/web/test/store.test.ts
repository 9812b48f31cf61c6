import { test } from "node:test";
import assert from "node:assert/strict";
import { IDBFactory } from "fake-indexeddb";
import { IndexedDBStore } from "../src/store.js";
import { Backoff } from "../src/backoff.js";

test("IndexedDBStore keeps the cursor and pending sends across a reopen", async () => {
  const factory = new IDBFactory();
  const a = await IndexedDBStore.open("qim-u1-phone", factory);
  assert.equal(await a.cursor(), "0");
  await a.setCursor("18446744073709551615");
  await a.putPending({ clientMessageId: "ab".repeat(16), target: { peer: "7" }, messageType: 1, customType: "", body: new Uint8Array([1, 2]), createdAtMs: 1 });
  await a.putPending({ clientMessageId: "cd".repeat(16), target: { group: "20".repeat(16) }, messageType: 1, customType: "t", body: new Uint8Array(), createdAtMs: 2 });
  await a.deletePending("cd".repeat(16));
  a.close();
  const b = await IndexedDBStore.open("qim-u1-phone", factory);
  assert.equal(await b.cursor(), "18446744073709551615");
  const p = await b.pending();
  assert.equal(p.length, 1);
  assert.deepEqual(p[0]!.body, new Uint8Array([1, 2]));
  const other = await IndexedDBStore.open("qim-u2-phone", factory);
  assert.equal(await other.cursor(), "0", "two accounts shared a cursor");
});

test("backoff grows to its cap with jitter of at most a fifth, and resets", () => {
  const b = new Backoff(250, 5000, () => 1);
  assert.deepEqual([b.next(), b.next(), b.next(), b.next(), b.next(), b.next()], [200, 400, 800, 1600, 3200, 4000]);
  b.reset();
  const full = new Backoff(250, 5000, () => 0);
  assert.equal(full.next(), 250);
  assert.equal(b.next(), 200);
});
