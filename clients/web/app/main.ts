// The Q-IM browser chat app: a thin view over @qim/client (docs/web-sdk.md). No framework: the
// model is the SDK's events and answers, rendered into the static markup of index.html.
//
// Rows of a conversation are keyed by client_message_id for the user's own sends and by
// message_id otherwise: a send's row is created at "pending" (emitted inside send), becomes
// committed or failed once, and the user's own copy arriving from the mailbox merges into it
// instead of adding a second row (the seed's GUI bug: a committed event before the send call
// returned).
//
// Recall, edit and delete (docs/protocol.md §7.12a): history pages arrive already amended (flags);
// an "amended" event updates the row it targets through the SDK's merge (amendMessage), and the
// user's own committed rows offer Edit, Recall and Delete. The amendment's own "send" events
// add no row.

import {
  IndexedDBStore, KickReason, QimClient, conversationKind, ConversationKind, MessageFlag, MessageType, amendMessage, isGone,
  type Amendment, type ChatMessage, type Conversation, type SendHandle, type SendUpdate, type RoomEvent,
} from "../src/index.js";

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const dec = new TextDecoder();
const enc = new TextEncoder();

/** flags: MessageFlag bits; editSeq: the seq of the edit whose text this is (amendMessage's). */
interface Row { key: string; cmid: string; messageId: string; seq: string; sender: string; text: string; state: string; sentAtMs: number; flags: number; editSeq?: string }
interface View { kind: "conv" | "room"; id: string; title: string; peer?: string; group?: string; rows: Row[]; oldest?: string; hasOlder: boolean }

let client: QimClient | undefined;
let convs: Conversation[] = [];
let view: View | undefined;
const kickText: Record<number, string> = {
  [KickReason.REPLACED]: "This device signed in somewhere else.",
  [KickReason.LOGGED_OUT]: "Your sign-in was revoked.",
  [KickReason.KICKED_BY_ADMIN]: "An administrator ended this session.",
  [KickReason.CREDENTIAL_EXPIRED]: "Your sign-in expired.",
};

function init(): void {
  const params = new URLSearchParams(location.search);
  $<HTMLInputElement>("gateway").value = params.get("gw") ?? `${location.protocol === "https:" ? "wss" : "ws"}://${location.hostname}:7080/ws`;
  $("login").addEventListener("submit", (e) => { e.preventDefault(); void signIn(); });
  $("relogin").addEventListener("click", () => { $("kicked").hidden = true; $("main").hidden = true; $("login").hidden = false; });
  $("new-chat").addEventListener("submit", (e) => { e.preventDefault(); openDirect($<HTMLInputElement>("peer").value.trim()); });
  $("new-group").addEventListener("submit", (e) => { e.preventDefault(); void createGroup(); });
  $("join-room").addEventListener("submit", (e) => { e.preventDefault(); void joinRoom($<HTMLInputElement>("room-id").value.trim().toLowerCase()); });
  $("compose").addEventListener("submit", (e) => { e.preventDefault(); void sendText(); });
  $("older").addEventListener("click", () => void loadOlder());
  $("back").addEventListener("click", () => { $("main").classList.remove("open"); $("back").hidden = true; });
}

async function signIn(): Promise<void> {
  const token = $<HTMLTextAreaElement>("token").value.trim();
  const url = $<HTMLInputElement>("gateway").value.trim();
  $("login-error").hidden = true;
  client?.close();
  // One database per account, opened once the first AUTH_OK names the user.
  const c = new QimClient({ url, token, store: (user) => IndexedDBStore.open(`qim-${user}`), clientVersion: "qim-web-app/0.1" });
  client = c;
  wire(c);
  try {
    const session = await c.connect();
    $("who").textContent = `user ${session.userId}`;
    $("login").hidden = true;
    $("main").hidden = false;
    await refreshConvs();
  } catch (err) {
    c.close();
    $("login-error").textContent = `Sign-in failed: ${(err as Error).message}`;
    $("login-error").hidden = false;
  }
}

