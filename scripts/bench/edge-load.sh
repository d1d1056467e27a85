# Sourced by scripts/bench-edge and scripts/profile-edge: the load both put on a worker.
# `edge_load_files DIR` writes DIR/codes.txt (2,000 random link codes, which
# scripts/bench/edge-worker.mjs seeds into KV) and DIR/random.lua (a wrk script asking
# for them at random on host s.example, printing "RESULT requests duration_us p50_us
# p99_us non_2xx_3xx" when done). With HOP_BENCH_RULES=1 the requests carry a browser's
# User-Agent and Accept-Language, for links seeded with rules and a split.
edge_load_files() {
  python3 -c 'import random, string; a=string.ascii_lowercase; print("\n".join("link-" + "".join(random.choice(a) for _ in range(8)) for _ in range(2000)))' >"$1/codes.txt"
  cat >"$1/random.lua" <<'LUA'
local codes = {}
init = function(args)
  for line in io.lines(args[1]) do codes[#codes + 1] = "/" .. line end
end
wrk.headers["Host"] = "s.example"
LUA
  if [ "${HOP_BENCH_RULES:-}" = 1 ]; then
    # A desktop browser in English: no rule of the seeded links holds, so every rule is
    # tested before the split picks (the most a rule-bearing visit costs).
    cat >>"$1/random.lua" <<'LUA'
wrk.headers["User-Agent"] = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36"
wrk.headers["Accept-Language"] = "en-US,en;q=0.9,fr;q=0.5"
LUA
  fi
  cat >>"$1/random.lua" <<'LUA'
request = function() return wrk.format("GET", codes[math.random(#codes)]) end
done = function(summary, latency, requests)
  io.write(string.format("RESULT %d %d %d %d %d\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99), summary.errors.status))
end
LUA
}
