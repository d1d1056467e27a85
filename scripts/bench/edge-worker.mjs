// Runs one worker under workerd through Miniflare's API (not `wrangler dev`, whose local
// proxy caps throughput and hides the worker's own cost), with a local KV seeded with
// the links listed in CODES_FILE, on 127.0.0.1:PORT.
//   node scripts/bench/edge-worker.mjs rust|js|base PORT CODES_FILE
// `base` is another build of the Rust worker, from the directory HOP_BENCH_BASELINE
// (what worker-build wrote: index.js and its wasm), to measure a change against.
// With HOP_INSPECTOR_PORT set, V8's inspector is exposed on that port for the worker
// named "hop" (scripts/profile-edge uses it to take a CPU profile).
import { Miniflare } from "miniflare";
import { readFileSync } from "node:fs";

const [which, port, codesFile] = process.argv.slice(2);

// The JavaScript reference: the least an edge redirect does (a KV read and a 302), with
// the same response headers as the Rust worker sends for these links, so that both put
// the same bytes on the wire; and, after the response is chosen, the same click event
// sent to the same queue, reduced by the same rules (docs/analytics.md).
const js = `const BOT = ["bot", "crawl", "spider", "slurp", "preview", "facebookexternalhit", "facebookcatalog",
  "embedly", "whatsapp", "headless", "lighthouse", "pingdom", "uptime", "monitor", "curl/", "wget/",
  "python", "go-http-client", "java/", "okhttp", "axios", "node-fetch", "httpclient", "libwww",
  "scrapy", "phantomjs"];
function visitor(request) {
  const ua = (request.headers.get("user-agent") || "").slice(0, 512).toLowerCase();
  const has = (s) => ua.includes(s);
  const bot = !(ua.startsWith("mozilla/") || ua.startsWith("opera/")) || BOT.some(has);
  const device = has("ipad") || has("tablet") || (has("android") && !has("mobile")) ? "tablet"
    : has("mobi") || has("iphone") || has("ipod") || has("android") || has("phone") ? "mobile"
    : has("windows nt") || has("macintosh") || has("cros") || has("x11") || has("linux") ? "desktop" : "other";
  let referrer_host;
  const referer = request.headers.get("referer");
  if (referer) {
    try {
      const u = new URL(referer);
      if (u.protocol === "http:" || u.protocol === "https:") referrer_host = u.hostname.replace(/^www\\./, "");
    } catch {}
  }
  const c = request.cf && request.cf.country;
  const country = typeof c === "string" && /^[A-Za-z0-9]{2}$/.test(c) ? c.toUpperCase() : undefined;
  return { country, referrer_host, device, bot };
}
// Rules and a split, decided as shared::decide does (HOP_BENCH_RULES=1): the visitor's
// platforms, first-choice language, country and query against each rule in turn, then
// the split's pick for a random draw.
function platforms(ua) {
  const has = (s) => ua.includes(s);
  const out = new Set();
  if (has("iphone") || has("ipad") || has("ipod")) out.add("ios");
  else if (has("android")) out.add("android");
  else if (has("cros")) out.add("chromeos");
  else if (has("windows")) out.add("windows");
  else if (has("macintosh") || has("mac os x")) out.add("macos");
  else if (has("linux") || has("x11")) out.add("linux");
  if (has("mobi") || has("iphone") || has("ipod") || has("ipad") || has("android") || has("tablet")) out.add("mobile");
  else out.add("desktop");
  return out;
}
function firstLanguage(header) {
  let best, bestQ = -1;
  for (const item of header.slice(0, 512).split(",")) {
    const [tag, ...params] = item.split(";");
    let q = 1;
    for (const p of params) { const t = p.trim(); if (t.startsWith("q=")) q = Number(t.slice(2)); }
    const t = tag.trim().toLowerCase();
    if (!t || t === "*" || !(q > 0)) continue;
    if (q > bestQ) { best = t; bestQ = q; }
  }
  return best;
}
function holds(when, facts) {
  if (when.device && !when.device.some((d) => facts.devices.has(d))) return false;
  if (when.language && !(facts.language && when.language.some((l) => facts.language === l || facts.language.startsWith(l + "-")))) return false;
  if (when.country && !(facts.country && when.country.includes(facts.country))) return false;
  if (when.after !== undefined && facts.now < when.after) return false;
  if (when.before !== undefined && facts.now >= when.before) return false;
  if (when.query) for (const q of when.query) {
    const v = facts.query.getAll(q.name);
    if (q.equals !== undefined ? !v.includes(q.equals) : (v.length > 0) !== q.present) return false;
  }
  return true;
}
function target(r, request, url) {
  if (r.rl) {
    const facts = {
      devices: platforms((request.headers.get("user-agent") || "").slice(0, 512).toLowerCase()),
      language: firstLanguage(request.headers.get("accept-language") || ""),
      country: request.cf && request.cf.country,
      query: url.searchParams,
      now: Date.now(),
    };
    for (const rule of r.rl) if (holds(rule.when, facts)) return rule.target_url;
  }
  if (r.ab) {
    let point = Math.floor(Math.random() * 100);
    for (const v of r.ab) { if (point < v.weight) return v.target_url; point -= v.weight; }
  }
  return r.t;
}
export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    const link = url.hostname + url.pathname;
    const record = await env.LINKS.get("l:" + link, { cacheTtl: 60 });
    if (record === null) return new Response("Not found", { status: 404 });
    const r = JSON.parse(record);
    const status = r.r || 302;
    const headers = { location: target(r, request, url), "cache-control": "private, max-age=3600" };
    if (r.rl) headers.vary = "User-Agent, Accept-Language";
    const response = new Response(null, { status, headers });
    const event = { event_id: crypto.randomUUID(), link, version: r.v, at: Date.now(), ...visitor(request), status };
    ctx.waitUntil(env.CLICKS.send(JSON.stringify(event)));
    return response;
  },
};`;

