// Room memberships of one client (docs/protocol.md §7.13). A room the application joined stays
// wanted until it leaves or is removed: after a reconnect, a SLOW_CONSUMER or an UNAVAILABLE
// ROOM_LEFT the client rejoins it with replay from the last room_seq it delivered + 1, and tells
// the application of every gap it can see (a replay the server reports truncated, or a room_seq
// that skips).
//
// Invariants: events of a room are delivered in room_seq order, each once (a replayed event at
// or below the last delivered one is dropped); events of a room not joined or being joined are
// dropped (a ROOM_LEFT may overtake events already on their way).

import { create, fromBinary } from "@bufbuild/protobuf";
import type { Connection } from "./connection.js";
import { QimError } from "./errors.js";
import { ErrorCode, Opcode, RoomLeftReason } from "./gen/contract.js";
import {
  JoinRoomSchema, LeaveRoomSchema, RoomEventsSchema, RoomJoinedSchema, RoomLeftSchema,
  type RoomEvents as RoomEventsPb, type RoomLeft as RoomLeftPb,
} from "./gen/qim/v1/room_pb.js";
import { bytesToHex, fromU64, hexToBytes, toU64, type Dec64, type Hex128 } from "./ids.js";
import { fromRoomEvent, type RoomEvent } from "./types.js";
import type { Message } from "./frame.js";

export interface RoomJoined {
  roomId: Hex128;
  /** The latest room_seq at join time. */
  roomSeq: Dec64;
  /** Events from the requested start are no longer held: show a gap. */
  replayTruncated: boolean;
}

export interface RoomEvents {
  roomId: Hex128;
  events: RoomEvent[];
  /** Set when room_seq skipped before the first event: the seqs from..to were lost to this client. */
  gap?: { from: Dec64; to: Dec64 };
}

export interface RoomLeft {
  roomId: Hex128;
  reason: number;
  /** The client rejoins on its own (SLOW_CONSUMER, UNAVAILABLE, a reconnect). */
  rejoining: boolean;
}

export interface RoomSink {
  joined(j: RoomJoined): void;
  events(e: RoomEvents): void;
  left(l: RoomLeft): void;
}

interface RoomState {
  last: bigint | undefined; // the last room_seq delivered
  phase: "joining" | "joined" | "out";
  // fresh: no event delivered since the last join. The first one sets the baseline instead of
  // being compared with it: what the join could not replay is reported as replayTruncated.
  fresh: boolean;
}

/** Delay between rejoin attempts while the room's server is unavailable. */
const REJOIN_MS = 500;

export class Rooms {
  private readonly rooms = new Map<Hex128, RoomState>();

  constructor(
    private readonly sink: RoomSink,
    private readonly online: () => Connection | undefined,
  ) {}

  /** join joins roomId on conn, replaying from replayFrom when given (else live only). */
  async join(conn: Connection, roomId: Hex128, replayFrom?: Dec64): Promise<RoomJoined> {
    const id = roomId.toLowerCase();
    let st = this.rooms.get(id);
    if (!st) this.rooms.set(id, (st = { last: undefined, phase: "joining", fresh: true }));
    st.phase = "joining";
    st.fresh = true;
    const req = create(JoinRoomSchema, { roomId: hexToBytes(id) });
    if (replayFrom !== undefined) req.replayFromRoomSeq = toU64(replayFrom);
    try {
      const j = await conn.call(Opcode.JOIN_ROOM, JoinRoomSchema, req, Opcode.ROOM_JOINED, RoomJoinedSchema);
      if (st.phase === "joining") st.phase = "joined";
      const out = { roomId: id, roomSeq: fromU64(j.roomSeq), replayTruncated: j.replayTruncated };
      this.sink.joined(out);
      return out;
    } catch (err) {
      if (st.phase === "joining") this.rooms.delete(id);
      throw err;
    }
  }

  /** leave ends the membership; the answer is ROOM_LEFT REQUESTED. */
  async leave(conn: Connection, roomId: Hex128): Promise<void> {
    const id = roomId.toLowerCase();
    this.rooms.delete(id);
    await conn.call(Opcode.LEAVE_ROOM, LeaveRoomSchema, create(LeaveRoomSchema, { roomId: hexToBytes(id) }), Opcode.ROOM_LEFT, RoomLeftSchema);
  }

  /** joined lists the rooms the application wants, joined or being rejoined. */
  joined(): Hex128[] {
    return [...this.rooms.keys()];
  }

  /** push handles ROOM_EVENTS and a server-initiated ROOM_LEFT. */
  push(m: Message): void {
    if (m.opcode === Opcode.ROOM_EVENTS) this.deliver(fromBinary(RoomEventsSchema, m.payload));
    else if (m.opcode === Opcode.ROOM_LEFT) this.serverLeft(fromBinary(RoomLeftSchema, m.payload));
  }

  /** rejoinAll rejoins every wanted room on a new connection, with replay from the last delivered + 1. */
  rejoinAll(conn: Connection): void {
    for (const id of this.rooms.keys()) void this.rejoin(conn, id);
  }

  private deliver(batch: RoomEventsPb): void {
    const id = bytesToHex(batch.roomId);
    const st = this.rooms.get(id);
    if (!st || st.phase === "out") return;
    const fresh = batch.events.filter((e) => st.last === undefined || e.roomSeq > st.last);
    if (!fresh.length) return;
    const first = fresh[0]!.roomSeq;
    const out: RoomEvents = { roomId: id, events: fresh.map(fromRoomEvent) };
    if (!st.fresh && st.last !== undefined && first > st.last + 1n) out.gap = { from: fromU64(st.last + 1n), to: fromU64(first - 1n) };
    st.fresh = false;
    st.last = fresh[fresh.length - 1]!.roomSeq;
    this.sink.events(out);
  }

  private serverLeft(l: RoomLeftPb): void {
    const id = bytesToHex(l.roomId);
    const st = this.rooms.get(id);
    if (!st) return;
    const rejoining = l.reason === RoomLeftReason.SLOW_CONSUMER || l.reason === RoomLeftReason.UNAVAILABLE;
    st.phase = "out";
    if (!rejoining) this.rooms.delete(id);
    this.sink.left({ roomId: id, reason: l.reason, rejoining });
    const conn = this.online();
    if (rejoining && conn) void this.rejoin(conn, id);
  }

  private async rejoin(conn: Connection, id: Hex128): Promise<void> {
    for (;;) {
      const st = this.rooms.get(id);
      if (!st || conn.isClosed) return;
      try {
        await this.join(conn, id, st.last === undefined ? undefined : fromU64(st.last + 1n));
        return;
      } catch (err) {
        if (!(err instanceof QimError) || err.code !== ErrorCode.UNAVAILABLE) {
          this.rooms.delete(id);
          this.sink.left({ roomId: id, reason: RoomLeftReason.UNAVAILABLE, rejoining: false });
          return;
        }
        await new Promise((r) => setTimeout(r, REJOIN_MS));
      }
    }
  }
}
