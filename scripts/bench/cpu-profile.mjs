// Takes a V8 CPU profile of one worker through workerd's inspector, for SECONDS, and
// prints where the time went: self time by function, with wasm and JS told apart.
//   node scripts/bench/cpu-profile.mjs ws://127.0.0.1:PORT/hop SECONDS OUT.cpuprofile
// The .cpuprofile file opens in Chrome DevTools (Performance tab) for the call tree.
import { writeFileSync } from "node:fs";
import { connect } from "./inspector.mjs";

const [url, seconds, out] = process.argv.slice(2);
const { call, close } = await connect(url);
await call("Profiler.enable");
await call("Profiler.setSamplingInterval", { interval: 50 });
await call("Profiler.start");
console.log("profiling");
await new Promise((ok) => setTimeout(ok, Number(seconds) * 1000));
const { profile } = await call("Profiler.stop");
close();
writeFileSync(out, JSON.stringify(profile));

// Self time per function: each sample is charged to the node it landed in.
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map();
let total = 0;
for (let i = 0; i < profile.samples.length; i++) {
  const dt = profile.timeDeltas[i] ?? 0;
  const node = byId.get(profile.samples[i]);
  const f = node.callFrame;
  const where = f.url.startsWith("wasm://") ? "wasm" : f.url ? f.url.split("/").pop() : "";
  const key = `${f.functionName || "(anonymous)"}\t${where}`;
  self.set(key, (self.get(key) ?? 0) + dt);
  total += dt;
}
const busy = total - (self.get("(idle)\t") ?? 0);
const share = (us) => ((100 * us) / busy).toFixed(1).padStart(5);
let wasm = 0;
for (const [key, us] of self) if (key.endsWith("\twasm")) wasm += us;
console.log(`busy ${(busy / 1000).toFixed(0)} ms of ${(total / 1000).toFixed(0)} ms; wasm ${share(wasm)}%`);
console.log("self%  function  [where]");
for (const [key, us] of [...self].filter(([k]) => k !== "(idle)\t").sort((a, b) => b[1] - a[1]).slice(0, 40)) {
  const [name, where] = key.split("\t");
  console.log(`${share(us)}%  ${name}  [${where}]`);
}
