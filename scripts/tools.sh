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

# A TCP port free on loopback at the time of asking.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
