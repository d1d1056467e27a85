# Sourced by the scripts: where the pinned build tools live, so that worker-build finds
# them and downloads nothing.
hop_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cargo_bin="${CARGO_HOME:-$HOME/.cargo}/bin"
export PATH="$cargo_bin:$HOME/.cargo/bin:$PATH"
export WASM_BINDGEN_BIN="${WASM_BINDGEN_BIN:-$cargo_bin/wasm-bindgen}"
export WASM_OPT_BIN="${WASM_OPT_BIN:-$hop_root/node_modules/.bin/wasm-opt}"
export ESBUILD_BIN="${ESBUILD_BIN:-$hop_root/node_modules/.bin/esbuild}"
export WRANGLER="$hop_root/node_modules/.bin/wrangler"
# wrangler: no telemetry prompts, no update checks.
export WRANGLER_SEND_METRICS=false

# The benchmarks' load generator, from Debian's packages when it is missing.
need_wrk() {
  command -v wrk >/dev/null && return
  echo "installing wrk (Debian package)" >&2
  local sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd=sudo
  $sudo_cmd apt-get install -y wrk >/dev/null
}

# wait_until SECONDS WHAT COMMAND…: returns once COMMAND succeeds (tried every tenth of
# a second), or fails saying that WHAT did not happen within SECONDS.
wait_until() {
  local seconds=$1 what=$2 i
  shift 2
  for i in $(seq 1 $(( seconds * 10 ))); do
    "$@" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "$what within $seconds s" >&2
  return 1
}

# wait_http URL [SECONDS]: once URL answers at all (60 s by default).
wait_http() { wait_until "${2:-60}" "nothing answered at $1" curl -s -o /dev/null "$1"; }

# wait_log FILE PATTERN [SECONDS]: once a line of FILE matches PATTERN (grep -E).
wait_log() { wait_until "${3:-60}" "no line matching '$2' in $1" grep -qE "$2" "$1"; }

# wait_tcp PORT [SECONDS]: once something accepts connections on loopback PORT.
wait_tcp() { wait_until "${2:-60}" "nothing listened on 127.0.0.1:$1" bash -c "exec 3<>/dev/tcp/127.0.0.1/$1"; }

# A free port below Linux's ephemeral range (32768+), which processes binding port 0
# (wrangler, workerd) never get: a port chosen here stays ours until we use it.
free_port() {
  python3 -c '
import random, socket
for _ in range(1000):
    p = random.randint(20000, 32767)
    try:
        socket.socket().bind(("127.0.0.1", p)); print(p); break
    except OSError:
        pass'
}

# Sets pin_server and pin_load: with two cores or more, a server under measurement runs
# on one core and its load generator on another, so that the scheduler moving them about
# does not add to the noise between rounds.
pin_cores() {
  pin_server=""; pin_load=""
  if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
    pin_server="taskset -c 1"; pin_load="taskset -c 0"
  fi
}

# podman as these machines allow it: vfs storage (no overlay mounts in an unprivileged
# sandbox) and runc (crun refuses hybrid cgroup hierarchies); both work anywhere.
hop_podman_flags=(--storage-driver vfs --runtime runc --cgroup-manager cgroupfs)

# need_debian PACKAGE…: installs Debian packages that are missing (apt-get, through sudo
# when not root), updating the package lists once if the first try fails.
need_debian() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "installing Debian packages: ${missing[*]}" >&2
  local apt=(apt-get); [ "$(id -u)" -eq 0 ] || apt=(sudo apt-get)
  export DEBIAN_FRONTEND=noninteractive
  "${apt[@]}" install -y --no-install-recommends "${missing[@]}" >/dev/null ||
    { "${apt[@]}" update >/dev/null && "${apt[@]}" install -y --no-install-recommends "${missing[@]}" >/dev/null; }
}

# test_postgres: PostgreSQL for the tests that need it. The server at
# HOP_TEST_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/test) when one
# answers; otherwise a throwaway cluster of our own (Debian's postgresql, installed when
# missing), stopped by test_postgres_stop. Either way HOP_TEST_REQUIRE_POSTGRES=1 is
# exported, so a test that cannot reach it fails instead of skipping.
test_postgres() {
  local url=${HOP_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test}
  export HOP_TEST_REQUIRE_POSTGRES=1
  if command -v pg_isready >/dev/null && pg_isready -q -d "$url" -t 3; then
    export HOP_TEST_POSTGRES_URL=$url
    echo "test_postgres: using the server at $url" >&2
    return 0
  fi
  local bin
  bin=$(postgres_bin)
  if [ ! -x "$bin/initdb" ]; then
    need_debian postgresql
    bin=$(postgres_bin)
  fi
  hop_pg_bin=$bin
  hop_pg_dir=$(mktemp -d)
  local port; port=$(free_port)
  mkdir -p "$hop_pg_dir/data" "$hop_pg_dir/run"
  if [ "$(id -u)" = 0 ]; then chmod 755 "$hop_pg_dir"; chown postgres "$hop_pg_dir/data" "$hop_pg_dir/run"; fi
  as_pg "$bin/initdb" -D "$hop_pg_dir/data" -U postgres --auth=trust >/dev/null
  as_pg "$bin/pg_ctl" -D "$hop_pg_dir/data" -l "$hop_pg_dir/run/pg.log" -w \
    -o "-p $port -k $hop_pg_dir/run -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=off" start >/dev/null
  as_pg "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -qc 'CREATE DATABASE test' >/dev/null
  export HOP_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/test"
  echo "test_postgres: started a throwaway server at $HOP_TEST_POSTGRES_URL" >&2
}

test_postgres_stop() {
  [ -n "${hop_pg_dir:-}" ] || return 0
  as_pg "$hop_pg_bin/pg_ctl" -D "$hop_pg_dir/data" -m fast stop >/dev/null 2>&1 || true
  rm -rf "$hop_pg_dir"
}

# The newest of Debian's PostgreSQL server directories (initdb, pg_ctl), if any.
postgres_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }

# as_pg COMMAND…: PostgreSQL's tools refuse to run as root: there, they run as its own
# user.
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
