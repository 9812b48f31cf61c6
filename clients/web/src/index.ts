// @qim/client: the Q-IM client SDK for browsers and Node (docs/web-sdk.md).
export { QimClient, type ClientOptions, type ClientEvents, type ClientState, type Session } from "./client.js";
export { Direction, PushPlatform, type HistoryPage, type Group, type GroupReceipts, type Member, Requests } from "./requests.js";
export { MemoryStore, IndexedDBStore, DeferredStore, type ClientStore, type PendingSend, type PendingAmend } from "./store.js";
export {
  AmendAction, MessageFlag, amendCustomType, amendmentOf, amendMessage, applyAmendment, flagOf, isGone,
  type Amendment, type AmendableMessage, type SendTarget,
} from "./amend.js";
export { QimError, ProtocolError, ConnectionClosedError, SessionEndedError } from "./errors.js";
export type { SendHandle, SendUpdate, SendState } from "./sends.js";
export type { RoomJoined, RoomEvents, RoomLeft } from "./rooms.js";
export type { ChatMessage, Ack, Conversation, Reaction, RoomEvent } from "./types.js";
export { hexToBytes, bytesToHex, toU64, fromU64, conversationKind, type Hex128, type Dec64 } from "./ids.js";
export { ErrorCode, KickReason, RoomLeftReason, MessageType, ConversationKind, Opcode } from "./gen/contract.js";
export { encodeFrame, FrameReader, type Message } from "./frame.js";
export { crc32c } from "./crc32c.js";
export type { WebSocketLike, WebSocketFactory } from "./connection.js";
