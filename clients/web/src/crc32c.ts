// CRC-32C (Castagnoli), as the frame header's checksum uses it (docs/protocol.md §2.1): reflected
// polynomial 0x82F63B78, initial value and final XOR 0xFFFFFFFF. Check value: CRC32C("123456789")
// = 0xE3069283. Table-driven, one byte per step: the header is 16 bytes, so nothing faster pays.

const table = (() => {
  const t = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    t[i] = c >>> 0;
  }
  return t;
})();

/** crc32c returns the CRC-32C of bytes as an unsigned 32-bit number. */
export function crc32c(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = (table[(c ^ b) & 0xff]! ^ (c >>> 8)) >>> 0;
  return (c ^ 0xffffffff) >>> 0;
}
