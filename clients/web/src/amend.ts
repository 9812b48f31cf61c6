// Recall, edit and delete (docs/protocol.md §7.12a, ADR-0037). An amendment is sent as a SEND
// with SendRequest.amend through the ordinary pending sends (sends.ts), and comes back to every
// device as a CONTROL message (custom_type "qim.amend.v1", body qim.v1.MessageAmendment).
// The SDK keeps no messages, so it only decodes that CONTROL message into an Amendment (the
// client's "amended" event) and offers the merge the server's readers and the Go SDK's store
// use, for the application's own copies: flags OR-ed, the body of the EDIT with the highest
// seq, no body once recalled or deleted (whatever is edited later).

import { fromBinary } from "@bufbuild/protobuf";
import { ConversationKind, MessageType } from "./gen/contract.js";
import { MessageAmendmentSchema } from "./gen/qim/v1/history_pb.js";
import { bytesToHex, conversationKind, fromU64, toU64, type Dec64, type Hex128 } from "./ids.js";
import type { ChatMessage } from "./types.js";

/** Raw actions of qim.v1.Amend / MessageAmendment. */
export const AmendAction = { RECALL: 1, EDIT: 2, DELETE: 3 } as const;

/** Bits of ChatMessage.flags (HistoryMessage.flags); unknown bits must be ignored. */
export const MessageFlag = { RECALLED: 1, DELETED: 2, EDITED: 4 } as const;

/** The custom_type of amendment CONTROL messages (contract.AmendCustomType; not in gen/contract.ts). */
export const amendCustomType = "qim.amend.v1";

/** Amendment is one decoded amendment CONTROL message: what it does to its target. */
export interface Amendment {
  conversationId: Hex128;
  /** The CONTROL message's own id and seq (a later EDIT has a higher seq). */
  messageId: Hex128;
  conversationSeq: Dec64;
  /** The amended message. */
  targetSeq: Dec64;
  targetMessageId: Hex128;
  /** AmendAction (raw: an unknown action has flags 0 and changes nothing). */
  action: number;
  actorUserId: Dec64;
  /** The MessageFlag the action sets. */
  flags: number;
  /** EDIT: the new body (possibly empty); undefined otherwise. */
  body?: Uint8Array;
}

/** flagOf is the MessageFlag an action sets (0 for an unknown action). */
export function flagOf(action: number): number {
  switch (action) {
    case AmendAction.RECALL:
      return MessageFlag.RECALLED;
    case AmendAction.EDIT:
      return MessageFlag.EDITED;
    case AmendAction.DELETE:
      return MessageFlag.DELETED;
  }
  return 0;
}

/** isGone: recalled or deleted, so the message shows no body and never counts as unread. */
export function isGone(flags: number): boolean {
  return (flags & (MessageFlag.RECALLED | MessageFlag.DELETED)) !== 0;
}

/**
 * amendmentOf decodes m when it is an amendment CONTROL message, else undefined. Like the Go
 * SDK it skips one whose body the mailbox left out (a large group: history serves the target
 * amended all the same) and, rather than failing the sync, one that does not decode or names no
 * earlier message.
 */
export function amendmentOf(m: ChatMessage): Amendment | undefined {
  if (m.messageType !== MessageType.CONTROL || m.customType !== amendCustomType || !m.body) return undefined;
  try {
    const a = fromBinary(MessageAmendmentSchema, m.body);
    if (a.targetSeq === 0n || a.targetSeq >= toU64(m.conversationSeq)) return undefined;
    const out: Amendment = {
      conversationId: m.conversationId, messageId: m.messageId, conversationSeq: m.conversationSeq,
      targetSeq: fromU64(a.targetSeq), targetMessageId: bytesToHex(a.targetMessageId), action: a.action,
      actorUserId: fromU64(a.actorUserId), flags: flagOf(a.action),
    };
    if (a.action === AmendAction.EDIT) out.body = a.body ?? new Uint8Array(0);
    return out;
  } catch {
    return undefined;
  }
}

/**
 * amendMessage is m with a merged in (a new object), or m itself when a targets another message.
 * Idempotent and order-free like the server's index: applying the same amendments in any order
 * gives the same message, except that an EDITED body served by history carries no edit seq, so
 * an older EDIT delivered after it replaces it until the newer one arrives.
 */
export function amendMessage<T extends ChatMessage>(m: T, a: Amendment): T {
  if (m.conversationId !== a.conversationId || m.conversationSeq !== a.targetSeq) return m;
  const out: T = { ...m, flags: m.flags | a.flags };
  if (a.flags & MessageFlag.EDITED && (m.editSeq === undefined || toU64(a.conversationSeq) > toU64(m.editSeq))) {
    out.body = a.body ?? new Uint8Array(0);
    out.editSeq = a.conversationSeq;
  }
  if (isGone(out.flags)) out.body = undefined;
  return out;
}

/** applyAmendment is messages with a applied to its target (a new array; the others unchanged). */
export function applyAmendment<T extends ChatMessage>(messages: readonly T[], a: Amendment): T[] {
  return messages.map((m) => amendMessage(m, a));
}

/** The conversation target of a SEND, as QimClient.send takes it. */
export type SendTarget = { peer: Dec64 } | { group: Hex128 };

/** The fields of a message an amendment needs: a ChatMessage will do. */
export type AmendableMessage = Pick<ChatMessage, "conversationId" | "conversationSeq" | "senderUserId" | "messageType">;

/**
 * checkAmendable throws a RangeError when msg cannot be amended through to: an uncommitted or
 * CONTROL message, a room, a target of the wrong kind for the message's conversation, or, for
 * a direct message from someone other than me, a peer other than its sender (the server would
 * refuse it, or amend the message at that seq of another conversation).
 */
export function checkAmendable(to: SendTarget, msg: AmendableMessage, me?: Dec64): void {
  if (toU64(msg.conversationSeq) === 0n) throw new RangeError("amend a committed message (conversationSeq set)");
  if (msg.messageType === MessageType.CONTROL) throw new RangeError("a CONTROL message cannot be amended");
  const kind = conversationKind(msg.conversationId);
  if (kind === ConversationKind.GROUP && "group" in to) return;
  if (kind === ConversationKind.DIRECT && "peer" in to) {
    if (me !== undefined && msg.senderUserId !== me && msg.senderUserId !== to.peer) {
      throw new RangeError(`a direct message from ${msg.senderUserId} is amended through its sender, not ${to.peer}`);
    }
    return;
  }
  throw new RangeError(`a message of conversation ${msg.conversationId} is amended through ${kind === ConversationKind.GROUP ? "its group" : kind === ConversationKind.DIRECT ? "its peer" : "no target (rooms keep no history)"}`);
}
