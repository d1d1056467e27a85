# Sourced by scripts/bench-redirect and scripts/bench-clicks: links on an origin, and
# the wrk script that visits them.

# origin_seed PORT KEY N DIR: creates N links through POST /v1/links/bulk with KEY, and
# writes their codes to DIR/known.txt (shuffled), DIR/half.txt (half of them mixed
# with as many unknown codes of the same shape) and DIR/hot.txt (one code nine times in
# ten, drawn at random: a link taking 90% of the traffic).
origin_seed() {
  echo "seeding $3 links through POST /v1/links/bulk…" >&2
  python3 - "$1" "$2" "$3" "$4" <<'PY'
import json, random, string, sys, time, urllib.request
port, key, n, work = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
codes, start = [], time.time()
for b in range(0, n, 10000):
    body = {"links": [{"target_url": f"https://dest.example/{i}"} for i in range(b, min(n, b + 10000))]}
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/links/bulk", json.dumps(body).encode(),
        {"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    for r in json.load(urllib.request.urlopen(req, timeout=300))["results"]:
        assert r["ok"], r
        codes.append(r["link"]["code"])
print(f"seeded {len(codes)} links in {time.time() - start:.1f} s", file=sys.stderr)
alphabet = string.digits + string.ascii_uppercase + string.ascii_lowercase
known = set(codes)
unknown = []
while len(unknown) < len(codes):
    c = "".join(random.choice(alphabet) for _ in range(len(codes[0])))
    if c not in known:
        unknown.append(c)
random.shuffle(codes)
open(f"{work}/known.txt", "w").write("\n".join(codes) + "\n")
half = codes[: len(codes) // 2] + unknown[: len(codes) // 2]
random.shuffle(half)
open(f"{work}/half.txt", "w").write("\n".join(half) + "\n")
# One link taking 90% of the visits (a star posts it), the rest spread over all links.
hot = [codes[0]] * (9 * len(codes) // 10) + codes[: len(codes) // 10]
random.shuffle(hot)
open(f"{work}/hot.txt", "w").write("\n".join(hot) + "\n")
PY
}

# origin_load_lua DIR: writes DIR/random.lua. Its arguments: a file of codes, "in-turn"
# or "random", and optionally "browser" (send a browser's User-Agent and a Referer, and
# come from many addresses: an `X-Forwarded-For` drawn per request from the 131,072 of
# 198.18.0.0/15, which an origin started with HOP_TRUSTED_PROXIES=127.0.0.1 believes, so
# that its per-visitor click budget (60 a minute) counts visits as it would from a
# crowd, not from one address). It
# prints "RESULT requests duration_us p50_us p99_us socket_errors non_2xx_3xx".
# DIR/once.lua is the same with "once": in turn, and the thread stops as soon as every
# code has been answered, a pass by count, not by time. wrk itself still waits out -d, so
# once.lua also creates the file named by a fourth argument when it is done, for the
# caller to stop wrk with SIGINT (wrk then reports at once, with the pass's own
# duration): see origin_once. Run it with one thread (-t1).
origin_load_lua() {
  cat >"$1/random.lua" <<'LUA'
local codes = {}
local in_turn, once, next_code, answered, done_file = false, false, 0, 0, nil
local crowd = false
init = function(args)
  for line in io.lines(args[1]) do codes[#codes + 1] = "/" .. line end
  once = args[2] == "once"
  done_file = args[4]
  in_turn = args[2] == "in-turn" or once
  if args[3] == "browser" then
    -- What a browser sends, so that a click has its user agent and referrer to reduce.
    wrk.headers["User-Agent"] = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"
    wrk.headers["Referer"] = "https://www.news.example/today?id=42"
    crowd = true
  end
  math.randomseed(os.time() + math.floor(os.clock() * 1000000))
end
-- The short domain the links live on (the origin resolves the Host header).
wrk.headers["Host"] = "s.example"
request = function()
  if crowd then
    local a = math.random(0, 131071)
    wrk.headers["X-Forwarded-For"] = string.format("198.%d.%d.%d", 18 + math.floor(a / 65536), math.floor(a / 256) % 256, a % 256)
  end
  if in_turn then
    next_code = next_code % #codes + 1
    return wrk.format("GET", codes[next_code])
  end
  return wrk.format("GET", codes[math.random(#codes)])
end
done = function(summary, latency, requests)
  io.write(string.format("RESULT %d %d %d %d %d %d\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99), summary.errors.connect + summary.errors.read
    + summary.errors.write + summary.errors.timeout, summary.errors.status))
end
LUA
  # Counting answers costs wrk a call per response, so only the pass by count has it.
  cat "$1/random.lua" - >"$1/once.lua" <<'LUA'
response = function(status, headers, body)
  answered = answered + 1
  if answered == #codes then
    if done_file then
      local f = io.open(done_file, "w")
      if f then f:close() end
    end
    wrk.thread:stop()
  end
end
LUA
}

# origin_once DIR URL CODES CAP_S [wrk args…]: one pass over CODES with DIR/once.lua,
# stopped as soon as every code is answered (at the latest after CAP_S); prints wrk's
# RESULT line.
origin_once() {
  local dir=$1 url=$2 codes=$3 cap=$4
  shift 4
  rm -f "$dir/once.done"
  wrk -t1 "$@" -d"${cap}s" -s "$dir/once.lua" "$url" -- "$codes" once browser "$dir/once.done" >"$dir/once.out" &
  local w=$!
  while kill -0 "$w" 2>/dev/null && [ ! -e "$dir/once.done" ]; do sleep 0.2; done
  kill -INT "$w" 2>/dev/null || true
  wait "$w" || true
  grep '^RESULT' "$dir/once.out"
}