function wire(c: QimClient): void {
  c.on("state", ({ state }) => { $("status").textContent = state === "online" ? "" : `(${state})`; });
  c.on("message", (m) => onMessage(m));
  c.on("send", (u) => onSend(u));
  c.on("amended", (a) => onAmended(a));
  c.on("synced", () => void refreshConvs());
  c.on("conversation", () => void refreshConvs()); // read on another device
  c.on("kicked", (k) => {
    $("kicked-text").textContent = kickText[k.reason] ?? `Signed out (reason ${k.reason}).`;
    $("kicked").hidden = false;
    $("compose").hidden = true;
  });
  c.on("roomEvents", (e) => {
    if (view?.kind !== "room" || view.id !== e.roomId) return;
    if (e.gap) banner(`Messages ${e.gap.from}–${e.gap.to} of this room were missed.`);
    for (const ev of e.events) addRow(roomRow(ev));
    renderMsgs();
  });
  c.on("roomJoined", (j) => {
    if (view?.kind === "room" && view.id === j.roomId && j.replayTruncated) banner("Earlier messages of this room are no longer available.");
  });
  c.on("roomLeft", (l) => { if (view?.kind === "room" && view.id === l.roomId && !l.rejoining) banner("You left this room."); });
}

async function refreshConvs(): Promise<void> {
  if (!client || client.state !== "online") return;
  convs = await client.api.sessions();
  const ul = $("convs");
  ul.replaceChildren(...convs.map((c) => {
    const li = document.createElement("li");
    const b = document.createElement("button");
    const title = titleOf(c);
    b.dataset.conv = c.conversationId;
    b.setAttribute("aria-current", String(view?.id === c.conversationId));
    const t = document.createElement("span");
    t.className = "title";
    t.textContent = title;
    const small = document.createElement("small");
    small.textContent = c.head ? (isGone(c.head.flags) ? goneText(c.head.flags) : c.head.body ? dec.decode(c.head.body) : "") : "";
    t.append(small);
    b.append(t);
    if (c.unread > 0) {
      const badge = document.createElement("span");
      badge.className = "badge";
      badge.textContent = c.unreadExact ? String(c.unread) : `${c.unread}+`;
      badge.setAttribute("aria-label", `${badge.textContent} unread`);
      b.append(badge);
    }
    b.addEventListener("click", () => void openConv(c));
    li.append(b);
    return li;
  }));
}

function titleOf(c: Conversation): string {
  return c.kind === ConversationKind.GROUP ? `Group ${c.groupId!.slice(0, 8)}` : `User ${c.peerUserId}`;
}

function showView(v: View): void {
  view = v;
  $("view-title").textContent = v.title;
  $("compose").hidden = false;
  $("room-banner").hidden = true;
  $("main").classList.add("open");
  $("back").hidden = false;
  renderMsgs();
  $<HTMLInputElement>("text").focus();
}

async function openConv(c: Conversation): Promise<void> {
  const v: View = { kind: "conv", id: c.conversationId, title: titleOf(c), peer: c.peerUserId, group: c.groupId, rows: [], hasOlder: false };
  showView(v);
  const page = await client!.api.history(c.conversationId, { limit: 30 });
  for (const m of page.records) addRow(msgRow(m));
  v.oldest = page.records[0]?.conversationSeq;
  v.hasOlder = page.hasMore;
  renderMsgs();
  await markRead();
}

function openDirect(peer: string): void {
  const known = convs.find((c) => c.peerUserId === peer);
  if (known) void openConv(known);
  else showView({ kind: "conv", id: `peer:${peer}`, title: `User ${peer}`, peer, rows: [], hasOlder: false });
}

async function loadOlder(): Promise<void> {
  const v = view;
  if (!v || v.kind !== "conv" || !v.oldest) return;
  const page = await client!.api.history(v.id, { anchor: v.oldest, limit: 30 });
  for (const m of page.records) addRow(msgRow(m));
  v.oldest = page.records[0]?.conversationSeq ?? v.oldest;
  v.hasOlder = page.hasMore;
  renderMsgs();
}

async function markRead(): Promise<void> {
  const v = view;
  const last = v?.rows.filter((r) => r.seq).at(-1);
  if (!v || v.kind !== "conv" || !last || v.id.startsWith("peer:")) return;
  await client!.api.markRead(v.id, last.seq);
  await refreshConvs();
}

async function createGroup(): Promise<void> {
  const members = $<HTMLInputElement>("group-members").value.split(",").map((s) => s.trim()).filter(Boolean);
  const g = await client!.api.createGroup($<HTMLInputElement>("group-name").value.trim() || "group", members);
  showView({ kind: "conv", id: g.conversationId, title: `Group ${g.groupId.slice(0, 8)}`, group: g.groupId, rows: [], hasOlder: false });
  await refreshConvs();
}

async function joinRoom(room: string): Promise<void> {
  // The view exists before the join, so the replay that follows ROOM_JOINED lands in it.
  showView({ kind: "room", id: room, title: `Room ${room.slice(0, 8)}`, rows: [], hasOlder: false });
  await client!.joinRoom(room, "1");
}

