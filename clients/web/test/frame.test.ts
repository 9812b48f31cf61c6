import { test } from "node:test";
import assert from "node:assert/strict";
import { crc32c } from "../src/crc32c.js";
import { encodeFrame, FrameReader, FLAG_COMPRESSED, FLAG_MORE } from "../src/frame.js";
import { ProtocolError } from "../src/errors.js";
import { Limits, Opcode } from "../src/gen/contract.js";
import { hex, unhex, vectors } from "./vectors.js";

test("CRC-32C matches the check value", () => {
  for (const v of vectors.crc) assert.equal(crc32c(unhex(v.input_hex)), v.crc);
});

test("frames encode byte for byte as the Go encoder writes them", () => {
  for (const v of vectors.frames) {
    assert.equal(hex(encodeFrame(v.opcode, v.request_id, unhex(v.payload_hex))), v.frame_hex, v.name);
  }
});

test("frames decode however the bytes are cut", () => {
  for (const v of vectors.frames) {
    const bytes = unhex(v.frame_hex);
    for (const step of [1, 7, 20, bytes.length]) {
      const r = new FrameReader();
      const got = [];
      for (let i = 0; i < bytes.length; i += step) got.push(...r.push(bytes.subarray(i, i + step)));
      assert.equal(got.length, 1, `${v.name} in pieces of ${step}`);
      assert.equal(got[0]!.opcode, v.opcode);
      assert.equal(got[0]!.requestId, v.request_id);
      assert.equal(hex(got[0]!.payload), v.payload_hex);
    }
  }
});

test("a chunked message with a control message between its chunks reassembles", () => {
  const bytes = Uint8Array.from(Buffer.from(vectors.stream.bytes_base64, "base64"));
  const got = new FrameReader().push(bytes);
  assert.equal(got.length, vectors.stream.messages.length);
  got.forEach((m, i) => {
    const want = vectors.stream.messages[i]!;
    assert.equal(m.opcode, want.opcode);
    assert.equal(m.requestId, want.request_id);
    assert.equal(m.payload.length, want.payload_len);
    assert.equal(m.payload[0], want.first_byte);
    assert.equal(m.payload[m.payload.length - 1], want.last_byte);
  });
});

/** corrupt returns a valid PING frame with fn applied to its header, the CRC recomputed unless keepCrc. */
function corrupt(fn: (v: DataView) => void, keepCrc = false): Uint8Array {
  const f = encodeFrame(Opcode.PING, 1, new Uint8Array([8, 1]));
  const v = new DataView(f.buffer);
  fn(v);
  if (!keepCrc) v.setUint32(16, crc32c(f.subarray(0, 16)));
  return f;
}

test("every header rule is fatal, and the reader stays failed", () => {
  const cases: [string, Uint8Array][] = [
    ["bad magic", corrupt((v) => v.setUint16(0, 0x1603))],
    ["version", corrupt((v) => v.setUint8(2, 2))],
    ["CRC", corrupt((v) => v.setUint8(9, 9), true)],
    ["reserved flags", corrupt((v) => v.setUint8(3, 0x04))],
    ["above the frame limit", corrupt((v) => v.setUint32(12, Limits.maxFramePayload + 1))],
    ["compressed", corrupt((v) => v.setUint8(3, FLAG_COMPRESSED))],
  ];
  for (const [name, bytes] of cases) {
    const r = new FrameReader();
    assert.throws(() => r.push(bytes), ProtocolError, name);
    assert.throws(() => r.push(encodeFrame(Opcode.PING, 2, new Uint8Array())), ProtocolError, `${name}: the reader recovered`);
  }
});

test("a chunk continuing another message is fatal", () => {
  const first = corrupt((v) => v.setUint8(3, FLAG_MORE));
  const other = encodeFrame(Opcode.PING, 9, new Uint8Array([1]));
  const r = new FrameReader();
  assert.deepEqual(r.push(first), []);
  assert.throws(() => r.push(other), /continues/);
});

test("an uplink above the frame limit is refused before it is written", () => {
  assert.throws(() => encodeFrame(Opcode.SEND, 1, new Uint8Array(Limits.maxFramePayload + 1)), RangeError);
});
