// QimClient: one user's session with a Q-IM deployment over WebSocket (docs/protocol.md §7).
// It keeps one connection open while started, reconnecting with backoff; after each AUTH_OK it
// drains the mailbox from the stored cursor, resends the pending sends with their ids and
// rejoins the wanted rooms. Requests (sessions, history, groups, rooms) go on the current
// connection and fail with ConnectionClosedError while offline.
//
// Invariants: at most one connection and one dial at a time; a KICKED that forbids automatic
// reconnection (REPLACED, LOGGED_OUT, KICKED_BY_ADMIN, BANNED) or a refused AUTH (UNAUTHORIZED)
// ends the client ("ended") instead of looping; everything else is retried.

import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { AmendAction, amendmentOf, checkAmendable, type AmendableMessage, type Amendment, type SendTarget } from "./amend.js";
import { Backoff } from "./backoff.js";
import { Connection, type WebSocketFactory } from "./connection.js";
import { Emitter } from "./emitter.js";
import { ConnectionClosedError, QimError, SessionEndedError } from "./errors.js";
import type { Message } from "./frame.js";
import { ErrorCode, KickReason, Limits, MessageType, Opcode } from "./gen/contract.js";
import { AuthOkSchema, AuthRequestSchema, KickedSchema, LogoutSchema } from "./gen/qim/v1/connection_pb.js";
import { MailboxCursorSchema } from "./gen/qim/v1/common_pb.js";
import { PushEventsSchema, type MailboxEvent } from "./gen/qim/v1/mailbox_pb.js";
import { SendAckSchema, SendRequestSchema } from "./gen/qim/v1/send_pb.js";
import { bytesToHex, fromU64, hexToBytes, randomId128, toU64, type Dec64, type Hex128 } from "./ids.js";
import { Requests } from "./requests.js";
import { Rooms, type RoomEvents, type RoomJoined, type RoomLeft } from "./rooms.js";
import { Sends, type SendHandle, type SendUpdate } from "./sends.js";
import { DeferredStore, MemoryStore, type ClientStore, type PendingSend } from "./store.js";
import { Sync } from "./sync.js";
import { ReadReceiptSchema, SessionDeltaSchema, TypingEventSchema, TypingSchema } from "./gen/qim/v1/session_pb.js";
import { ReactionEventSchema } from "./gen/qim/v1/history_pb.js";
import { fromMailbox, fromReactions, fromSession, type ChatMessage, type Conversation, type Reaction } from "./types.js";

export type ClientState = "idle" | "connecting" | "online" | "offline" | "ended";

export interface ClientOptions {
  /** The gateway's WebSocket endpoint, e.g. ws://127.0.0.1:7080/ws (wss:// behind a TLS proxy). */
  url: string;
  /** The token, or a function asked before every connection (a token expires; docs/identity.md). */
  token: string | (() => Promise<string>);
  /** Required when the token names no device (a user-level JWT); must match one that does. */
  deviceId?: string;
  /** The tenant as 32 hex digits: an optional cross-check of the token's. */
  tenantId?: Hex128;
  clientVersion?: string;
  /**
   * Cursor and pending sends: a store, or a function opening the store of a user (called once,
   * after the first AUTH_OK names the user; e.g. one IndexedDBStore per account). Default
   * MemoryStore (a reload starts from zero).
   */
  store?: ClientStore | ((userId: Dec64) => Promise<ClientStore>);
  /** Opens a socket; default the global WebSocket. */
  webSocket?: WebSocketFactory;
  /** How long one dial may take. Default 10 s. */
  connectTimeoutMs?: number;
}

