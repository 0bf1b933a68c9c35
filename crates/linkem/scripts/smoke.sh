#!/usr/bin/env bash
# Smoke test of linkem on a real 3-namespace testbed.
#
#   sudo crates/linkem/scripts/smoke.sh [CASE ...]
#   sudo crates/linkem/scripts/smoke.sh features   # loss, GE, reorder, middlebox, trace, jitter
#
# CASE = RATE_MBIT:DELAY_MS:BUFFER_BYTES[:STREAMS]  (BUFFER_BYTES 0 = no limit)
# default cases: 10:20:100000 100:20:600000 10000:20:0:4
#
# For each case: start linkem in the router, measure idle RTT with UDP probes against the
# bare path's (measured once without NFQUEUE) and the expected 2 x delay + serialization,
# run iperf3 TCP through it while probing RTT again, report goodput against the most
# possible (rate x 1448/1500 for 1500-byte IP packets carrying 1448-byte payloads), linkem's
# CPU and its stats. DURATION must be >= 4.
# Everything it creates (namespaces ll-$LL_ID-*, processes) is removed on exit, Ctrl-C or
# error. Env: LL_ID (default lksmoke), LINKEM (binary), DURATION (iperf3 s, default 10),
# PROBES (RTT probes, default 1000), LINKEM_ARGS (extra args for `linkem run`).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
LINKEM="${LINKEM:-$ROOT/target/release/linkem}"
ID="${LL_ID:-lksmoke}"
C="ll-$ID-client"; R="ll-$ID-router"; S="ll-$ID-server"
DURATION="${DURATION:-10}"
PROBES="${PROBES:-1000}"
WORK="$(mktemp -d /tmp/linkem-smoke.XXXXXX)"
PIDS=()
CLEANED=0
OWNS_TESTBED=0   # set once we know the names are ours: never delete someone else's
RUNTIME_DIR="${LONGLOOK_RUNTIME_DIR:-/run/longlook}"
RECORD="$RUNTIME_DIR/$ID.json"

cleanup() {
    [ "$CLEANED" = 1 ] && return
    CLEANED=1
    for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ "$OWNS_TESTBED" = 1 ]; then
        for n in "$C" "$R" "$S"; do ip netns del "$n" 2>/dev/null || true; done
        rm -f "$RECORD"
    fi
    echo "smoke: cleaned up (logs in $WORK)" >&2
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[ -x "$LINKEM" ] || { echo "smoke: build first: cargo build --release -p linkem" >&2; exit 1; }
for n in "$C" "$R" "$S"; do
    if ip netns list | grep -qw "$n"; then echo "smoke: $n exists; remove it or set LL_ID" >&2; exit 1; fi
done
[ -e "$RECORD" ] && { echo "smoke: $RECORD exists; another run owns $ID? set LL_ID" >&2; exit 1; }
OWNS_TESTBED=1

# Register the testbed like longlook's Python testbed does (python/longlook/testbed/
# ownership.py), so a concurrent `longlook clean` sees an owner alive and leaves it alone.
register() {
    mkdir -p "$RUNTIME_DIR"
    local started
    started=$(awk '{sub(/.*\) /, ""); print $20}' "/proc/$$/stat")
    printf '{"id": "%s", "namespaces": ["%s", "%s", "%s"], "owner_pid": %d, "owner_started": %d, "workdir": "%s"}\n' \
        "$ID" "$C" "$R" "$S" "$$" "$started" "$WORK" >"$RECORD.tmp"
    mv "$RECORD.tmp" "$RECORD"
}