const worker = {
  kvNamespaces: ["LINKS"],
  compatibilityDate: "2026-04-01",
  modules: true,
  name: "hop",
  // Both workers send each click to a CLICKS binding. Miniflare's local queue is a
  // simulator whose broker costs far more per message than the workers themselves (it
  // took both from 3,500 to 1,400 requests/s), so by default the binding is an
  // in-isolate stand-in whose send() does nothing: what is compared is each worker's own
  // work for a click. HOP_BENCH_QUEUE=local uses Miniflare's queue instead.
  ...(process.env.HOP_BENCH_QUEUE === "local"
    ? { queueProducers: { CLICKS: "hop-clicks" } }
    : { wrappedBindings: { CLICKS: { scriptName: "queue-stand-in" } } }),
  ...(which === "js"
    ? { script: js }
    : {
        scriptPath:
          which === "base" ? `${process.env.HOP_BENCH_BASELINE}/index.js` : "edge-worker/build/index.js",
        // Module names are relative to this root, which must hold the script.
        ...(which === "base" ? { modulesRoot: process.env.HOP_BENCH_BASELINE } : {}),
        modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }],
      }),
};
const standIn = {
  name: "queue-stand-in",
  modules: true,
  script: "export default function () { return { send() { return Promise.resolve(); } }; }",
};
const mf = new Miniflare({
  host: "127.0.0.1",
  port: Number(port),
  cf: false,
  ...(process.env.HOP_INSPECTOR_PORT
    ? { inspectorPort: Number(process.env.HOP_INSPECTOR_PORT), unsafeInspectorProxy: true }
    : {}),
  workers: [worker, standIn],
});
await mf.ready;
const kv = await mf.getKVNamespace("LINKS", "hop");
const codes = readFileSync(codesFile, "utf8").split("\n").filter(Boolean);
// A plain link, or (HOP_BENCH_RULES=1) one with five rules and a 50/50 split.
const record = (n) => ({
  t: `https://dest.example/${n}`, s: "active", r: 302, x: null, v: 1, q: false,
  ...(process.env.HOP_BENCH_RULES === "1"
    ? {
        rl: [
          { when: { device: ["ios"] }, target_url: `https://apps.example/ios/${n}` },
          { when: { device: ["android"] }, target_url: `https://apps.example/android/${n}` },
          { when: { language: ["de"] }, target_url: `https://dest.example/de/${n}` },
          { when: { country: ["FR"] }, target_url: `https://dest.example/fr/${n}` },
          { when: { query: [{ name: "ref", equals: "tv" }] }, target_url: `https://dest.example/tv/${n}` },
        ],
        ab: [
          { target_url: `https://a.example/${n}`, weight: 50 },
          { target_url: `https://b.example/${n}`, weight: 50 },
        ],
      }
    : {}),
});
// In slices: ten thousand writes at once exhaust Miniflare's loopback sockets.
for (let start = 0; start < codes.length; start += 100) {
  await Promise.all(
    codes.slice(start, start + 100).map((code, i) =>
      kv.put(
        `l:s.example/${code}`,
        JSON.stringify(record(start + i)),
      ),
    ),
  );
}
// The domain's settings, as the origin publishes them: the Rust worker holds and applies
// them on every visit (the JavaScript one ignores them). Same max-age as the default, so
// both send the same headers.
await kv.put(
  "cfg:s.example",
  JSON.stringify({ v: 1, settings: { max_age_s: 60, not_found_url: "https://www.example.org/missing" } }),
);
console.log(`ready ${which} ${codes.length}`);
const stop = async () => {
  await mf.dispose();
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