export interface ClientEvents extends Record<string, unknown> {
  state: { state: ClientState; error?: Error };
  /** Each committed message once, from pushes and pulls, in mailbox order per pull. */
  message: ChatMessage;
  /**
   * A recall, edit or delete reached this device (right after the "message" event of its CONTROL
   * message): apply it to the application's copy of the target with amendMessage.
   */
  amended: Amendment;
  send: SendUpdate;
  kicked: { reason: number; detail: string };
  /** The mailbox cursor expired: refresh conversations from sessions() and history(). */
  rebuild: Record<string, never>;
  /** Someone is typing to this user in a direct conversation or a small group, or stopped (TYPING_EVENT). */
  typing: { conversationId: Hex128; userId: Dec64; typing: boolean; expiresInMs: number };
  /** The peer of a direct conversation read up to readSeq (READ_RECEIPT; absolute, forward only). */
  receipt: { conversationId: Hex128; readerUserId: Dec64; readSeq: Dec64 };
  /** A participant added (removed false) or removed a reaction; reactions are the message's counts after it. */
  reaction: { conversationId: Hex128; conversationSeq: Dec64; userId: Dec64; key: string; removed: boolean; reactions: Reaction[] };
  /**
   * Another device of the user changed a conversation's read state (SESSION_DELTA): the
   * conversation's complete row with absolute values, as sessions() would return it now.
   */
  conversation: Conversation;
  /** The mailbox was pulled until empty after a (re)connect or a push. */
  synced: { cursor: Dec64 };
  roomJoined: RoomJoined;
  roomEvents: RoomEvents;
  roomLeft: RoomLeft;
}

/** The session as AUTH_OK describes it. */
export interface Session {
  userId: Dec64;
  sessionEpoch: Dec64;
  serverTimeMs: number;
}

/** KICKED reasons after which the client must not reconnect on its own (§7.8). */
const terminalKicks = new Set<number>([KickReason.REPLACED, KickReason.LOGGED_OUT, KickReason.KICKED_BY_ADMIN, KickReason.BANNED]);

export class QimClient extends Emitter<ClientEvents> {
  readonly store: DeferredStore = new DeferredStore();
  private conn: Connection | undefined;
  private st: ClientState = "idle";
  private session: Session | undefined;
  private stopped = false;
  private restored = false;
  private readonly backoff = new Backoff(250, 30_000);
  private readonly sync: Sync;
  private readonly sends: Sends;
  private readonly rooms: Rooms;
  private readonly requests: Requests;

  constructor(private readonly opts: ClientOptions) {
    super();
    if (typeof opts.store !== "function") this.store.bind(opts.store ?? new MemoryStore());
    const online = () => (this.st === "online" ? this.conn : undefined);
    this.sync = new Sync(this.store, (evs) => this.applyMailbox(evs), () => this.emit("rebuild", {}), (err) => this.syncFailed(err));
    this.sends = new Sends(this.store, (u) => this.emit("send", u), online);
    this.rooms = new Rooms({
      joined: (j) => this.emit("roomJoined", j), events: (e) => this.emit("roomEvents", e), left: (l) => this.emit("roomLeft", l),
    }, online);
    this.requests = new Requests(() => this.current());
  }

  get state(): ClientState {
    return this.st;
  }

  /** The authenticated user, once connected. */
  get userId(): Dec64 | undefined {
    return this.session?.userId;
  }

  /**
   * connect starts the client and resolves with the first session, or rejects when the first
   * login is refused for good (UNAUTHORIZED, a terminal KICKED). Later drops reconnect on their own.
   */
  async connect(): Promise<Session> {
    if (this.st !== "idle") throw new Error(`connect: the client is ${this.st}`);
    return new Promise((resolve, reject) => {
      const off = this.on("state", ({ state, error }) => {
        if (state === "online") {
          off();
          resolve(this.session!);
        } else if (state === "ended") {
          off();
          reject(error ?? new Error("the client ended"));
        }
      });
      void this.run();
    });
  }

  /** close stops the client: the connection closes, pending sends stay stored for the next start. */
  close(): void {
    this.stopped = true;
    this.conn?.close();
    this.setState("ended");
  }

