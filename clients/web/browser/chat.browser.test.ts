// The browser chat app in Debian's headless Chromium (playwright-core drives the system browser),
// on the real services (gates/webit starts them and sets WEBIT_*). Each user has its own browser
// context (its own IndexedDB); screenshots of the key steps go to WEBIT_SHOTS.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { readFileSync } from "node:fs";
import { join, dirname, extname } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";

function env(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run through go test ./gates/webit`);
  return v;
}

const gw = env("WEBIT_URL");
const shots = env("WEBIT_SHOTS");
const users = { a: env("WEBIT_A_USER"), b: env("WEBIT_B_USER") };
const dist = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "app-dist");
const types: Record<string, string> = { ".html": "text/html", ".js": "text/javascript", ".map": "application/json" };
let server: Server;
let base = "";
let browser: Browser;

before(async () => {
  server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    try {
      const body = readFileSync(join(dist, path === "/" ? "index.html" : path.replace(/\.\./g, "")));
      res.writeHead(200, { "content-type": types[extname(path) || ".html"] ?? "application/octet-stream" }).end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const addr = server.address();
  base = `http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : 0}`;
  browser = await chromium.launch({ executablePath: process.env.WEBIT_CHROMIUM || "/usr/bin/chromium", args: ["--no-sandbox"] });
});

after(async () => {
  await browser?.close();
  server?.close();
});

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
}

/** signIn opens the app in ctx and signs in with the token of who. */
async function signIn(ctx: BrowserContext, who: string, page?: Page): Promise<Page> {
  const p = page ?? (await ctx.newPage());
  p.on("pageerror", (err) => console.error(`page error (${who}):`, err));
  await p.goto(`${base}/?gw=${encodeURIComponent(gw)}`);
  await p.fill("#token", env(`WEBIT_${who}_TOKEN`));
  await p.click("#login button[type=submit]");
  await p.waitForSelector("#main:not([hidden])");
  return p;
}

/** home returns to the conversation list where the layout shows one pane (a phone width). */
async function home(p: Page): Promise<void> {
  if (await p.locator("#back").isVisible()) await p.click("#back");
}

const row = (p: Page, text: string) => p.locator("#msgs li", { hasText: text });
const conv = (p: Page, title: string) => p.locator("#convs li button", { hasText: title });

let ctxA: BrowserContext, ctxB: BrowserContext, a: Page, b: Page;

test("two browsers chat 1:1; the sender's row goes pending to committed once; the unread badge rises and clears", async () => {
  ctxA = await browser.newContext({ viewport: { width: 1100, height: 700 } });
  ctxB = await browser.newContext({ viewport: { width: 390, height: 760 } }); // a phone width
  a = await signIn(ctxA, "A");
  b = await signIn(ctxB, "B");
  await shot(b, "01-first-screen-phone");
  await a.fill("#peer", users.b);
  await a.click("#new-chat button");
  await a.locator("#view-title", { hasText: `User ${users.b}` }).waitFor();
  await a.fill("#text", "hello from Chromium");
  await a.press("#text", "Enter");
  await row(a, "hello from Chromium").and(a.locator("[data-state=committed]")).waitFor();
  const badge = conv(b, `User ${users.a}`).locator(".badge");
  await badge.waitFor();
  assert.equal(await badge.getAttribute("aria-label"), "1 unread");
  await shot(b, "02-unread-badge");
  await conv(b, `User ${users.a}`).click();
  await row(b, "hello from Chromium").waitFor();
  await shot(b, "03-conversation-view-phone");
  await home(b);
  await badge.waitFor({ state: "detached" });
  // The sender's own mailbox copy has arrived by now (B got it through the same pipeline): still one row.
  await b.waitForTimeout(500);
  assert.equal(await row(a, "hello from Chromium").count(), 1, "the sender's own copy added a second row");
  await shot(a, "04-sender-desktop");
});

test("rapid sends race their acks and their own mailbox copies: every row ends committed, once", async () => {
  const texts = Array.from({ length: 12 }, (_, i) => `burst ${i}.`); // no text a prefix of another
  for (const t of texts) {
    await a.fill("#text", t);
    await a.press("#text", "Enter");
  }
  for (const t of texts) await row(a, t).and(a.locator("[data-state=committed]")).waitFor();
  await row(b, texts.at(-1)!).waitFor({ state: "attached" }); // delivered (B shows the list pane): the sender's own copies came through the same pipeline
  await a.waitForTimeout(500);
  for (const t of texts) assert.equal(await row(a, t).count(), 1, `rows of "${t}"`);
  assert.equal(await a.locator("#msgs li:not([data-state=committed])").count(), 0, "a row stayed pending or failed");
  const badge = conv(b, `User ${users.a}`).locator(".badge");
  await badge.and(b.locator(`[aria-label="${texts.length} unread"]`)).waitFor(); // B's list pane read nothing
  await conv(b, `User ${users.a}`).click();
  for (const t of texts) await row(b, t).waitFor();
  await home(b);
  await badge.waitFor({ state: "detached" });
});

test("an offline user catches up after a reload", async () => {
  await b.close();
  await a.fill("#text", "while you were away");
  await a.press("#text", "Enter");
  await row(a, "while you were away").and(a.locator("[data-state=committed]")).waitFor();
  b = await signIn(ctxB, "B");
  const badge = conv(b, `User ${users.a}`).locator(".badge");
  await badge.waitFor();
  assert.equal(await badge.getAttribute("aria-label"), "1 unread");
  await conv(b, `User ${users.a}`).click();
  await row(b, "while you were away").waitFor();
  assert.equal(await row(b, "hello from Chromium").count(), 1, "history before the reload is shown once");
});

test("an edit and a recall from the sender's row reach the peer's open conversation", async () => {
  await a.fill("#text", "typo here");
  await a.press("#text", "Enter");
  await a.fill("#text", "take this back");
  await a.press("#text", "Enter");
  await row(a, "take this back").and(a.locator("[data-state=committed]")).waitFor();
  await row(b, "take this back").waitFor();
  a.once("dialog", (d) => void d.accept("typo fixed"));
  await row(a, "typo here").locator("button[data-action=edit]").click();
  await row(b, "typo fixed").and(b.locator("[data-amended=edited]")).waitFor();
  await row(a, "take this back").locator("button[data-action=recall]").click();
  await b.locator("#msgs li[data-amended=recalled]", { hasText: "message recalled" }).waitFor();
  await a.locator("#msgs li[data-amended=recalled]", { hasText: "message recalled" }).waitFor();
  assert.equal(await row(b, "take this back").count(), 0, "the recalled text is still shown to the peer");
  await shot(b, "05-edited-and-recalled-phone");
  await shot(a, "05-edited-and-recalled-desktop");
});

test("a group: created in one browser, messaged, seen in the other", async () => {
  await a.fill("#group-name", "browser group");
  await a.fill("#group-members", users.b);
  await a.click("#new-group button");
  await a.locator("#view-title", { hasText: "Group" }).waitFor();
  await a.fill("#text", "hello group");
  await a.press("#text", "Enter");
  await row(a, "hello group").and(a.locator("[data-state=committed]")).waitFor();
  await home(b);
  await conv(b, "Group").first().waitFor();
  await conv(b, "Group").first().click();
  await row(b, "hello group").waitFor();
});

test("a room with replay: the later joiner sees the earlier event and the truncation banner", async () => {
  const room = Array.from(crypto.getRandomValues(new Uint8Array(16)), (x) => x.toString(16).padStart(2, "0")).join("");
  await a.fill("#room-id", room);
  await a.click("#join-room button");
  await a.locator("#view-title", { hasText: "Room" }).waitFor();
  await a.fill("#text", "first in the room");
  await a.press("#text", "Enter");
  await row(a, "first in the room").waitFor();
  await home(b);
  await b.fill("#room-id", room);
  await b.click("#join-room button");
  await row(b, "first in the room").waitFor();
  assert.match(await b.locator("#room-banner").innerText(), /no longer available/);
  await shot(b, "06-room-replay");
});

test("a duplicate login kicks the older tab, which offers to sign in again", async () => {
  const ctxA2 = await browser.newContext();
  await signIn(ctxA2, "A");
  await a.locator("#kicked:not([hidden])").waitFor();
  assert.match(await a.locator("#kicked-text").innerText(), /signed in somewhere else/);
  await shot(a, "07-kicked");
  await a.click("#relogin");
  await a.locator("#login:not([hidden])").waitFor();
  await ctxA2.close();
});
