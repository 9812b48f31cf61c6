// Where a client keeps what must outlive a page load: the mailbox cursor (the server's
// next_cursor, stored only after the entries it covers were applied) and the pending sends
// (stored before their first attempt, so a reload retries them with the same
// client_message_id, which the server deduplicates). MemoryStore forgets on reload;
// IndexedDBStore (browsers) does not.

import type { Hex128, Dec64 } from "./ids.js";

/** PendingSend is a send not yet known committed or failed. */
export interface PendingSend {
  clientMessageId: Hex128;
  target: { peer: Dec64 } | { group: Hex128 };
  messageType: number;
  customType: string;
  body: Uint8Array;
  createdAtMs: number;
  /**
   * Set: the send amends the message at targetSeq of the target's conversation (action: 1
   * RECALL, 2 EDIT, 3 DELETE; body is an EDIT's new body, messageType 0 and customType "").
   * Optional, so records stored before amendments existed still read as ordinary sends.
   */
  amend?: PendingAmend;
}

/** PendingAmend is what a pending amendment sends as SendRequest.amend (a plain object, for IndexedDB). */
export interface PendingAmend {
  targetSeq: Dec64;
  action: number;
}

export interface ClientStore {
  /** The stored mailbox cursor (mailbox_seq as Dec64), or "0" on a fresh install. */
  cursor(): Promise<Dec64>;
  setCursor(seq: Dec64): Promise<void>;
  pending(): Promise<PendingSend[]>;
  putPending(p: PendingSend): Promise<void>;
  deletePending(clientMessageId: Hex128): Promise<void>;
}

/** MemoryStore keeps everything in memory: tests and clients that resync from zero on load. */
export class MemoryStore implements ClientStore {
  private cur: Dec64 = "0";
  private readonly sends = new Map<Hex128, PendingSend>();
  async cursor(): Promise<Dec64> {
    return this.cur;
  }
  async setCursor(seq: Dec64): Promise<void> {
    this.cur = seq;
  }
  async pending(): Promise<PendingSend[]> {
    return [...this.sends.values()];
  }
  async putPending(p: PendingSend): Promise<void> {
    this.sends.set(p.clientMessageId, p);
  }
  async deletePending(id: Hex128): Promise<void> {
    this.sends.delete(id);
  }
}

/**
 * IndexedDBStore keeps the cursor and pending sends in one IndexedDB database per (user,
 * device), so two accounts in one browser never share a cursor. Every write is awaited to its
 * transaction's completion: a cursor is durable before the next pull uses it.
 */
export class IndexedDBStore implements ClientStore {
  private constructor(private readonly db: IDBDatabase) {}

  static open(name: string, factory: IDBFactory = globalThis.indexedDB): Promise<IndexedDBStore> {
    return new Promise((resolve, reject) => {
      const req = factory.open(name, 1);
      req.onupgradeneeded = () => {
        req.result.createObjectStore("kv");
        req.result.createObjectStore("pending", { keyPath: "clientMessageId" });
      };
      req.onsuccess = () => resolve(new IndexedDBStore(req.result));
      req.onerror = () => reject(req.error ?? new Error(`indexedDB.open(${name}) failed`));
    });
  }

  close(): void {
    this.db.close();
  }

  async cursor(): Promise<Dec64> {
    const v = await this.read<string>("kv", (s) => s.get("cursor"));
    return v ?? "0";
  }
  setCursor(seq: Dec64): Promise<void> {
    return this.write("kv", (s) => s.put(seq, "cursor"));
  }
  async pending(): Promise<PendingSend[]> {
    return (await this.read<PendingSend[]>("pending", (s) => s.getAll())) ?? [];
  }
  putPending(p: PendingSend): Promise<void> {
    return this.write("pending", (s) => s.put(p));
  }
  deletePending(id: Hex128): Promise<void> {
    return this.write("pending", (s) => s.delete(id));
  }

  private read<T>(store: string, op: (s: IDBObjectStore) => IDBRequest): Promise<T | undefined> {
    return new Promise((resolve, reject) => {
      const req = op(this.db.transaction(store, "readonly").objectStore(store));
      req.onsuccess = () => resolve(req.result as T | undefined);
      req.onerror = () => reject(req.error);
    });
  }

  private write(store: string, op: (s: IDBObjectStore) => IDBRequest): Promise<void> {
    return new Promise((resolve, reject) => {
      const tx = this.db.transaction(store, "readwrite");
      op(tx.objectStore(store));
      tx.oncomplete = () => resolve();
      tx.onerror = () => reject(tx.error);
      tx.onabort = () => reject(tx.error ?? new Error("transaction aborted"));
    });
  }
}

/**
 * DeferredStore stands for a store that can only be opened once the user is known (one
 * IndexedDB database per account): QimClient binds it after the first AUTH_OK, and every call
 * made before waits for that.
 */
export class DeferredStore implements ClientStore {
  private bound: ClientStore | undefined;
  private settle!: (s: ClientStore) => void;
  private readonly ready = new Promise<ClientStore>((r) => (this.settle = r));

  get isBound(): boolean {
    return this.bound !== undefined;
  }
  bind(s: ClientStore): void {
    if (this.bound) return;
    this.bound = s;
    this.settle(s);
  }
  async cursor(): Promise<Dec64> {
    return (await this.ready).cursor();
  }
  async setCursor(seq: Dec64): Promise<void> {
    return (await this.ready).setCursor(seq);
  }
  async pending(): Promise<PendingSend[]> {
    return (await this.ready).pending();
  }
  async putPending(p: PendingSend): Promise<void> {
    return (await this.ready).putPending(p);
  }
  async deletePending(id: Hex128): Promise<void> {
    return (await this.ready).deletePending(id);
  }
}