/** banner shows a notice above the messages: a room's lost events, a refused amendment. */
function banner(text: string): void {
  $("room-banner").textContent = text;
  $("room-banner").hidden = false;
}

async function sendText(): Promise<void> {
  const input = $<HTMLInputElement>("text");
  const text = input.value;
  const v = view;
  if (!text || !v || !client) return;
  input.value = "";
  if (v.kind === "room") {
    await client.sendRoom(v.id, text);
    return;
  }
  const h = client.send(v.group ? { group: v.group } : { peer: v.peer! }, text);
  const ack = await h.committed.catch(() => undefined);
  if (ack && v.id.startsWith("peer:")) {
    v.id = ack.conversationId; // a new chat learns its id from the ack
    renderMsgs(); // its rows can be amended now
  }
  await refreshConvs();
}

function onSend(u: SendUpdate): void {
  const v = view;
  if (!v || v.kind !== "conv" || u.amend) return; // an amendment shows through "amended"
  const to = "peer" in u.target ? v.peer === u.target.peer && !v.group : v.group === u.target.group;
  if (!to) return;
  const row = v.rows.find((r) => r.cmid === u.clientMessageId);
  if (row) {
    if (row.state === "pending") row.state = u.state;
    if (u.ack) Object.assign(row, { messageId: u.ack.messageId, seq: u.ack.conversationSeq });
  } else if (u.state === "pending") {
    addRow({ key: u.clientMessageId, cmid: u.clientMessageId, messageId: "", seq: "", sender: client!.userId!, text: dec.decode(u.body), state: "pending", sentAtMs: Date.now(), flags: 0 });
  }
  renderMsgs();
}

// The session list lags the mailbox (the SessionProjection derives it asynchronously, like the
// mailbox itself, docs/protocol.md §7.4): after a message arrives the list is read again until
// its row reaches the message's seq, or for a few seconds.
const awaited = new Map<string, bigint>();
let refreshing = false;

async function refreshUntilSeen(conv: string, seq: string): Promise<void> {
  awaited.set(conv, BigInt(seq) > (awaited.get(conv) ?? 0n) ? BigInt(seq) : awaited.get(conv)!);
  if (refreshing) return;
  refreshing = true;
  try {
    for (let i = 0; i < 40 && awaited.size > 0; i++) {
      await refreshConvs();
      for (const [id, want] of awaited) {
        const row = convs.find((c) => c.conversationId === id);
        if (row && BigInt(row.latestSeq) >= want) awaited.delete(id);
      }
      if (awaited.size) await new Promise((r) => setTimeout(r, 250));
    }
  } finally {
    awaited.clear();
    refreshing = false;
  }
}

function onMessage(m: ChatMessage): void {
  const v = view;
  if (m.messageType === 4) return; // CONTROL: membership changes, not shown as messages
  void refreshUntilSeen(m.conversationId, m.conversationSeq);
  if (v && v.kind === "conv" && (v.id === m.conversationId || (v.id === `peer:${m.senderUserId}` && conversationKind(m.conversationId) === ConversationKind.DIRECT))) {
    v.id = m.conversationId;
    addRow(msgRow(m));
    renderMsgs();
    // Read only what is on screen: at a phone width the list pane may be showing instead.
    if (document.visibilityState === "visible" && $("view").offsetParent !== null) void markRead();
  }
}

function msgRow(m: ChatMessage): Row {
  return { key: m.clientMessageId && m.senderUserId === client?.userId ? m.clientMessageId : m.messageId, cmid: m.clientMessageId,
    messageId: m.messageId, seq: m.conversationSeq, sender: m.senderUserId,
    text: m.body ? dec.decode(m.body) : isGone(m.flags) ? "" : "(not inlined)", state: "committed", sentAtMs: m.sentAtMs, flags: m.flags };
}

function roomRow(e: RoomEvent): Row {
  return { key: `r${e.roomSeq}`, cmid: "", messageId: "", seq: e.roomSeq, sender: e.senderUserId, text: dec.decode(e.body), state: "committed", sentAtMs: e.sentAtMs, flags: 0 };
}

function goneText(flags: number): string {
  return flags & MessageFlag.RECALLED ? "message recalled" : "message deleted";
}

