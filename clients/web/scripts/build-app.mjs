// Builds the browser chat app into app-dist/: index.html and one bundled app.js (esbuild: the
// SDK and @bufbuild/protobuf resolved into one ES module, so any static server can host it).
// tsc type-checks app/ with the rest (npm run build); esbuild only strips types and bundles.
import { build } from "esbuild";
import { copyFileSync, mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const pkg = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(pkg, "app-dist");
mkdirSync(out, { recursive: true });
await build({
  entryPoints: [join(pkg, "app", "main.ts")], bundle: true, format: "esm", target: "es2022",
  outfile: join(out, "app.js"), sourcemap: true, minify: false, logLevel: "warning",
});
copyFileSync(join(pkg, "app", "index.html"), join(out, "index.html"));
console.log(`app: built ${out}`);
