// The request/answer calls of a session: the session list (§7.3), read state and history
// (§7.6) and groups (§7.11). Each pages through the server's continuation until it is done (or,
// for history, returns one page with its anchor), and converts to the SDK's string-id types.

import { create } from "@bufbuild/protobuf";
import type { Connection } from "./connection.js";
import { Opcode } from "./gen/contract.js";
import { PushTokenAckSchema, RegisterPushTokenSchema } from "./gen/qim/v1/connection_pb.js";
import { CreateGroupSchema, GroupCreatedSchema, LeaveGroupAckSchema, LeaveGroupSchema, MembersBatchSchema, PullMembersSchema } from "./gen/qim/v1/group_pb.js";
import { HistoryBatchSchema, PullHistorySchema, ReactAckSchema, ReactSchema } from "./gen/qim/v1/history_pb.js";
import type { SendTarget } from "./amend.js";
import {
  MarkReadAckSchema, MarkReadSchema, PullReadReceiptsSchema, PullSessionListSchema, ReadReceiptsBatchSchema, ReadReceiptsSetSchema, SessionListBatchSchema,
  SetReadReceiptsSchema,
} from "./gen/qim/v1/session_pb.js";
import { bytesToHex, fromU64, hexToBytes, randomId128, toU64, type Dec64, type Hex128 } from "./ids.js";
import { fromHistory, fromReactions, fromSession, type ChatMessage, type Conversation, type Reaction } from "./types.js";

export const Direction = { OLDER: 1, NEWER: 2 } as const;

/** The push providers a device can register a token for (qim.v1 RegisterPushToken.platform). */
export const PushPlatform = { FCM: 1, APNS: 2, WEBHOOK: 3 } as const;

export interface HistoryPage {
  records: ChatMessage[];
  hasMore: boolean;
  /** The anchor for the next page in the same direction. */
  nextAnchor: Dec64;
}

export interface Group {
  groupId: Hex128;
  conversationId: Hex128;
  membershipVersion: Dec64;
}

export interface Member {
  userId: Dec64;
  joinedAtSeq: Dec64;
}

/** A group's read receipts: who read how far and, for a seq, how many of its audience read it. */
export interface GroupReceipts {
  /** Every current member but the caller, ascending by user id, with its read watermark ("0" and withheld when it withholds its receipts). */
  reads: { userId: Dec64; readSeq: Dec64; withheld: boolean }[];
  /** Of audience (the current members but the caller who can see seq), how many read it. */
  readCount: number;
  audience: number;
}

export class Requests {
  constructor(private readonly conn: () => Connection) {}

  /** sessions reads the whole session list: one row per conversation, absolute unread counts. */
  async sessions(): Promise<Conversation[]> {
    const out: Conversation[] = [];
    let token: Uint8Array = new Uint8Array(0);
    for (;;) {
      const b = await this.conn().call(Opcode.PULL_SESSION_LIST, PullSessionListSchema, create(PullSessionListSchema, { pageToken: token }),
        Opcode.SESSION_LIST_BATCH, SessionListBatchSchema);
      out.push(...b.sessions.map(fromSession));
      if (!b.hasMore) return out;
      token = b.nextPageToken;
    }
  }

  /** markRead raises the read watermark; the answer is the stored absolute value and unread. */
  async markRead(conversationId: Hex128, seq: Dec64): Promise<{ readSeq: Dec64; unread: number; unreadExact: boolean }> {
    const a = await this.conn().call(Opcode.MARK_READ, MarkReadSchema,
      create(MarkReadSchema, { conversationId: hexToBytes(conversationId), readConversationSeq: toU64(seq) }), Opcode.MARK_READ_ACK, MarkReadAckSchema);
    return { readSeq: fromU64(a.readConversationSeq), unread: a.unreadCount, unreadExact: a.unreadExact };
  }

  /**
   * readReceipts asks who of a group has read how far (PULL_READ_RECEIPTS): pulled when the user
   * opens "read by", never pushed for groups. A direct conversation is refused INVALID_ARGUMENT:
   * its row carries peerReadSeq and "receipt" events move it.
   */
  async readReceipts(conversationId: Hex128, seq: Dec64 = "0"): Promise<GroupReceipts> {
    const b = await this.conn().call(Opcode.PULL_READ_RECEIPTS, PullReadReceiptsSchema,
      create(PullReadReceiptsSchema, { conversationId: hexToBytes(conversationId), conversationSeq: toU64(seq) }),
      Opcode.READ_RECEIPTS_BATCH, ReadReceiptsBatchSchema);
    return {
      reads: b.reads.map((m) => ({ userId: fromU64(m.userId), readSeq: fromU64(m.readConversationSeq), withheld: m.withheld })),
      readCount: b.readCount, audience: b.audienceCount,
    };
  }

