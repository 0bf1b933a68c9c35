#!/usr/bin/env bash
# Loopback throughput of `endpoint`: bulk download over h3 and h2, instrumentation on
# (qlog + TCP_INFO sampling) vs off (--no-qlog). Two servers run side by side and the
# fetches alternate on/off, so CPU contention from other work hits both cells alike.
# Prints the median goodput per cell and the cost of instrumentation.
# Usage: bench-loopback.sh [RUNS=11] [SIZE=10m] [extra serve args...]
set -euo pipefail
RUNS=${1:-11}
SIZE=${2:-10m}
shift $(( $# > 2 ? 2 : $# )) || true
EXTRA=("$@")
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
BIN=${ENDPOINT_BIN:-$ROOT/target/release/endpoint}
[ -x "$BIN" ] || (cd "$ROOT" && cargo build --release -p endpoint)
WORK=$(mktemp -d /tmp/ll-bench.XXXXXX)
PORT=${PORT:-24433}
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

start_server() { # $1 = on|off, $2 = port
  local flag=(); [ "$1" = off ] && flag=(--no-qlog)
  "$BIN" serve --listen 127.0.0.1:$2 --cert-dir "$WORK/certs" --log-dir "$WORK/logs-$1" ${flag[@]+"${flag[@]}"} \
      ${EXTRA[@]+"${EXTRA[@]}"} > "$WORK/serve-$1.out" 2> "$WORK/serve-$1.err" &
  PIDS+=($!)
  for _ in $(seq 100); do grep -q '^ready' "$WORK/serve-$1.out" 2>/dev/null && return; sleep 0.1; done
  echo "server did not start:"; cat "$WORK/serve-$1.err"; exit 1
}

fetch_mbit() { # $1 = proto, $2 = port
  "$BIN" fetch --url "https://127.0.0.1:$2/bulk/$SIZE" --proto "$1" --mode bulk --cert-dir "$WORK/certs" --timeout-s 60 \
    | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["goodput_mbit"] if d["ok"] else "nan")'
}

start_server on "$PORT"
start_server off "$((PORT + 1))"
for i in $(seq "$RUNS"); do
  for p in h3 h2; do
    echo "$p on $(fetch_mbit $p "$PORT")" >> "$WORK/results"
    echo "$p off $(fetch_mbit $p "$((PORT + 1))")" >> "$WORK/results"
  done
done
python3 - "$WORK/results" "$SIZE" "$RUNS" <<'PY'
import sys, statistics, math
rows = [l.split() for l in open(sys.argv[1])]
cell = {}
for p, inst, v in rows:
    cell.setdefault((p, inst), []).append(float(v))
print(f"loopback bulk {sys.argv[2]}, {sys.argv[3]} runs per cell, goodput Mbit/s (median [min..max]; failed runs: nan)")
print(f"{'proto':5} {'instr_on':>24} {'instr_off':>24} {'cost_%':>7}")
for p in ("h3", "h2"):
    on, off = cell[(p, "on")], cell[(p, "off")]
    ok_on, ok_off = [x for x in on if not math.isnan(x)], [x for x in off if not math.isnan(x)]
    fmt = lambda v: f"{statistics.median(v):8.0f} [{min(v):.0f}..{max(v):.0f}]" if v else "all failed"
    cost = (1 - statistics.median(ok_on) / statistics.median(ok_off)) * 100 if ok_on and ok_off else float("nan")
    print(f"{p:5} {fmt(ok_on):>24} {fmt(ok_off):>24} {cost:7.1f}")
PY
echo "log bytes written with instrumentation on: $(du -sb "$WORK/logs-on" | cut -f1) in $(ls "$WORK/logs-on" | wc -l) files"
