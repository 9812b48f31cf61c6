// Regenerates src/gen/qim/v1/*_pb.ts from proto/qim/v1/*.proto with protoc and protoc-gen-es
// (the version pinned in package.json). With --check it generates into a temporary directory
// and fails when the committed files differ, writing nothing under src/.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const pkg = resolve(here, "..");
const repo = resolve(pkg, "../..");
const protoDir = join(repo, "proto");
const committed = join(pkg, "src", "gen");
const check = process.argv.includes("--check");
const out = check ? mkdtempSync(join(tmpdir(), "qim-web-gen-")) : committed;
mkdirSync(out, { recursive: true });

const protos = readdirSync(join(protoDir, "qim", "v1")).filter((f) => f.endsWith(".proto")).map((f) => `qim/v1/${f}`);
const plugin = join(pkg, "node_modules", ".bin", "protoc-gen-es");
if (!existsSync(plugin)) {
  console.error("gen: node_modules/.bin/protoc-gen-es is missing: run npm ci in clients/web first");
  process.exit(1);
}
try {
  execFileSync("protoc", [`--plugin=protoc-gen-es=${plugin}`, `--es_out=${out}`, "--es_opt=target=ts,import_extension=js",
    `-I${protoDir}`, ...protos], { stdio: "inherit" });
} catch (err) {
  console.error(`gen: protoc failed (${err.message}); on Debian: apt-get install protobuf-compiler`);
  process.exit(1);
}
if (check) {
  const stale = [];
  for (const f of readdirSync(join(out, "qim", "v1"))) {
    const want = readFileSync(join(out, "qim", "v1", f), "utf8");
    const path = join(committed, "qim", "v1", f);
    if (!existsSync(path) || readFileSync(path, "utf8") !== want) stale.push(f);
  }
  const extra = readdirSync(join(committed, "qim", "v1")).filter((f) => !existsSync(join(out, "qim", "v1", f)));
  rmSync(out, { recursive: true, force: true });
  if (stale.length || extra.length) {
    console.error(`gen: src/gen is stale (${[...stale, ...extra].join(", ")}): run npm run gen in clients/web`);
    process.exit(1);
  }
  console.log(`gen: src/gen matches ${protos.length} protos`);
}
