// The SDK's public values: plain objects whose ids are strings (Hex128, Dec64), never JS numbers
// or protobuf messages, converted once at the edge (from the generated qim.v1 types).

import type { Hex128, Dec64 } from "./ids.js";
import { bytesToHex, fromU64 } from "./ids.js";
import type { MailboxEvent } from "./gen/qim/v1/mailbox_pb.js";
import type { HistoryMessage } from "./gen/qim/v1/history_pb.js";
import type { SessionEntry } from "./gen/qim/v1/session_pb.js";
import type { SendAck } from "./gen/qim/v1/send_pb.js";
import type { RoomEvent as RoomEventPb } from "./gen/qim/v1/room_pb.js";

/** ChatMessage is one committed message of a DIRECT or GROUP conversation. */
export interface ChatMessage {
  messageId: Hex128;
  conversationId: Hex128;
  conversationSeq: Dec64;
  senderUserId: Dec64;
  messageType: number;
  customType: string;
  /**
   * undefined: not inlined in the mailbox (fetch it with history), or recalled or deleted (see
   * flags); otherwise the exact bytes (the newest edit's once EDITED).
   */
  body: Uint8Array | undefined;
  sentAtMs: number;
  /** Set on the sender's own copy: settles a send whose ack was lost. */
  clientMessageId: Hex128;
  /**
   * MessageFlag bits (1 RECALLED, 2 DELETED, 4 EDITED; unknown bits ignored): history pages and
   * session heads serve them, a mailbox copy is 0 until amendMessage applies an amendment.
   */
  flags: number;
  /**
   * The conversation seq of the EDIT whose body this is, once amendMessage applied one (a later
   * EDIT replaces the body, an earlier one arriving late does not); undefined otherwise.
   */
  editSeq?: Dec64;
  /** The message's reactions (history pages only; ADR-0038), by first use; mine for this user. */
  reactions?: Reaction[];
}

/** One reaction of a message: count users reacted with key. */
export interface Reaction {
  key: string;
  count: number;
  /** This user is one of them (never set on a reaction event, which all recipients share). */
  mine: boolean;
}

export function fromReactions(rs: { key: string; count: number; mine: boolean }[]): Reaction[] {
  return rs.map((r) => ({ key: r.key, count: r.count, mine: r.mine }));
}

/** Ack is a committed send: its message id and place in the conversation. */
export interface Ack {
  clientMessageId: Hex128;
  messageId: Hex128;
  conversationId: Hex128;
  conversationSeq: Dec64;
  committedAtMs: number;
}

/** Conversation is one row of the session list, with absolute values (never deltas). */
export interface Conversation {
  conversationId: Hex128;
  kind: number;
  /** DIRECT: the other participant. */
  peerUserId: Dec64 | undefined;
  /** GROUP: the group id to SEND to and to leave. */
  groupId: Hex128 | undefined;
  latestSeq: Dec64;
  readSeq: Dec64;
  /** DIRECT: the peer's read watermark here (a read receipt); "0" when the peer read nothing. */
  peerReadSeq: Dec64;
  unread: number;
  /** false when unread is saturated (above the exact window). */
  unreadExact: boolean;
  head: ChatMessage | undefined;
}

/** RoomEvent is one broadcast event of a room. */
export interface RoomEvent {
  roomSeq: Dec64;
  senderUserId: Dec64;
  messageType: number;
  customType: string;
  body: Uint8Array;
  sentAtMs: number;
}

export function fromMailbox(e: MailboxEvent): ChatMessage {
  return {
    messageId: bytesToHex(e.messageId), conversationId: bytesToHex(e.conversationId),
    conversationSeq: fromU64(e.conversationSeq), senderUserId: fromU64(e.senderUserId), messageType: e.messageType,
    customType: e.customType, body: e.body, sentAtMs: Number(e.sentAtMs), clientMessageId: bytesToHex(e.clientMessageId), flags: 0,
  };
}

export function fromHistory(h: HistoryMessage): ChatMessage {
  return {
    messageId: bytesToHex(h.messageId), conversationId: bytesToHex(h.conversationId),
    conversationSeq: fromU64(h.conversationSeq), senderUserId: fromU64(h.senderUserId), messageType: h.messageType,
    customType: h.customType, body: h.body, sentAtMs: Number(h.sentAtMs), clientMessageId: bytesToHex(h.clientMessageId), flags: h.flags,
    ...(h.reactions.length ? { reactions: fromReactions(h.reactions) } : {}),
  };
}

export function fromAck(a: SendAck): Ack {
  return {
    clientMessageId: bytesToHex(a.clientMessageId), messageId: bytesToHex(a.messageId),
    conversationId: bytesToHex(a.conversationId), conversationSeq: fromU64(a.conversationSeq), committedAtMs: Number(a.committedAtMs),
  };
}

export function fromSession(s: SessionEntry): Conversation {
  return {
    conversationId: bytesToHex(s.conversationId), kind: s.conversationKind,
    peerUserId: s.peer.case === "peerUserId" ? fromU64(s.peer.value) : undefined,
    groupId: s.peer.case === "groupId" ? bytesToHex(s.peer.value) : undefined,
    latestSeq: fromU64(s.latestConversationSeq), readSeq: fromU64(s.readConversationSeq), peerReadSeq: fromU64(s.peerReadConversationSeq),
    unread: s.unreadCount, unreadExact: s.unreadExact, head: s.head ? fromHistory(s.head) : undefined,
  };
}

export function fromRoomEvent(e: RoomEventPb): RoomEvent {
  return {
    roomSeq: fromU64(e.roomSeq), senderUserId: fromU64(e.senderUserId), messageType: e.messageType,
    customType: e.customType, body: e.body, sentAtMs: Number(e.sentAtMs),
  };
}