  /** logout sends LOGOUT (the server closes without answering) and stops the client. */
  logout(): void {
    this.conn?.send(Opcode.LOGOUT, toBinary(LogoutSchema, create(LogoutSchema)));
    this.close();
  }

  /** send sends body to a user (peer, Dec64) or a group (group, Hex128); "pending" is emitted before it returns. */
  send(to: SendTarget, body: Uint8Array | string, opts: { messageType?: number; customType?: string } = {}): SendHandle {
    const target = canonical(to);
    const bytes = typeof body === "string" ? new TextEncoder().encode(body) : body;
    const custom = opts.customType ?? "";
    if (new TextEncoder().encode(custom).length > Limits.customTypeMaxBytes) throw new RangeError(`customType above ${Limits.customTypeMaxBytes} bytes`);
    return this.sends.start(target, bytes, opts.messageType ?? MessageType.TEXT, custom);
  }

  /**
   * recall takes back one of the user's own messages for everyone, within the server's recall
   * window (2 minutes by default; later FORBIDDEN fails the send). to is the message's
   * conversation as send() takes it: its group, or the peer of the direct conversation (the
   * sender of a message from someone else). Like send, it is pending before it returns, stored
   * and retried until committed or failed ("send" events carry amend).
   */
  recall(to: SendTarget, msg: AmendableMessage): SendHandle {
    return this.amend(to, msg, AmendAction.RECALL, new Uint8Array(0));
  }

  /** edit replaces the body of one of the user's own messages for everyone (see recall). */
  edit(to: SendTarget, msg: AmendableMessage, body: Uint8Array | string): SendHandle {
    return this.amend(to, msg, AmendAction.EDIT, typeof body === "string" ? new TextEncoder().encode(body) : body);
  }

  /** deleteMessage removes a message for everyone: the user's own, or any in a group the user owns (see recall). */
  deleteMessage(to: SendTarget, msg: AmendableMessage): SendHandle {
    return this.amend(to, msg, AmendAction.DELETE, new Uint8Array(0));
  }

  private amend(to: SendTarget, msg: AmendableMessage, action: number, body: Uint8Array): SendHandle {
    const target = canonical(to);
    checkAmendable(target, msg, this.session?.userId);
    return this.sends.start(target, body, 0, "", { targetSeq: fromU64(toU64(msg.conversationSeq)), action });
  }

  /** settled is the outcome of a send this client tracks (including ones restored from the store). */
  settled(clientMessageId: Hex128): Promise<unknown> | undefined {
    return this.sends.waitFor(clientMessageId);
  }

  get api(): Requests {
    return this.requests;
  }

  /**
   * typing tells peer that this user is typing to them (true) or stopped. Best effort, never
   * stored: offline it is dropped. Repeat every few seconds while the user types (a true expires
   * on the peer after typing_expiry, 6 s).
   */
  typing(peer: Dec64, on: boolean): void {
    if (this.st !== "online") return;
    this.conn?.send(Opcode.TYPING, toBinary(TypingSchema, create(TypingSchema, { peerUserId: toU64(peer), typing: on })));
  }

  /**
   * typingInGroup tells the other members of a group (its id) that this user is typing there, like
   * typing(); the server drops it in a group of more than 100 members.
   */
  typingInGroup(groupId: Hex128, on: boolean): void {
    if (this.st !== "online") return;
    this.conn?.send(Opcode.TYPING, toBinary(TypingSchema, create(TypingSchema, { groupId: hexToBytes(groupId), typing: on })));
  }

  /** joinRoom joins a room (live only, or replaying from replayFrom) and keeps it joined across drops. */
  joinRoom(roomId: Hex128, replayFrom?: Dec64): Promise<RoomJoined> {
    return this.rooms.join(this.current(), roomId, replayFrom);
  }

