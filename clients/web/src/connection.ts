// One WebSocket connection to a gateway: frames out, messages in, answers matched to requests by
// request id (docs/protocol.md §2.4), the heartbeat (§7.7). It knows nothing of sync or sends;
// QimClient (client.ts) owns one at a time and replaces it on reconnect.
//
// Invariants: every request is settled exactly once, by its answer, its ERROR, or the
// connection's end (ConnectionClosedError); after close no callback fires and nothing is sent.
// Request ids count from 1 and skip 0, which marks frames that answer no request.

import { create, fromBinary, toBinary, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { ConnectionClosedError, ProtocolError, QimError } from "./errors.js";
import { encodeFrame, FrameReader, type Message } from "./frame.js";
import { Opcode, opcodeName } from "./gen/contract.js";
import { ErrorFrameSchema, PingSchema, PongSchema } from "./gen/qim/v1/connection_pb.js";

/** WebSocketLike is the part of the WHATWG WebSocket the SDK uses (browsers, Node ≥ 22, ws). */
export interface WebSocketLike {
  binaryType: string;
  readonly readyState: number;
  send(data: Uint8Array): void;
  close(code?: number, reason?: string): void;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
}

export type WebSocketFactory = (url: string) => WebSocketLike;

interface Pending {
  reply: number;
  resolve: (m: Message) => void;
  reject: (e: Error) => void;
}

/** Connection is one open socket. onPush gets every message that answers no request. */
export class Connection {
  private readonly reader = new FrameReader();
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closedWith: Error | undefined;
  private heartbeat: ReturnType<typeof setInterval> | undefined;
  private schedule = { intervalMs: 0, timeoutMs: 0 };
  private lastHeard = Date.now();
  /** closed settles (never rejects) with the reason once the connection has ended. */
  readonly closed: Promise<Error>;
  private settleClosed!: (e: Error) => void;

  private constructor(
    private readonly ws: WebSocketLike,
    private readonly onPush: (m: Message) => void,
  ) {
    this.closed = new Promise((r) => (this.settleClosed = r));
    ws.onmessage = (ev) => this.receive(ev.data);
    ws.onclose = (ev) => this.end(new ConnectionClosedError(`socket closed (${ev.code}${ev.reason ? ": " + ev.reason : ""})`));
    ws.onerror = () => this.end(new ConnectionClosedError("socket error"));
  }

  /** open dials url and resolves once the socket is open (no frame is sent yet). */
  static open(url: string, factory: WebSocketFactory, onPush: (m: Message) => void, timeoutMs: number): Promise<Connection> {
    return new Promise((resolve, reject) => {
      let ws: WebSocketLike;
      try {
        ws = factory(url);
      } catch (err) {
        reject(new ConnectionClosedError(`cannot open ${url}: ${String(err)}`));
        return;
      }
      ws.binaryType = "arraybuffer";
      const timer = setTimeout(() => {
        ws.close();
        reject(new ConnectionClosedError(`no connection to ${url} within ${timeoutMs} ms`));
      }, timeoutMs);
      ws.onopen = () => {
        clearTimeout(timer);
        resolve(new Connection(ws, onPush));
      };
      ws.onerror = () => {
        clearTimeout(timer);
        reject(new ConnectionClosedError(`cannot connect to ${url}`));
      };
      ws.onclose = ws.onerror;
    });
  }

  /** call sends one request and resolves with the answer of opcode reply, decoded. */
  async call<Req extends DescMessage, Res extends DescMessage>(
    opcode: number, reqSchema: Req, req: MessageShape<Req>, reply: number, resSchema: Res,
  ): Promise<MessageShape<Res>> {
    const m = await this.request(opcode, toBinary(reqSchema, req), reply);
    return fromBinary(resSchema, m.payload);
  }

  /** request sends a payload and resolves with the message answering it. */
  request(opcode: number, payload: Uint8Array, reply: number): Promise<Message> {
    if (this.closedWith) return Promise.reject(this.closedWith);
    const id = this.nextId;
    this.nextId = this.nextId >= 0xffffffff ? 1 : this.nextId + 1;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { reply, resolve, reject });
      this.write(opcode, id, payload);
    });
  }

  /** send writes a message that expects no answer (LOGOUT, a PONG). */
  send(opcode: number, payload: Uint8Array): void {
    if (!this.closedWith) this.write(opcode, 0, payload);
  }

  /**
   * startHeartbeat PINGs every intervalMs and ends the connection when nothing was heard for
   * timeoutMs. Each PONG may carry a new schedule (the server adapts it while the connection
   * holds, docs/protocol.md §7.7); the heartbeat follows it.
   */
  startHeartbeat(intervalMs: number, timeoutMs: number): void {
    clearInterval(this.heartbeat);
    this.schedule = { intervalMs, timeoutMs };
    this.heartbeat = setInterval(() => {
      if (Date.now() - this.lastHeard > timeoutMs) {
        this.close(new ConnectionClosedError(`nothing heard for ${timeoutMs} ms`));
        return;
      }
      this.request(Opcode.PING, toBinary(PingSchema, create(PingSchema, { clientTimeMs: BigInt(Date.now()), foreground: true })), Opcode.PONG)
        .then((m) => this.followPong(m.payload))
        .catch(() => undefined); // a lost PONG shows as silence, judged above
    }, Math.max(1000, intervalMs));
  }

  /** followPong adopts the schedule a PONG carries (0 = unchanged). */
  private followPong(payload: Uint8Array): void {
    const p = fromBinary(PongSchema, payload);
    const intervalMs = p.heartbeatIntervalMs || this.schedule.intervalMs;
    const timeoutMs = p.heartbeatTimeoutMs || this.schedule.timeoutMs;
    if (!this.closedWith && (intervalMs !== this.schedule.intervalMs || timeoutMs !== this.schedule.timeoutMs)) {
      this.startHeartbeat(intervalMs, timeoutMs);
    }
  }

  /** close ends the connection with reason; pending requests reject with it. */
  close(reason: Error = new ConnectionClosedError("closed by the client")): void {
    this.end(reason);
  }

  get isClosed(): boolean {
    return this.closedWith !== undefined;
  }

  private write(opcode: number, id: number, payload: Uint8Array): void {
    try {
      this.ws.send(encodeFrame(opcode, id, payload));
    } catch (err) {
      this.end(new ConnectionClosedError(`write failed: ${String(err)}`));
    }
  }

  private receive(data: unknown): void {
    if (this.closedWith) return;
    if (!(data instanceof ArrayBuffer)) {
      this.end(new ProtocolError("a text WebSocket message: the protocol is binary only"));
      return;
    }
    this.lastHeard = Date.now();
    let msgs: Message[];
    try {
      msgs = this.reader.push(new Uint8Array(data));
    } catch (err) {
      this.end(err as Error);
      return;
    }
    for (const m of msgs) this.dispatch(m);
  }

  private dispatch(m: Message): void {
    if (m.opcode === Opcode.PING) {
      this.send(Opcode.PONG, toBinary(PongSchema, create(PongSchema, { serverTimeMs: BigInt(Date.now()) })));
      return;
    }
    const p = m.requestId !== 0 ? this.pending.get(m.requestId) : undefined;
    if (!p) {
      this.onPush(m);
      return;
    }
    this.pending.delete(m.requestId);
    if (m.opcode === Opcode.ERROR) {
      const e = fromBinary(ErrorFrameSchema, m.payload);
      p.reject(new QimError(e.code, e.message, e.retryAfterMs, e.reason));
    } else if (m.opcode === p.reply) {
      p.resolve(m);
    } else {
      p.reject(new ProtocolError(`request ${m.requestId} answered by ${opcodeName(m.opcode)}, want ${opcodeName(p.reply)}`));
    }
  }

  private end(reason: Error): void {
    if (this.closedWith) return;
    this.closedWith = reason;
    clearInterval(this.heartbeat);
    this.ws.onmessage = this.ws.onclose = this.ws.onerror = null;
    try {
      this.ws.close();
    } catch {
      // already closing: nothing to release
    }
    for (const p of this.pending.values()) p.reject(reason);
    this.pending.clear();
    this.settleClosed(reason);
  }
}
