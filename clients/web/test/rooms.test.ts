import { test } from "node:test";
import assert from "node:assert/strict";
import { create, toBinary } from "@bufbuild/protobuf";
import type { Connection } from "../src/connection.js";
import { Opcode, RoomLeftReason } from "../src/gen/contract.js";
import { RoomEventSchema, RoomEventsSchema, RoomJoinedSchema, RoomLeftSchema } from "../src/gen/qim/v1/room_pb.js";
import { Rooms, type RoomEvents, type RoomLeft } from "../src/rooms.js";

const room = "00ab".padEnd(32, "0");
const roomBytes = Buffer.from(room, "hex");

function events(...seqs: bigint[]) {
  return { opcode: Opcode.ROOM_EVENTS, requestId: 0, payload: toBinary(RoomEventsSchema, create(RoomEventsSchema, {
    roomId: roomBytes, events: seqs.map((s) => create(RoomEventSchema, { roomSeq: s, senderUserId: 1n, body: new Uint8Array([1]) })) })) };
}

function joiner(joinedSeq: bigint, calls: (bigint | undefined)[]) {
  return {
    isClosed: false,
    async call(_op: number, _s: unknown, req: { replayFromRoomSeq?: bigint }) {
      calls.push(req.replayFromRoomSeq);
      return create(RoomJoinedSchema, { roomId: roomBytes, roomSeq: joinedSeq, replayTruncated: false });
    },
  } as unknown as Connection;
}

test("room events are delivered once, in order, with the gaps named", async () => {
  const got: RoomEvents[] = [];
  const calls: (bigint | undefined)[] = [];
  const r = new Rooms({ joined: () => undefined, events: (e) => got.push(e), left: () => undefined }, () => undefined);
  await r.join(joiner(10n, calls), room);
  r.push(events(11n, 12n));
  r.push(events(12n, 13n)); // 12 again: dropped
  r.push(events(16n));
  assert.deepEqual(got.map((b) => b.events.map((e) => e.roomSeq)), [["11", "12"], ["13"], ["16"]]);
  assert.equal(got[0]!.gap, undefined);
  assert.deepEqual(got[2]!.gap, { from: "14", to: "15" });
  const other = new Rooms({ joined: () => undefined, events: () => assert.fail("an event of a room not joined"), left: () => undefined }, () => undefined);
  other.push(events(1n));
});

test("a slow consumer rejoins with replay from the next room_seq; a removal does not", async () => {
  const calls: (bigint | undefined)[] = [];
  const conn = joiner(20n, calls);
  const left: RoomLeft[] = [];
  const r = new Rooms({ joined: () => undefined, events: () => undefined, left: (l) => left.push(l) }, () => conn);
  await r.join(conn, room);
  r.push(events(21n));
  const leave = (reason: number) => ({ opcode: Opcode.ROOM_LEFT, requestId: 0,
    payload: toBinary(RoomLeftSchema, create(RoomLeftSchema, { roomId: roomBytes, reason })) });
  r.push(leave(RoomLeftReason.SLOW_CONSUMER));
  await new Promise((res) => setTimeout(res, 5));
  assert.deepEqual(calls, [undefined, 22n]);
  r.push(leave(RoomLeftReason.REMOVED));
  assert.deepEqual(left.map((l) => [l.reason, l.rejoining]), [[RoomLeftReason.SLOW_CONSUMER, true], [RoomLeftReason.REMOVED, false]]);
  assert.deepEqual(r.joined(), []);
});
