// The browser-SDK share of the loadgen's SDK lane (loadgen/weblane starts this under node): paired
// @qim/client clients send to each other on an open-model schedule, and the lane verifies per
// pair what the SDK surfaced, like loadgen/sdklane does for the Go SDK (ADR-0011: the load
// generator drives the real SDK, never a copy of its logic).
//
// Protocol with the Go side: the configuration arrives as one JSON object on stdin; the lane
// prints one JSON line {"event":"ready"} once every client is online, then, after the window and
// the settle, one JSON line {"event":"report",...} and exits 0 (1 when it could not run).
//
// Verification: every ordinal the SDK reported committed must be received by the peer exactly
// once after the SDK's dedup; a body of another run is counted as stray, never as received.

import { MemoryStore, QimClient, type ChatMessage } from "../src/index.js";

interface LaneConfig {
  url: string;
  runId: string;
  rate: number; // msg/s over all clients
  durationMs: number;
  settleMs: number;
  connectTimeoutMs: number;
  clients: { user: string; token: string }[];
}

interface Tally {
  sent: number;
  acked: Set<number>;
  failed: number;
  received: Map<number, number>; // ordinal of the peer → times surfaced
  stray: number;
}

function out(obj: Record<string, unknown>): void {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

async function readConfig(): Promise<LaneConfig> {
  let raw = "";
  for await (const chunk of process.stdin) raw += chunk;
  return JSON.parse(raw) as LaneConfig;
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms))]);
}

async function main(): Promise<void> {
  const cfg = await readConfig();
  if (cfg.clients.length < 2 || cfg.clients.length % 2) throw new Error(`an even number of clients, not ${cfg.clients.length}`);
  const prefix = `qim-web-lane:${cfg.runId}:`;
  const tallies = cfg.clients.map((): Tally => ({ sent: 0, acked: new Set(), failed: 0, received: new Map(), stray: 0 }));
  const clients = cfg.clients.map((c, i) => {
    const q = new QimClient({ url: cfg.url, token: c.token, store: new MemoryStore(), clientVersion: "qim-web-lane/1" });
    const peer = cfg.clients[i ^ 1]!.user;
    q.on("message", (m: ChatMessage) => {
      if (m.senderUserId !== peer || !m.body) return;
      const text = new TextDecoder().decode(m.body);
      if (!text.startsWith(prefix)) {
        tallies[i]!.stray++;
        return;
      }
      const ord = Number(text.slice(prefix.length).split(":")[1]);
      tallies[i]!.received.set(ord, (tallies[i]!.received.get(ord) ?? 0) + 1);
    });
    return q;
  });
  await withTimeout(Promise.all(clients.map((c) => c.connect())), cfg.connectTimeoutMs, "every client online");
  out({ event: "ready" });

  // Open model: each client sends on its own clock, never waiting for an answer.
  const perClient = cfg.rate / clients.length;
  const end = Date.now() + cfg.durationMs;
  const commits: Promise<unknown>[] = [];
  await Promise.all(clients.map(async (c, i) => {
    const t = tallies[i]!;
    const start = Date.now() + Math.random() * (1000 / perClient);
    for (let n = 0; ; n++) {
      const due = start + (n * 1000) / perClient;
      if (due >= end) return;
      await new Promise((r) => setTimeout(r, Math.max(0, due - Date.now())));
      const ord = n;
      t.sent++;
      const h = c.send({ peer: cfg.clients[i ^ 1]!.user }, `${prefix}${cfg.clients[i]!.user}:${ord}`);
      commits.push(h.committed.then(() => t.acked.add(ord), () => t.failed++));
    }
  }));
  await withTimeout(Promise.allSettled(commits), cfg.settleMs, "every send settled").catch(() => undefined);
  const settled = Date.now() + cfg.settleMs;
  const allIn = () => tallies.every((t, i) => [...t.acked].every((o) => tallies[i ^ 1]!.received.has(o)));
  while (!allIn() && Date.now() < settled) await new Promise((r) => setTimeout(r, 100));
  report(tallies);
  clients.forEach((c) => c.close());
}

function report(tallies: Tally[]): void {
  let sent = 0, acked = 0, failed = 0, received = 0, missing = 0, repeated = 0, stray = 0;
  tallies.forEach((t, i) => {
    const peer = tallies[i ^ 1]!;
    sent += t.sent;
    acked += t.acked.size;
    failed += t.failed;
    stray += t.stray;
    for (const [, n] of t.received) {
      received++;
      if (n > 1) repeated++;
    }
    for (const o of t.acked) if (!peer.received.has(o)) missing++;
  });
  const passed = missing === 0 && repeated === 0 && failed === 0 && acked > 0;
  out({ event: "report", sent, acked, received, missing, repeated, failed, stray, passed, verified: true });
}

main().then(() => process.exit(0), (err) => {
  out({ event: "error", detail: String((err as Error).message ?? err) });
  process.exit(1);
});