setup() {
    register
    for n in "$C" "$R" "$S"; do ip netns add "$n"; ip -n "$n" link set lo up; done
    ip link add c0 netns "$C" type veth peer name r0 netns "$R"
    ip link add s0 netns "$S" type veth peer name r1 netns "$R"
    ip -n "$C" addr add 198.18.1.2/24 dev c0
    ip -n "$R" addr add 198.18.1.1/24 dev r0
    ip -n "$R" addr add 198.18.2.1/24 dev r1
    ip -n "$S" addr add 198.18.2.2/24 dev s0
    ip -n "$C" link set c0 up; ip -n "$R" link set r0 up; ip -n "$R" link set r1 up; ip -n "$S" link set s0 up
    ip -n "$C" route add default via 198.18.1.1
    ip -n "$S" route add default via 198.18.2.1
    ip netns exec "$R" sysctl -qw net.ipv4.ip_forward=1
    for pair in "$C c0" "$R r0" "$R r1" "$S s0"; do
        set -- $pair
        ip netns exec "$1" ethtool -K "$2" tso off gso off gro off tx-udp-segmentation off >/dev/null 2>&1 ||
            ip netns exec "$1" ethtool -K "$2" tso off gso off gro off >/dev/null
    done
    for n in "$C" "$S"; do   # large TCP windows for the high-rate case (per-namespace sysctls)
        ip netns exec "$n" sysctl -qw net.ipv4.tcp_rmem="4096 131072 67108864" net.ipv4.tcp_wmem="4096 131072 67108864"
    done
    ip netns exec "$S" iperf3 -s -B 198.18.2.2 >"$WORK/iperf3-server.log" 2>&1 & PIDS+=($!)
    ip netns exec "$S" python3 "$HERE/udp_rtt.py" echo --bind 198.18.2.2:7001 & PIDS+=($!)
    sleep 0.5
    # RTT of the bare path (kernel forwarding, probe overhead): subtracted from linkem's.
    BASE_RTT=$(ip netns exec "$C" python3 "$HERE/udp_rtt.py" probe --target 198.18.2.2:7001 --count "$PROBES" --interval-ms 5)
    echo "baseline (no linkem): $BASE_RTT"
    ip netns exec "$R" iptables -t mangle -A FORWARD -i r0 -j NFQUEUE --queue-num 0
    ip netns exec "$R" iptables -t mangle -A FORWARD -i r1 -j NFQUEUE --queue-num 1
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

run_case() {
    local rate="$1" delay="$2" buffer="$3" streams="${4:-1}"
    local cfg="$WORK/link-$rate-$delay-$buffer.toml" stats="$WORK/stats-$rate-$delay-$buffer.json"
    { echo "rate_mbit = $rate"; echo "delay_ms = $delay"; [ "$buffer" != 0 ] && echo "buffer_bytes = $buffer"; } >"$cfg"
    "$LINKEM" validate --config "$cfg" >/dev/null
    local out="$WORK/linkem-$rate.out"
    # shellcheck disable=SC2086
    ip netns exec "$R" "$LINKEM" run --config "$cfg" --stats "$stats" --seed 1 ${LINKEM_ARGS:-} >"$out" 2>"$WORK/linkem-$rate.err" &
    local lpid=$!; PIDS+=("$lpid")
    for _ in $(seq 50); do grep -q '^ready$' "$out" 2>/dev/null && break; sleep 0.1; done
    grep -q '^ready$' "$out" || { echo "smoke: linkem not ready"; cat "$WORK/linkem-$rate.err"; exit 1; }

    local rtt
    rtt=$(ip netns exec "$C" python3 "$HERE/udp_rtt.py" probe --target 198.18.2.2:7001 --count "$PROBES" --interval-ms 5)
    local t0 c0 t1 c1
    # RTT probes during the transfer (from 2 s in): they see the bottleneck queue too.
    local loaded_file="$WORK/rtt-loaded-$rate.json"
    ( sleep 2; ip netns exec "$C" python3 "$HERE/udp_rtt.py" probe --target 198.18.2.2:7001 \
        --count $(( (DURATION - 3) * 200 )) --interval-ms 5 >"$loaded_file" ) &
    local probe_pid=$!
    t0=$(date +%s.%N); c0=$(cpu_ticks "$lpid")
    ip netns exec "$C" iperf3 -c 198.18.2.2 -t "$DURATION" -P "$streams" -J >"$WORK/iperf3-$rate.json" || true
    t1=$(date +%s.%N); c1=$(cpu_ticks "$lpid")
    wait "$probe_pid" || true
    local loaded
    loaded=$(cat "$loaded_file")
    kill -TERM "$lpid"; local rc=0; wait "$lpid" || rc=$?
    local goodput
    goodput=$(jq '.end.sum_received.bits_per_second / 1e6' "$WORK/iperf3-$rate.json")
    python3 - "$rate" "$delay" "$buffer" "$streams" "$goodput" "$rtt" "$c0" "$c1" "$t0" "$t1" "$rc" "$stats" "$BASE_RTT" "$loaded" <<'PY'
import json, sys
rate, delay, buf, streams, goodput, rtt, c0, c1, t0, t1, rc, stats, base, loaded = sys.argv[1:]
rate, delay, goodput = float(rate), float(delay), float(goodput)
rtt = json.loads(rtt)["rtt_ms"]
base = json.loads(base)["rtt_ms"]
loaded_doc = json.loads(loaded)
loaded = loaded_doc["rtt_ms"]
# 64-byte probe payload = 92-byte IP packets, serialized once per direction
expect = 2 * delay + 2 * 92 * 8 / (rate * 1e3)
best = min(rate, 1e9) * 1448 / 1500
cpu = (int(c1) - int(c0)) / 100 / (float(t1) - float(t0)) * 100
st = json.load(open(stats))
up, down = st["directions"]["up"], st["directions"]["down"]
print(f"case rate={rate:g}Mbit delay={delay:g}ms buffer={buf} streams={streams}")
print(f"  idle RTT: mean {rtt['mean']:.3f} ms, sd {rtt['sd']:.3f}, p50 {rtt['p50']:.3f}, p99 {rtt['p99']:.3f}, max {rtt['max']:.3f}")
added = rtt['mean'] - base['mean']
print(f"  added RTT (minus bare path {base['mean']:.3f}): mean {added:.3f} ms, expected {expect:.3f}, error {added-expect:+.3f};"
      f" sd {rtt['sd']:.3f} vs bare {base['sd']:.3f}; p50 error {rtt['p50']-base['p50']-expect:+.3f}")
print(f"  RTT during the transfer (with queueing): mean {loaded['mean']:.3f} p50 {loaded['p50']:.3f} p99 {loaded['p99']:.3f} max {loaded['max']:.3f}; probes lost {loaded_doc['sent']-loaded_doc['received']}/{loaded_doc['sent']}")
if rate < 5000:
    print(f"  TCP goodput: {goodput:.2f} Mbit/s = {100*goodput/best:.1f}% of the most possible {best:.2f}")
else:
    print(f"  TCP goodput: {goodput:.1f} Mbit/s (rate effectively unlimited)")
print(f"  linkem CPU during iperf3: {cpu:.0f}% of one core; exit code {rc}")
for name, d in (("up", up), ("down", down)):
    lat = d["release_lateness_us"]
    print(f"  {name}: packets {d['packets']} drops buf {d['dropped_buffer']} late>1ms {d['late_releases_over_1ms']} "
          f"lateness mean {lat['mean']}us max {lat['max']}us errors {d['errors']}")
PY
}

# `features`: each model checked live against its configured value, PASS/FAIL per line.
FAILS=0
start_linkem() {  # config-file stats-file
    # shellcheck disable=SC2086
    ip netns exec "$R" "$LINKEM" run --config "$1" --stats "$2" --seed 1 ${LINKEM_ARGS:-} >"$WORK/f.out" 2>>"$WORK/f.err" &
    LPID=$!; PIDS+=("$LPID")
    for _ in $(seq 50); do grep -q '^ready$' "$WORK/f.out" 2>/dev/null && break; sleep 0.1; done
}
stop_linkem() { kill -TERM "$LPID"; wait "$LPID" || true; }
PORT=5300
iperf() {  # iperf3 client args...: a fresh one-off server on a new port each time
    PORT=$((PORT + 1))
    ip netns exec "$S" timeout 30 iperf3 -s -1 -B 198.18.2.2 -p "$PORT" >/dev/null 2>&1 &
    local spid=$!; PIDS+=("$spid")
    sleep 0.3
    ip netns exec "$C" timeout 30 iperf3 -c 198.18.2.2 -p "$PORT" "$@" || true
    kill "$spid" 2>/dev/null || true
}
check() {  # name value lo hi
    if python3 -c "import sys; v,lo,hi=map(float,sys.argv[1:]); sys.exit(0 if lo<=v<=hi else 1)" "$2" "$3" "$4"; then
        echo "  PASS $1: $2 in [$3, $4]"
    else
        echo "  FAIL $1: $2 not in [$3, $4]"; FAILS=$((FAILS + 1))
    fi
}
jqf() { jq -r "$1" "$2"; }
run_features() {
    local f="$WORK/feat"
    echo "features:"
    printf 'rate_mbit = 50\ndelay_ms = 10\nbuffer_packets = 1000\n[up]\nloss = 0.02\n[up.reorder]\nprobability = 0.05\nahead_ms = 1.0\n[down.gilbert_elliott]\np = 0.01\nr = 0.25\nloss_bad = 0.5\n' >"$f-loss.toml"
    start_linkem "$f-loss.toml" "$f-loss.json"
    iperf -u -b 20M -l 1200 -t 5 >/dev/null 2>&1
    iperf -u -b 20M -l 1200 -t 5 -R >/dev/null 2>&1
    stop_linkem
    check "Bernoulli loss 2% (up)" "$(jqf '.directions.up | .dropped_loss / .received' "$f-loss.json")" 0.016 0.024
    check "reordered fraction 5% (up)" "$(jqf '.directions.up | .reordered / .packets' "$f-loss.json")" 0.04 0.06
    check "Gilbert-Elliott loss 1.92% (down, bursty)" "$(jqf '.directions.down | .dropped_loss / .received' "$f-loss.json")" 0.008 0.035

    printf 'rate_mbit = 100\ndelay_ms = 5\n[up.middlebox]\nudp_rate_mbit = 5\n' >"$f-police.toml"
    start_linkem "$f-police.toml" "$f-police.json"
    iperf -u -b 30M -l 1200 -t 4 -J >"$f-police-iperf.json" 2>/dev/null
    stop_linkem
    check "UDP policed to 5 Mbit (IP) = 4.886 Mbit payload" "$(jqf '.end.sum_received.bits_per_second / 1e6' "$f-police-iperf.json")" 4.6 5.1

    printf 'rate_mbit = 100\ndelay_ms = 5\n[up.middlebox]\nblock_udp_after_packets = 100\n' >"$f-block.toml"
    start_linkem "$f-block.toml" "$f-block.json"
    iperf -u -b 10M -l 1200 -t 2 >/dev/null 2>&1
    stop_linkem
    check "UDP flow blocked after 100 packets" "$(jqf '[.flows[] | select(.direction == "up" and .proto == "udp")] | max_by(.packets) | .packets' "$f-block.json")" 100 100

    python3 -c "open('$f.mahi','w').write(''.join(f'{ms}\n' for ms in range(1, 1001)))"  # 12 Mbit
    printf 'trace = "%s"\ndelay_ms = 10\nbuffer_bytes = 100000\n' "$f.mahi" >"$f-trace.toml"
    start_linkem "$f-trace.toml" "$f-trace.json"
    iperf -t 6 -J >"$f-trace-iperf.json" 2>/dev/null
    stop_linkem
    check "TCP over a 12 Mbit trace (most possible 11.58)" "$(jqf '.end.sum_received.bits_per_second / 1e6' "$f-trace-iperf.json")" 10.8 11.6

    printf 'rate_mbit = 1000\ndelay_ms = 20\njitter_ms = 2\n' >"$f-jitter.toml"
    start_linkem "$f-jitter.toml" "$f-jitter.json"
    local j
    j=$(ip netns exec "$C" python3 "$HERE/udp_rtt.py" probe --target 198.18.2.2:7001 --count 1000 --interval-ms 5)
    stop_linkem
    # sum of two uniform +-2 ms: triangular on +-4 ms, IQR 2.343 ms (robust to host stalls)
    check "RTT IQR with uniform +-2 ms jitter each way (theory 2.343)" "$(echo "$j" | jq '.rtt_ms.p75 - .rtt_ms.p25')" 2.0 2.7
    check "RTT median with jitter (40 ms)" "$(echo "$j" | jq .rtt_ms.p50)" 39.8 40.5
    echo "features: $FAILS failed"
}

setup
if [ "${1:-}" = features ]; then
    run_features
    [ "$FAILS" = 0 ]
    exit
fi
CASES=("$@")
[ ${#CASES[@]} -eq 0 ] && CASES=(10:20:100000 100:20:600000 10000:20:0:4)
for c in "${CASES[@]}"; do
    IFS=: read -r rate delay buffer streams <<<"$c"
    run_case "$rate" "$delay" "$buffer" "${streams:-1}"
done
