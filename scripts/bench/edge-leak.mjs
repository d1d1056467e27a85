// Whether the edge worker frees what it allocates when KV fails: the Rust worker under
// workerd (Miniflare's API) with a LINKS binding whose every read rejects, sent
// WARMUP then REQUESTS redirects in one isolate; V8's heap is measured through
// workerd's inspector after a full collection before and after the REQUESTS.
//   node scripts/bench/edge-leak.mjs REQUESTS
// Prints one line: `answered N (status S) heap before B after A grew G` (bytes).
import { Miniflare } from "miniflare";
import { connect } from "./inspector.mjs";
import { createServer } from "node:net";

const requests = Number(process.argv[2] || 20000);
const warmup = 2000;

const freePort = () =>
  new Promise((ok, fail) => {
    const server = createServer();
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => ok(port));
    });
  });

const inspector = await freePort();
const mf = new Miniflare({
  host: "127.0.0.1",
  port: await freePort(),
  cf: false,
  inspectorPort: inspector,
  unsafeInspectorProxy: true,
  // Every failed read is logged by the worker: thousands of lines nobody reads here.
  handleRuntimeStdio(stdout, stderr) {
    stdout.resume();
    stderr.resume();
  },
  workers: [
    {
      name: "hop",
      modules: true,
      compatibilityDate: "2026-04-01",
      scriptPath: "edge-worker/build/index.js",
      modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }],
      // A KV namespace that is down: every read rejects.
      wrappedBindings: { LINKS: { scriptName: "kv-down" } },
    },
    {
      name: "kv-down",
      modules: true,
      script:
        "export default function () { return { get() { return Promise.reject(new Error('KV is down')); } }; }",
    },
  ],
});
const url = await mf.ready;

// The inspector proxy lists the workers it can reach once they are up.
let target;
for (let i = 0; i < 100 && !target; i++) {
  const list = await fetch(`http://127.0.0.1:${inspector}/json`).then((r) => r.json()).catch(() => []);
  target = list.find((t) => t.webSocketDebuggerUrl && t.id.includes("hop") && !t.id.includes("kv-down"));
  if (!target) await new Promise((ok) => setTimeout(ok, 100));
}
if (!target) throw new Error("the worker never showed up on the inspector");
const { call, close } = await connect(target.webSocketDebuggerUrl);

// A heap snapshot makes V8 collect everything it can first (workerd's inspector does not
// answer `HeapProfiler.collectGarbage`); the snapshot's own chunks are ignored.
const heap = async () => {
  await call("HeapProfiler.enable");
  await call("HeapProfiler.takeHeapSnapshot", { reportProgress: false });
  const usage = await call("Runtime.getHeapUsage");
  return usage.usedSize + usage.backingStorageSize;
};

const statuses = new Map();
const visit = async (n, from) => {
  // Thirty-two at a time, each a code the worker has to read KV for.
  for (let i = 0; i < n; i += 32) {
    const batch = [];
    for (let j = i; j < Math.min(n, i + 32); j++) {
      batch.push(
        // Each visit from an address of its own, as many visitors would come: one address
        // alone is refused (429) after its 20 lookups a minute, before the reads measured.
        fetch(new URL(`/c${from + j}-alias`, url), {
          headers: { host: "s.example", "cf-connecting-ip": `10.${((from + j) >> 16) & 255}.${((from + j) >> 8) & 255}.${(from + j) & 255}` },
          redirect: "manual",
        }).then(
          async (res) => {
            await res.arrayBuffer();
            statuses.set(res.status, (statuses.get(res.status) || 0) + 1);
          },
        ),
      );
    }
    await Promise.all(batch);
  }
};

await visit(warmup, 0);
const before = await heap();
await visit(requests, warmup);
const after = await heap();
close();
await mf.dispose();
const answered = [...statuses.entries()].map(([s, n]) => `${n} (status ${s})`).join(", ");
console.log(`answered ${answered} heap before ${before} after ${after} grew ${after - before}`);
