// Loads test/vectors.json: what the Go encoders produce (gates/webit writes it).
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export interface Vectors {
  crc: { input_hex: string; crc: number }[];
  frames: { name: string; opcode: number; stream: number; request_id: number; payload_hex: string; frame_hex: string }[];
  stream: { bytes_base64: string; messages: { opcode: number; request_id: number; payload_len: number; first_byte: number; last_byte: number }[] };
  ids: { u64: { text: string; bytes_hex: string }[]; u128: { text: string; bytes_hex: string }[] };
  messages: { type: string; json: unknown; bytes_hex: string }[];
}

// The compiled test runs from dist/test; the JSON stays in test/.
const here = dirname(fileURLToPath(import.meta.url));
export const vectors: Vectors = JSON.parse(readFileSync(join(here, "..", "..", "test", "vectors.json"), "utf8"));

export function unhex(s: string): Uint8Array {
  return Uint8Array.from(Buffer.from(s, "hex"));
}

export function hex(b: Uint8Array): string {
  return Buffer.from(b).toString("hex");
}
