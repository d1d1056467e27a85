// Runs one worker under workerd through Miniflare's API (not `wrangler dev`, whose local
// proxy caps throughput and hides the worker's own cost), with a local KV seeded with
// the links listed in CODES_FILE, on 127.0.0.1:PORT.
//   node scripts/bench/edge-worker.mjs rust|js PORT CODES_FILE
// With HOP_INSPECTOR_PORT set, V8's inspector is exposed on that port for the worker
// named "hop" (scripts/profile-edge uses it to take a CPU profile).
import { Miniflare } from "miniflare";
import { readFileSync } from "node:fs";

const [which, port, codesFile] = process.argv.slice(2);

// The JavaScript reference: the least an edge redirect does (a KV read and a 302), with
// the same response headers as the Rust worker sends for these links, so that both put
// the same bytes on the wire.
const js = `export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const record = await env.LINKS.get("l:" + url.hostname + url.pathname, { cacheTtl: 60 });
    if (record === null) return new Response("Not found", { status: 404 });
    const r = JSON.parse(record);
    return new Response(null, { status: r.r || 302, headers: { location: r.t, "cache-control": "private, max-age=3600" } });
  },
};`;

const common = {
  host: "127.0.0.1",
  port: Number(port),
  kvNamespaces: ["LINKS"],
  compatibilityDate: "2026-04-01",
  cf: false,
  modules: true,
  name: "hop",
  ...(process.env.HOP_INSPECTOR_PORT
    ? { inspectorPort: Number(process.env.HOP_INSPECTOR_PORT), unsafeInspectorProxy: true }
    : {}),
};
const mf =
  which === "rust"
    ? new Miniflare({
        ...common,
        scriptPath: "edge-worker/build/index.js",
        modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }],
      })
    : new Miniflare({ ...common, script: js });
await mf.ready;
const kv = await mf.getKVNamespace("LINKS");
const codes = readFileSync(codesFile, "utf8").split("\n").filter(Boolean);
// In slices: ten thousand writes at once exhaust Miniflare's loopback sockets.
for (let start = 0; start < codes.length; start += 100) {
  await Promise.all(
    codes.slice(start, start + 100).map((code, i) =>
      kv.put(
        `l:s.example/${code}`,
        JSON.stringify({ t: `https://dest.example/${start + i}`, s: "active", r: 302, x: null, v: 1, q: false }),
      ),
    ),
  );
}
console.log(`ready ${which} ${codes.length}`);
const stop = async () => {
  await mf.dispose();
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