/** asMessage is a row as the SDK's ChatMessage, for amendMessage (the app keeps rows, not messages). */
function asMessage(conv: string, r: Row): ChatMessage {
  return { messageId: r.messageId, conversationId: conv, conversationSeq: r.seq, senderUserId: r.sender, messageType: MessageType.TEXT,
    customType: "", body: enc.encode(r.text), sentAtMs: r.sentAtMs, clientMessageId: r.cmid, flags: r.flags, editSeq: r.editSeq };
}

/** onAmended applies a recall, edit or delete to its row, if on screen (history serves the rest amended). */
function onAmended(a: Amendment): void {
  const v = view;
  if (!v || v.kind !== "conv" || v.id !== a.conversationId) return;
  const row = v.rows.find((r) => r.seq === a.targetSeq);
  if (!row) return;
  const m = amendMessage(asMessage(v.id, row), a);
  Object.assign(row, { flags: m.flags, editSeq: m.editSeq, text: m.body ? dec.decode(m.body) : "" });
  renderMsgs();
}

/** amend runs one of the user's actions on their own row; a refusal (FORBIDDEN: the recall window passed) shows in the banner. */
function amend(r: Row, action: "edit" | "recall" | "delete"): void {
  const v = view;
  if (!v || v.kind !== "conv" || !client) return;
  const to = v.group ? { group: v.group } : { peer: v.peer! };
  const msg = { conversationId: v.id, conversationSeq: r.seq, senderUserId: r.sender, messageType: MessageType.TEXT };
  let h: SendHandle;
  try {
    if (action === "edit") {
      const text = prompt("Edit message", r.text);
      if (text === null || text === r.text) return;
      h = client.edit(to, msg, text);
    } else h = action === "recall" ? client.recall(to, msg) : client.deleteMessage(to, msg);
  } catch (err) {
    banner(`Cannot ${action}: ${(err as Error).message}`);
    return;
  }
  h.committed.catch((err: Error) => banner(`Could not ${action} the message: ${err.message}`));
}

/** addRow merges by key (own sends by client_message_id, others by message_id) and keeps seq order. */
function addRow(r: Row): void {
  const rows = view!.rows;
  const i = rows.findIndex((x) => x.key === r.key || (r.messageId && x.messageId === r.messageId));
  if (i >= 0) {
    const old = rows[i]!;
    // An own row keeps the text it was sent with, unless the server's copy is edited (a history page).
    const text = r.flags & MessageFlag.EDITED && old.editSeq === undefined ? r.text : old.text || r.text;
    rows[i] = { ...old, ...r, text, flags: old.flags | r.flags, editSeq: old.editSeq, state: old.state === "failed" ? "failed" : r.state };
  } else rows.push(r);
  rows.sort((a, b) => (a.seq && b.seq ? Number(BigInt(a.seq) - BigInt(b.seq)) : a.seq ? -1 : b.seq ? 1 : a.sentAtMs - b.sentAtMs));
}

function renderMsgs(): void {
  const v = view;
  if (!v) return;
  $("older-row").hidden = !v.hasOlder;
  $("msgs").replaceChildren(...v.rows.map((r) => {
    const li = document.createElement("li");
    li.dataset.state = r.state;
    li.dataset.key = r.key;
    const mine = r.sender === client?.userId;
    if (mine) li.className = "mine";
    const gone = isGone(r.flags);
    if (gone) li.dataset.amended = r.flags & MessageFlag.RECALLED ? "recalled" : "deleted";
    else if (r.flags & MessageFlag.EDITED) li.dataset.amended = "edited";
    li.textContent = gone ? goneText(r.flags) : r.text;
    const meta = document.createElement("span");
    meta.className = "meta";
    meta.textContent = `${mine ? "you" : `user ${r.sender}`} · ${r.state === "committed" ? new Date(r.sentAtMs).toLocaleTimeString() : r.state}${!gone && r.flags & MessageFlag.EDITED ? " (edited)" : ""}`;
    li.append(meta);
    if (mine && v.kind === "conv" && !gone && r.state === "committed" && r.seq && !v.id.startsWith("peer:")) {
      const actions = document.createElement("span");
      actions.className = "actions";
      for (const [action, label] of [["edit", "Edit"], ["recall", "Recall"], ["delete", "Delete"]] as const) {
        const b = document.createElement("button");
        b.className = "secondary";
        b.dataset.action = action;
        b.textContent = label;
        b.setAttribute("aria-label", `${label} this message`);
        b.addEventListener("click", () => amend(r, action));
        actions.append(b);
      }
      li.append(actions);
    }
    return li;
  }));
  const box = $("msgs");
  box.scrollTop = box.scrollHeight;
}

document.addEventListener("DOMContentLoaded", init);