  /**
   * react adds (or with remove, removes) this user's reaction key (an emoji, at most 32 bytes) on
   * a message (ADR-0038): not a message, never unread, never pushed offline. Safe to repeat:
   * changed is false when it changed nothing. The participants' online devices get "reaction".
   */
  async react(to: SendTarget, conversationSeq: Dec64, key: string, remove = false): Promise<{ reactions: Reaction[]; changed: boolean }> {
    const target = "peer" in to ? { case: "peerUserId" as const, value: toU64(to.peer) } : { case: "groupId" as const, value: hexToBytes(to.group) };
    const a = await this.conn().call(Opcode.REACT, ReactSchema, create(ReactSchema, { target, targetSeq: toU64(conversationSeq), key, remove }),
      Opcode.REACT_ACK, ReactAckSchema);
    return { reactions: fromReactions(a.reactions), changed: a.changed };
  }

  /**
   * setReadReceipts withholds this user's read receipts (share false) or shares them again (the
   * default). Symmetric: while withheld, nobody sees this user's reads and it sees nobody's
   * (readReceipts is FORBIDDEN, peerReadSeq "0", no "receipt" events).
   */
  async setReadReceipts(share: boolean): Promise<{ share: boolean }> {
    const a = await this.conn().call(Opcode.SET_READ_RECEIPTS, SetReadReceiptsSchema, create(SetReadReceiptsSchema, { share }),
      Opcode.READ_RECEIPTS_SET, ReadReceiptsSetSchema);
    return { share: a.share };
  }

  /** history reads one page of a DIRECT or GROUP conversation; anchor is exclusive ("0": the newest). */
  async history(conversationId: Hex128, opts: { anchor?: Dec64; direction?: number; limit?: number } = {}): Promise<HistoryPage> {
    const b = await this.conn().call(Opcode.PULL_HISTORY, PullHistorySchema, create(PullHistorySchema, {
      conversationId: hexToBytes(conversationId), anchorSeq: toU64(opts.anchor ?? "0"), direction: opts.direction ?? Direction.OLDER,
      limit: opts.limit ?? 0,
    }), Opcode.HISTORY_BATCH, HistoryBatchSchema);
    return { records: b.records.map(fromHistory), hasMore: b.hasMore, nextAnchor: fromU64(b.nextAnchorSeq) };
  }

  /** createGroup creates a group with the caller and members (user ids); retried safely by its request id. */
  async createGroup(name: string, members: Dec64[], clientRequestId: Uint8Array = randomId128()): Promise<Group> {
    const g = await this.conn().call(Opcode.CREATE_GROUP, CreateGroupSchema,
      create(CreateGroupSchema, { clientRequestId, name, memberUserIds: members.map(toU64) }), Opcode.GROUP_CREATED, GroupCreatedSchema);
    return { groupId: bytesToHex(g.groupId), conversationId: bytesToHex(g.conversationId), membershipVersion: fromU64(g.membershipVersion) };
  }

  /** members reads the group's current members, every page. */
  async members(groupId: Hex128): Promise<Member[]> {
    const out: Member[] = [];
    let token: Uint8Array = new Uint8Array(0);
    for (;;) {
      const b = await this.conn().call(Opcode.PULL_MEMBERS, PullMembersSchema, create(PullMembersSchema, { groupId: hexToBytes(groupId), pageToken: token }),
        Opcode.MEMBERS_BATCH, MembersBatchSchema);
      out.push(...b.members.map((m) => ({ userId: fromU64(m.userId), joinedAtSeq: fromU64(m.joinedAtSeq) })));
      if (!b.hasMore) return out;
      token = b.nextPageToken;
    }
  }

  /**
   * registerPushToken asks the server to wake this device through its push provider while none of
   * the user's devices is online (platform: PushPlatform.FCM, APNS or WEBHOOK); an empty token
   * removes the registration, and so does logout. Notifications carry the conversation and
   * message id, never the body. Register at every start and whenever the token changes.
   */
  async registerPushToken(platform: number, token: string, appId = ""): Promise<{ registered: boolean }> {
    const a = await this.conn().call(Opcode.REGISTER_PUSH_TOKEN, RegisterPushTokenSchema,
      create(RegisterPushTokenSchema, { platform, token, appId }), Opcode.PUSH_TOKEN_ACK, PushTokenAckSchema);
    return { registered: a.registered };
  }

  /** leaveGroup leaves; the answer carries the conversation_seq of the LEAVE message. */
  async leaveGroup(groupId: Hex128): Promise<{ leftAtSeq: Dec64 }> {
    const a = await this.conn().call(Opcode.LEAVE_GROUP, LeaveGroupSchema, create(LeaveGroupSchema, { groupId: hexToBytes(groupId) }),
      Opcode.LEAVE_GROUP_ACK, LeaveGroupAckSchema);
    return { leftAtSeq: fromU64(a.leftAtSeq) };
  }
}
