// Identifiers (docs/protocol.md §6). u128 ids travel in the API as 32 lowercase hex digits, u64
// ids and sequences as canonical decimal strings: never as JS numbers, which are exact only
// below 2^53 (the seed's rule; the tests cover 2^53+1, u64::MAX and u128::MAX).

const U64_MAX = (1n << 64n) - 1n;

/** Hex128 is a u128 id as 32 lowercase hex digits (tenant, conversation, message, group, room). */
export type Hex128 = string;
/** Dec64 is a u64 as a canonical decimal string (user ids, sequences). */
export type Dec64 = string;

/** hexToBytes parses a canonical u128: exactly 32 hex digits; upper case is accepted. */
export function hexToBytes(id: Hex128): Uint8Array {
  if (!/^[0-9a-fA-F]{32}$/.test(id)) throw new RangeError(`not a u128 id (32 hex digits): ${JSON.stringify(id)}`);
  const out = new Uint8Array(16);
  for (let i = 0; i < 16; i++) out[i] = parseInt(id.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/** bytesToHex renders 16 wire bytes; an empty field (unset) renders as "". */
export function bytesToHex(b: Uint8Array): Hex128 {
  if (b.length === 0) return "";
  if (b.length !== 16) throw new RangeError(`a u128 id is 16 bytes, not ${b.length}`);
  let s = "";
  for (const x of b) s += x.toString(16).padStart(2, "0");
  return s;
}

/** toU64 parses a canonical decimal u64 ("0", no sign, no leading zero, at most u64::MAX). */
export function toU64(s: Dec64): bigint {
  if (!/^(0|[1-9][0-9]{0,19})$/.test(s)) throw new RangeError(`not a canonical u64: ${JSON.stringify(s)}`);
  const n = BigInt(s);
  if (n > U64_MAX) throw new RangeError(`above u64::MAX: ${s}`);
  return n;
}

/** fromU64 renders a u64 as its canonical decimal string. */
export function fromU64(n: bigint): Dec64 {
  if (n < 0n || n > U64_MAX) throw new RangeError(`not a u64: ${n}`);
  return n.toString(10);
}

/** u64Bytes is n as 8 big-endian bytes. */
export function u64Bytes(n: bigint): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, n);
  return out;
}

/** randomId128 is a fresh non-zero u128, for client_message_id and client_request_id. */
export function randomId128(): Uint8Array {
  const b = new Uint8Array(16);
  do globalThis.crypto.getRandomValues(b);
  while (b.every((x) => x === 0));
  return b;
}

/** conversationKind is the top 4 bits of a conversation id (1 DIRECT, 2 GROUP, 3 ROOM). */
export function conversationKind(id: Hex128): number {
  return parseInt(id[0] ?? "0", 16);
}
