// Mailbox sync (docs/protocol.md §7.2, §7.5): pull from the stored cursor until has_more is
// false, apply the entries, and only then store next_cursor. Pushes only trigger a pull; a burst
// of them coalesces into one pull in flight plus at most one more.
//
// Invariants: the cursor is only ever the server's next_cursor, stored after every entry it
// covers was handed to apply; one pull is in flight per client; a message id is handed to the
// application once per client life (a bounded window of recent ids: entries below the cursor are
// never pulled again, so the window only has to cover pushes overtaking pulls).

import { create } from "@bufbuild/protobuf";
import type { Connection } from "./connection.js";
import { Opcode } from "./gen/contract.js";
import { MailboxBatchSchema, PullMailboxSchema, type MailboxEvent } from "./gen/qim/v1/mailbox_pb.js";
import { MailboxCursorSchema } from "./gen/qim/v1/common_pb.js";
import { fromU64, toU64 } from "./ids.js";
import type { ClientStore } from "./store.js";

/** How many recent message ids the dedup window remembers. */
const SEEN_WINDOW = 10_000;

export class Sync {
  private running = false;
  private again = false;
  /** The connection's first pull drained the mailbox (reset at every AUTH_OK). */
  private drained = false;
  private readonly seen = new Map<string, true>();

  constructor(
    private readonly store: ClientStore,
    /** apply gets the entries of one batch not seen before, in mailbox order. */
    private readonly apply: (events: MailboxEvent[]) => void,
    private readonly onExpired: () => void,
    private readonly onError: (err: unknown) => void,
  ) {}

  /** reset marks a new connection: its pushes wait for its first drain (see live). */
  reset(): void {
    this.drained = false;
  }

  /**
   * live: a pushed event may be handed out at once, because nothing older can still be on its way
   * — the connection's first pull drained the mailbox and no pull is running. Otherwise a push
   * could overtake the offline messages the pull is fetching (a message materialized just after
   * the login is pushed while the older ones are still being pulled); the pull the push schedules
   * fetches it in mailbox order instead.
   */
  get live(): boolean {
    return this.drained && !this.running;
  }

  /** fresh filters events already handed out (a push, then the pull that covers it). */
  fresh(events: MailboxEvent[]): MailboxEvent[] {
    const out: MailboxEvent[] = [];
    for (const e of events) {
      const key = Array.from(e.messageId, (b) => b.toString(16).padStart(2, "0")).join("");
      if (this.seen.has(key)) continue;
      this.seen.set(key, true);
      if (this.seen.size > SEEN_WINDOW) this.seen.delete(this.seen.keys().next().value!);
      out.push(e);
    }
    return out;
  }

  /** pull runs (or schedules) a pull-until-empty on conn; resolves when the mailbox drained. */
  async pull(conn: Connection): Promise<void> {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    try {
      do {
        this.again = false;
        await this.drain(conn);
      } while (this.again && !conn.isClosed);
      this.drained = !conn.isClosed;
    } catch (err) {
      this.onError(err);
    } finally {
      this.running = false;
    }
  }

  private async drain(conn: Connection): Promise<void> {
    for (;;) {
      const cursor = toU64(await this.store.cursor());
      const batch = await conn.call(Opcode.PULL_MAILBOX, PullMailboxSchema,
        create(PullMailboxSchema, { cursor: create(MailboxCursorSchema, { mailboxSeq: cursor }) }), Opcode.MAILBOX_BATCH, MailboxBatchSchema);
      const events = this.fresh(batch.entries);
      if (events.length) this.apply(events);
      if (batch.cursorExpired) this.onExpired();
      const next = batch.nextCursor?.mailboxSeq ?? cursor;
      if (next !== cursor) await this.store.setCursor(fromU64(next));
      if (!batch.hasMore) return;
    }
  }
}
