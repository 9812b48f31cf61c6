// The frame codec (docs/protocol.md §2; the Go reference is wire/). A frame is a 20-byte
// big-endian header and its payload; a message travels as one frame or as chunks on one stream.
//
// Invariants: every decode error is terminal (the reader throws the same ProtocolError forever,
// and the connection is closed: no resynchronisation, because a length that may be corrupt
// leaves no trustworthy boundary); no buffer is sized from a declared length before its bytes
// arrived; a reassembled message never exceeds Limits.maxFramePayload.
//
// The downlink is never compressed by this server version (§2.5); a COMPRESSED message is
// refused as a ProtocolError rather than decoded, since this SDK carries no zstd decoder. The
// uplink is never compressed and never chunked (a single frame may carry a whole message).

import { crc32c } from "./crc32c.js";
import { ProtocolError } from "./errors.js";
import { Limits, controlOpcodes, opcodeName } from "./gen/contract.js";

export const MAGIC = 0x514d;
export const VERSION = 1;
export const FLAG_COMPRESSED = 0x01;
export const FLAG_MORE = 0x02;
export const CONTROL_STREAM = 0;
export const DATA_STREAM = 1;
const HEADER = Limits.headerSize;
/** Streams a reader lets be half-received at once (the gateway writes at most one data message). */
const MAX_OPEN_STREAMS = 4;

/** Message is one logical message: an opcode, its request id and its protobuf payload. */
export interface Message {
  opcode: number;
  requestId: number;
  payload: Uint8Array;
}

/** encodeFrame writes a message as one frame: control opcodes on stream 0, the rest on 1. */
export function encodeFrame(opcode: number, requestId: number, payload: Uint8Array): Uint8Array {
  if (payload.length > Limits.maxFramePayload) {
    throw new RangeError(`${opcodeName(opcode)} payload is ${payload.length} bytes, limit ${Limits.maxFramePayload}`);
  }
  const out = new Uint8Array(HEADER + payload.length);
  const v = new DataView(out.buffer);
  v.setUint16(0, MAGIC);
  v.setUint8(2, VERSION);
  v.setUint8(3, 0);
  v.setUint16(4, opcode);
  v.setUint16(6, controlOpcodes.has(opcode) ? CONTROL_STREAM : DATA_STREAM);
  v.setUint32(8, requestId >>> 0);
  v.setUint32(12, payload.length);
  v.setUint32(16, crc32c(out.subarray(0, 16)));
  out.set(payload, HEADER);
  return out;
}

interface Partial {
  opcode: number;
  requestId: number;
  parts: Uint8Array[];
  size: number;
}

/**
 * FrameReader turns the received byte stream (WebSocket messages cut anywhere) into messages.
 * Feed it every received chunk in order; it returns the messages completed by that chunk.
 */
export class FrameReader {
  private buf: Uint8Array = new Uint8Array(0);
  private streams = new Map<number, Partial>();
  private failed: ProtocolError | undefined;

  push(chunk: Uint8Array): Message[] {
    if (this.failed) throw this.failed;
    try {
      return this.drain(chunk);
    } catch (err) {
      this.failed = err instanceof ProtocolError ? err : new ProtocolError(String(err));
      throw this.failed;
    }
  }

  private drain(chunk: Uint8Array): Message[] {
    this.buf = concat(this.buf, chunk);
    const out: Message[] = [];
    let off = 0;
    while (this.buf.length - off >= HEADER) {
      const h = parseHeader(this.buf.subarray(off, off + HEADER));
      if (this.buf.length - off - HEADER < h.length) break; // the payload has not arrived yet
      const payload = this.buf.slice(off + HEADER, off + HEADER + h.length);
      off += HEADER + h.length;
      const m = this.assemble(h, payload);
      if (m) out.push(m);
    }
    this.buf = this.buf.slice(off);
    return out;
  }

  private assemble(h: Header, payload: Uint8Array): Message | undefined {
    if (h.flags & FLAG_COMPRESSED) {
      throw new ProtocolError(`${opcodeName(h.opcode)} is COMPRESSED; this server version never compresses and this SDK does not decompress`);
    }
    const open = this.streams.get(h.stream);
    if (!open && !(h.flags & FLAG_MORE)) return { opcode: h.opcode, requestId: h.requestId, payload };
    let p = open;
    if (!p) {
      if (this.streams.size >= MAX_OPEN_STREAMS) throw new ProtocolError(`more than ${MAX_OPEN_STREAMS} chunked messages open at once`);
      p = { opcode: h.opcode, requestId: h.requestId, parts: [], size: 0 };
      this.streams.set(h.stream, p);
    } else if (p.opcode !== h.opcode || p.requestId !== h.requestId) {
      throw new ProtocolError(`stream ${h.stream}: a chunk of ${opcodeName(h.opcode)} continues ${opcodeName(p.opcode)}`);
    }
    p.size += payload.length;
    if (p.size > Limits.maxFramePayload) throw new ProtocolError(`a chunked message exceeds ${Limits.maxFramePayload} bytes`);
    p.parts.push(payload);
    if (h.flags & FLAG_MORE) return undefined;
    this.streams.delete(h.stream);
    return { opcode: p.opcode, requestId: p.requestId, payload: concat(...p.parts) };
  }
}

interface Header {
  flags: number;
  opcode: number;
  stream: number;
  requestId: number;
  length: number;
}

/** parseHeader checks magic, version, CRC, flags and length, in the order §2.1 gives. */
export function parseHeader(b: Uint8Array): Header {
  const v = new DataView(b.buffer, b.byteOffset, HEADER);
  if (v.getUint16(0) !== MAGIC) throw new ProtocolError("bad magic");
  if (v.getUint8(2) !== VERSION) throw new ProtocolError(`unknown version ${v.getUint8(2)}`);
  if (v.getUint32(16) !== crc32c(b.subarray(0, 16))) throw new ProtocolError("header CRC mismatch");
  const flags = v.getUint8(3);
  if (flags & ~(FLAG_COMPRESSED | FLAG_MORE)) throw new ProtocolError(`reserved flags 0x${flags.toString(16)}`);
  const length = v.getUint32(12);
  if (length > Limits.maxFramePayload) throw new ProtocolError(`frame of ${length} bytes above ${Limits.maxFramePayload}`);
  return { flags, opcode: v.getUint16(4), stream: v.getUint16(6), requestId: v.getUint32(8), length };
}

function concat(...parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  n = 0;
  for (const p of parts) {
    out.set(p, n);
    n += p.length;
  }
  return out;
}
