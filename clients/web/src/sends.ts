// Sends with pending/committed/failed states (docs/protocol.md §7.4). A send is stored before
// its first attempt with a fresh client_message_id and retried with that same id until it is
// settled: by its SEND_ACK, by the sender's own copy in the mailbox (which carries the id, and
// settles a send whose ack was lost), or by a refusal that retrying cannot change.
//
// Invariants: per client_message_id the application sees exactly one "pending" and then exactly
// one "committed" or "failed", whichever settlement comes first (an ack and the mailbox copy
// race; the seed's GUI found the committed event arriving before the send call returned, so
// "pending" is emitted inside send(), before it returns); a retry never uses a new id; a send is
// deleted from the store only once settled.
//
// A recall, edit or delete (amend.ts) is such a send with PendingSend.amend set, so it is
// stored, retried, resent after a reload and settled exactly like a message.

import { create } from "@bufbuild/protobuf";
import type { Connection } from "./connection.js";
import { ConnectionClosedError, QimError } from "./errors.js";
import { ErrorCode, Opcode } from "./gen/contract.js";
import { AmendSchema, SendAckSchema, SendRequestSchema } from "./gen/qim/v1/send_pb.js";
import { bytesToHex, hexToBytes, randomId128, toU64, type Dec64, type Hex128 } from "./ids.js";
import type { ClientStore, PendingAmend, PendingSend } from "./store.js";
import { fromAck, type Ack } from "./types.js";

export type SendState = "pending" | "committed" | "failed";

/** SendUpdate is one state of one send, as the "send" event carries it. */
export interface SendUpdate {
  clientMessageId: Hex128;
  state: SendState;
  target: PendingSend["target"];
  ack?: Ack;
  error?: Error;
  /** On "pending": what is being sent, for an optimistic row. */
  body?: Uint8Array;
  /** Set on every update of a recall, edit or delete: it adds no message of its own. */
  amend?: PendingAmend;
}

export interface SendHandle {
  clientMessageId: Hex128;
  /** committed resolves with the ack, or rejects with the refusal that failed the send. */
  committed: Promise<Ack>;
}

interface Waiter {
  resolve: (a: Ack) => void;
  reject: (e: Error) => void;
  committed: Promise<Ack>;
}

/** Delay before a retryable refusal (UNAVAILABLE, INTERNAL, ...) is retried on the same connection. */
const RETRY_MS = 1000;

export class Sends {
  private readonly states = new Map<Hex128, SendState>();
  private readonly waiters = new Map<Hex128, Waiter>();
  private readonly sends = new Map<Hex128, PendingSend>();

  constructor(
    private readonly store: ClientStore,
    private readonly emit: (u: SendUpdate) => void,
    private readonly online: () => Connection | undefined,
  ) {}

  /** start records a new send as pending (emitted before it returns) and transmits it when online. */
  start(target: PendingSend["target"], body: Uint8Array, messageType: number, customType: string, amend?: PendingAmend): SendHandle {
    const p: PendingSend = { clientMessageId: bytesToHex(randomId128()), target, messageType, customType, body, createdAtMs: Date.now() };
    if (amend) p.amend = { targetSeq: amend.targetSeq, action: amend.action };
    const w = this.track(p);
    void this.store.putPending(p).then(
      () => this.transmit(p),
      (err) => this.settle(p.clientMessageId, { error: new Error(`the send could not be stored: ${String(err)}`) }),
    );
    return { clientMessageId: p.clientMessageId, committed: w.committed };
  }

  /** restore tracks the sends a previous session stored and left pending (emitted as pending). */
  async restore(): Promise<void> {
    for (const p of await this.store.pending()) if (!this.states.has(p.clientMessageId)) this.track(p);
  }

  /** waitFor is the settlement of a tracked send (restored ones included). */
  waitFor(id: Hex128): Promise<Ack> | undefined {
    return this.waiters.get(id)?.committed;
  }

  /** resendAll transmits every pending send on the new connection (after the mailbox drained). */
  resendAll(): void {
    for (const p of this.sends.values()) void this.transmit(p);
  }

  /** settleFromMailbox settles a pending send by the sender's own committed copy. */
  settleFromMailbox(ack: Ack): void {
    if (this.states.get(ack.clientMessageId) === "pending") this.settle(ack.clientMessageId, { ack });
  }

  private track(p: PendingSend): Waiter {
    let w!: Waiter;
    const committed = new Promise<Ack>((resolve, reject) => (w = { resolve, reject, committed: undefined! }));
    committed.catch(() => undefined); // a caller that ignores the promise is told through events
    w.committed = committed;
    this.states.set(p.clientMessageId, "pending");
    this.waiters.set(p.clientMessageId, w);
    this.sends.set(p.clientMessageId, p);
    this.emit({ clientMessageId: p.clientMessageId, state: "pending", target: p.target, body: p.body, ...(p.amend && { amend: p.amend }) });
    return w;
  }

  private async transmit(p: PendingSend): Promise<void> {
    const conn = this.online();
    if (!conn || this.states.get(p.clientMessageId) !== "pending") return; // sent after the next reconnect
    const req = create(SendRequestSchema, {
      clientMessageId: hexToBytes(p.clientMessageId), messageType: p.messageType, customType: p.customType, body: p.body,
      clientTimeMs: BigInt(Date.now()),
      target: "peer" in p.target ? { case: "peerUserId", value: toU64(p.target.peer) } : { case: "groupId", value: hexToBytes(p.target.group) },
    });
    if (p.amend) req.amend = create(AmendSchema, { targetSeq: toU64(p.amend.targetSeq), action: p.amend.action });
    try {
      const ack = await conn.call(Opcode.SEND, SendRequestSchema, req, Opcode.SEND_ACK, SendAckSchema);
      this.settle(p.clientMessageId, { ack: fromAck(ack) });
    } catch (err) {
      if (err instanceof ConnectionClosedError || conn.isClosed) return; // outcome unknown: resent after reconnect
      if (err instanceof QimError && (err.retryable || err.code === ErrorCode.MAILBOX_DIRTY)) {
        setTimeout(() => void this.transmit(p), Math.max(RETRY_MS, err.retryAfterMs));
        return;
      }
      this.settle(p.clientMessageId, { error: err as Error });
    }
  }

  private settle(id: Hex128, r: { ack?: Ack; error?: Error }): void {
    if (this.states.get(id) !== "pending") return;
    const p = this.sends.get(id)!;
    const state: SendState = r.ack ? "committed" : "failed";
    this.states.delete(id); // a later ack or mailbox copy of it finds no pending send and changes nothing
    this.sends.delete(id);
    const w = this.waiters.get(id)!;
    this.waiters.delete(id);
    void this.store.deletePending(id).catch(() => undefined); // left behind, a reload resends: the server answers the same ack
    this.emit({ clientMessageId: id, state, target: p.target, ...(p.amend && { amend: p.amend }), ...r });
    if (r.ack) w.resolve(r.ack);
    else w.reject(r.error!);
  }
}

/** isDec64 reports whether s is a canonical u64 (for argument checks). */
export function isDec64(s: Dec64): boolean {
  try {
    toU64(s);
    return true;
  } catch {
    return false;
  }
}
