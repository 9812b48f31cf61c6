// A fake gateway behind a WebSocketLike, for tests that drive a whole QimClient without a
// server: it answers AUTH, PULL_MAILBOX (from its mailbox, empty unless a test fills it) and
// SEND (an ack, or what onSend returns), records every SEND decoded from the bytes the client
// wrote, and pushes mailbox events on demand.

import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { WebSocketLike } from "../src/connection.js";
import { encodeFrame, FrameReader, type Message } from "../src/frame.js";
import { Opcode } from "../src/gen/contract.js";
import { MailboxCursorSchema } from "../src/gen/qim/v1/common_pb.js";
import { AuthOkSchema } from "../src/gen/qim/v1/connection_pb.js";
import { MailboxBatchSchema, PullMailboxSchema, PushEventsSchema, type MailboxEvent } from "../src/gen/qim/v1/mailbox_pb.js";
import { SendAckSchema, SendRequestSchema, type SendRequest } from "../src/gen/qim/v1/send_pb.js";

export class FakeGateway implements WebSocketLike {
  binaryType = "";
  readyState = 1;
  onopen: ((ev: unknown) => void) | null = null;
  onmessage: ((ev: { data: unknown }) => void) | null = null;
  onclose: ((ev: { code: number; reason: string }) => void) | null = null;
  onerror: ((ev: unknown) => void) | null = null;
  /** Every SEND received, decoded from its frame's payload bytes. */
  readonly sends: SendRequest[] = [];
  /** The mailbox PULL_MAILBOX answers from: the events above the request's cursor, in order. */
  readonly mailbox: MailboxEvent[] = [];
  /** onPull runs when a PULL_MAILBOX arrives, before it is answered. */
  onPull?: () => void;
  private readonly reader = new FrameReader();
  private seq = 10n;

  constructor(private readonly userId: bigint) {
    setTimeout(() => this.onopen?.({}), 0);
  }

  send(data: Uint8Array): void {
    for (const m of this.reader.push(data)) this.handle(m);
  }

  close(): void {
    this.readyState = 3;
  }

  /** push delivers mailbox events as PUSH_EVENTS (request id 0). */
  push(events: MailboxEvent[]): void {
    this.write(Opcode.PUSH_EVENTS, 0, toBinary(PushEventsSchema, create(PushEventsSchema, { events })));
  }

  private handle(m: Message): void {
    switch (m.opcode) {
      case Opcode.AUTH:
        this.write(Opcode.AUTH_OK, m.requestId, toBinary(AuthOkSchema, create(AuthOkSchema, {
          userId: this.userId, sessionEpoch: 1n, heartbeatIntervalMs: 60_000, heartbeatTimeoutMs: 150_000, serverTimeMs: 1n })));
        return;
      case Opcode.PULL_MAILBOX: {
        const cursor = fromBinary(PullMailboxSchema, m.payload).cursor ?? create(MailboxCursorSchema);
        this.onPull?.();
        const entries = this.mailbox.filter((e) => e.mailboxSeq > cursor.mailboxSeq);
        const next = entries.length ? create(MailboxCursorSchema, { mailboxSeq: entries[entries.length - 1]!.mailboxSeq }) : cursor;
        this.write(Opcode.MAILBOX_BATCH, m.requestId, toBinary(MailboxBatchSchema, create(MailboxBatchSchema, { entries, nextCursor: next, hasMore: false })));
        return;
      }
      case Opcode.SEND: {
        const req = fromBinary(SendRequestSchema, m.payload);
        this.sends.push(req);
        this.write(Opcode.SEND_ACK, m.requestId, toBinary(SendAckSchema, create(SendAckSchema, {
          clientMessageId: req.clientMessageId, messageId: new Uint8Array(16).fill(9), conversationId: new Uint8Array(16).fill(0x10),
          conversationSeq: ++this.seq, committedAtMs: 5n })));
        return;
      }
    }
  }

  private write(opcode: number, requestId: number, payload: Uint8Array): void {
    const data = encodeFrame(opcode, requestId, payload).slice().buffer;
    setTimeout(() => this.onmessage?.({ data }), 0);
  }
}