  /**
   * sendRoom publishes body into a room (joined or not) and resolves with its room_seq once the
   * event is in the room's buffer. Room events are not durable and not tracked as pending: a
   * refusal or a lost connection rejects, and the caller decides whether to publish again.
   */
  async sendRoom(roomId: Hex128, body: Uint8Array | string, opts: { messageType?: number; customType?: string } = {}): Promise<{ roomSeq: Dec64 }> {
    const req = create(SendRequestSchema, {
      clientMessageId: randomId128(), target: { case: "roomId", value: hexToBytes(roomId) }, messageType: opts.messageType ?? MessageType.TEXT,
      customType: opts.customType ?? "", body: typeof body === "string" ? new TextEncoder().encode(body) : body, clientTimeMs: BigInt(Date.now()),
    });
    const ack = await this.current().call(Opcode.SEND, SendRequestSchema, req, Opcode.SEND_ACK, SendAckSchema);
    return { roomSeq: fromU64(ack.conversationSeq) };
  }

  leaveRoom(roomId: Hex128): Promise<void> {
    return this.rooms.leave(this.current(), roomId);
  }

  private current(): Connection {
    if (this.st !== "online" || !this.conn) throw new ConnectionClosedError(`the client is ${this.st}`);
    return this.conn;
  }

  private setState(state: ClientState, error?: Error): void {
    if (this.st === "ended") return;
    this.st = state;
    this.emit("state", error ? { state, error } : { state });
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      this.setState("connecting");
      let reason: Error;
      try {
        const conn = await this.dial();
        this.backoff.reset();
        this.setState("online");
        this.resume(conn);
        reason = await conn.closed;
      } catch (err) {
        reason = err as Error;
      }
      if (this.stopped) return;
      if (isTerminal(reason)) {
        this.setState("ended", reason);
        return;
      }
      this.setState("offline", reason);
      await new Promise((r) => setTimeout(r, this.backoff.next()));
    }
  }

  /** dial opens a socket and authenticates on it. */
  private async dial(): Promise<Connection> {
    const o = this.opts;
    const factory = o.webSocket ?? ((url: string) => new (globalThis as unknown as { WebSocket: new (u: string) => never }).WebSocket(url));
    const conn = await Connection.open(o.url, factory, (m) => this.push(conn, m), o.connectTimeoutMs ?? 10_000);
    this.conn = conn;
    const token = typeof o.token === "function" ? await o.token() : o.token;
    const auth = create(AuthRequestSchema, {
      token, deviceId: o.deviceId ?? "", clientVersion: o.clientVersion ?? "qim-web/0.1",
      tenantId: o.tenantId ? hexToBytes(o.tenantId) : new Uint8Array(0),
    });
    if (this.store.isBound) auth.lastMailboxCursor = create(MailboxCursorSchema, { mailboxSeq: toU64(await this.store.cursor()) });
    try {
      const ok = await conn.call(Opcode.AUTH, AuthRequestSchema, auth, Opcode.AUTH_OK, AuthOkSchema);
      const userId = fromU64(ok.userId);
      if (this.session && this.session.userId !== userId) {
        throw new SessionEndedError(0, `the token is user ${userId}'s, the store user ${this.session.userId}'s`);
      }
      this.session = { userId, sessionEpoch: fromU64(ok.sessionEpoch), serverTimeMs: Number(ok.serverTimeMs) };
      this.sync.reset();
      await this.bindStore(userId);
      conn.startHeartbeat(ok.heartbeatIntervalMs || Limits.heartbeatStartMs, ok.heartbeatTimeoutMs || 150_000);
      return conn;
    } catch (err) {
      conn.close(err as Error);
      throw err;
    }
  }

  /** bindStore opens the user's store on the first login and restores its pending sends. */
  private async bindStore(userId: Dec64): Promise<void> {
    if (this.restored) return;
    if (typeof this.opts.store === "function") this.store.bind(await this.opts.store(userId));
    await this.sends.restore();
    this.restored = true;
  }

  /** resume runs after each AUTH_OK: drain the mailbox (settling sends by their copies), then resend and rejoin. */
  private resume(conn: Connection): void {
    void this.sync.pull(conn).then(() => {
      if (conn.isClosed) return;
      this.sends.resendAll();
      this.rooms.rejoinAll(conn);
      void this.store.cursor().then((cursor) => this.emit("synced", { cursor }));
    });
  }

  private push(conn: Connection, m: Message): void {
    switch (m.opcode) {
      case Opcode.PUSH_EVENTS: {
        if (this.sync.live) {
          const evs = this.sync.fresh(fromBinary(PushEventsSchema, m.payload).events);
          if (evs.length) this.applyMailbox(evs);
        }
        void this.sync.pull(conn).then(() => this.store.cursor()).then((cursor) => this.emit("synced", { cursor }));
        return;
      }
      case Opcode.KICKED: {
        const k = fromBinary(KickedSchema, m.payload);
        this.emit("kicked", { reason: k.reason, detail: k.detail });
        conn.close(new SessionEndedError(k.reason, `kicked: ${k.detail || k.reason}`));
        return;
      }
      case Opcode.ROOM_EVENTS:
      case Opcode.ROOM_LEFT:
        this.rooms.push(m);
        return;
      case Opcode.SESSION_DELTA:
        for (const e of fromBinary(SessionDeltaSchema, m.payload).sessions) this.emit("conversation", fromSession(e));
        return;
      case Opcode.TYPING_EVENT: {
        const t = fromBinary(TypingEventSchema, m.payload);
        this.emit("typing", { conversationId: bytesToHex(t.conversationId), userId: fromU64(t.userId), typing: t.typing, expiresInMs: t.expiresInMs });
        return;
      }
      case Opcode.READ_RECEIPT: {
        const r = fromBinary(ReadReceiptSchema, m.payload);
        this.emit("receipt", { conversationId: bytesToHex(r.conversationId), readerUserId: fromU64(r.readerUserId), readSeq: fromU64(r.readConversationSeq) });
        return;
      }
      case Opcode.REACTION_EVENT: {
        const r = fromBinary(ReactionEventSchema, m.payload);
        this.emit("reaction", { conversationId: bytesToHex(r.conversationId), conversationSeq: fromU64(r.targetSeq), userId: fromU64(r.userId),
          key: r.key, removed: r.removed, reactions: fromReactions(r.reactions) });
        return;
      }
      // READ_SYNC is reserved (never sent by this server version); an unsolicited ERROR precedes
      // a close. Nothing else answers no request.
    }
  }

  private applyMailbox(evs: MailboxEvent[]): void {
    for (const e of evs) {
      const msg = fromMailbox(e);
      if (msg.clientMessageId && msg.senderUserId === this.session?.userId) {
        this.sends.settleFromMailbox({ clientMessageId: msg.clientMessageId, messageId: msg.messageId,
          conversationId: msg.conversationId, conversationSeq: msg.conversationSeq, committedAtMs: msg.sentAtMs });
      }
      this.emit("message", msg);
      const a = amendmentOf(msg);
      if (a) this.emit("amended", a);
    }
  }

  private syncFailed(err: unknown): void {
    // A failed pull on a live connection (UNAVAILABLE, INTERNAL) is retried by the next push or
    // reconnect; closing makes the reconnect happen now instead of waiting for a push.
    if (err instanceof QimError && err.retryable) this.conn?.close(new ConnectionClosedError(`mailbox pull failed: ${err.message}`));
  }
}

/** canonical checks a send target and spells its ids as the SDK does (Dec64, lowercase Hex128). */
function canonical(to: SendTarget): PendingSend["target"] {
  const target: PendingSend["target"] = "peer" in to ? { peer: fromU64(toU64(to.peer)) } : { group: to.group.toLowerCase() };
  if ("group" in target) hexToBytes(target.group);
  return target;
}

function isTerminal(err: Error): boolean {
  if (err instanceof SessionEndedError) return err.reason === 0 || terminalKicks.has(err.reason);
  return err instanceof QimError && err.code === ErrorCode.UNAUTHORIZED;
}
