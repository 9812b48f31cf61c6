import { test } from "node:test";
import assert from "node:assert/strict";
import { bytesToHex, fromU64, hexToBytes, toU64, u64Bytes, randomId128 } from "../src/ids.js";
import { hex, vectors } from "./vectors.js";

test("u64 ids round-trip as canonical decimal strings, 2^53+1 and u64::MAX exactly", () => {
  for (const v of vectors.ids.u64) {
    const n = toU64(v.text);
    assert.equal(fromU64(n), v.text);
    assert.equal(hex(u64Bytes(n)), v.bytes_hex);
  }
  assert.equal(toU64("9007199254740993") - toU64("9007199254740992"), 1n); // a JS number would read both as 2^53
});

test("u64 refuses what is not canonical", () => {
  for (const bad of ["", "01", "-1", "1e3", " 1", "18446744073709551616", "0x10", "1.0"]) {
    assert.throws(() => toU64(bad), RangeError, JSON.stringify(bad));
  }
  assert.throws(() => fromU64(-1n), RangeError);
  assert.throws(() => fromU64(1n << 64n), RangeError);
});

test("u128 ids round-trip as 32 hex digits, u128::MAX included", () => {
  for (const v of vectors.ids.u128) {
    assert.equal(bytesToHex(hexToBytes(v.text)), v.text);
    assert.equal(hex(hexToBytes(v.text)), v.bytes_hex);
  }
  assert.equal(bytesToHex(hexToBytes("FF".repeat(16))), "ff".repeat(16));
  for (const bad of ["", "00", "g".repeat(32), "0".repeat(33)]) assert.throws(() => hexToBytes(bad), RangeError);
  assert.equal(bytesToHex(new Uint8Array()), "");
  assert.throws(() => bytesToHex(new Uint8Array(15)), RangeError);
});

test("random ids are 16 bytes and never zero", () => {
  const seen = new Set<string>();
  for (let i = 0; i < 1000; i++) {
    const id = randomId128();
    assert.equal(id.length, 16);
    assert.ok(id.some((b) => b !== 0));
    seen.add(bytesToHex(id));
  }
  assert.equal(seen.size, 1000);
});
