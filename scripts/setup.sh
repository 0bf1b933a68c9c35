#!/usr/bin/env bash
# What longlook's main job (scripts/quick.sh) needs on a fresh Debian machine, idempotent and
# quick when already done: system packages, tracefs, the Rust binaries (release), the Python
# package in .venv.
#
#   bash scripts/setup.sh               # the main job: our endpoint and linkem, nothing else
#   bash scripts/setup.sh --all-stacks  # also every other QUIC stack (quiche, tquic, quic-go,
#                                       # aioquic, ngtcp2, s2n-quic, kwik, msquic, gm-quic,
#                                       # go-x-net;
#                                       # ~33 min the first time)
#   bash scripts/setup.sh --all         # also Chromium, ffmpeg, dash.js, tshark, the test tools
#                                       # and Ray: everything the tests need (scripts/test.sh)
#
# Otherwise each is installed the first time a scenario needs it (before its grid starts, with
# progress on stderr), or ahead of time by `longlook stacks install NAME` (or --all); cached.
set -euo pipefail
cd "$(dirname "$0")/.."

all_stacks=0
browser=0
for arg in "$@"; do
  case "$arg" in
    --all-stacks) all_stacks=1 ;;
    --all) all_stacks=1; browser=1 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup: unknown option $arg (known: --all-stacks, --all)" >&2; exit 2 ;;
  esac
done

if [ "$(id -u)" -ne 0 ]; then
  echo "longlook set-up needs root (network namespaces, apt): run it with sudo" >&2
  exit 2
fi

# System tools the testbed drives; with --all also Debian's Chromium for the browser clients
# (never a downloaded build) and ffmpeg for the video kind (otherwise the first scenario that
# uses them installs them). apt once failed mid-way on a first install (a dpkg archive
# missing) and worked when re-run, so installs are retried, repairing dpkg in between.
packages=(iproute2 ethtool iptables nftables iperf3 procps graphviz)
if [ "$browser" -eq 1 ]; then packages+=(chromium ffmpeg); fi
# tshark decrypts a run's pcap with its key log: the capture test, `longlook matrix` and the
# report's path validation (without it those say "not measurable" and how to install it)
if [ "$browser" -eq 1 ]; then packages+=(tshark); fi
apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  local attempt
  for attempt in 1 2 3; do
    echo "setup: installing $* (attempt $attempt of 3)"
    apt-get update -qq || true
    if apt-get install -y -qq "$@" >/dev/null; then return 0; fi
    dpkg --configure -a || true
    apt-get install -y -qq -f >/dev/null || true
    sleep 5
  done
  echo "setup: could not install $* (apt-get install -y $*)" >&2
  return 1
}
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  apt_install "${missing[@]}"
fi

# TCP congestion-state tracepoints (tcp:tcp_cong_state_set) live in tracefs.
if [ ! -d /sys/kernel/tracing/events ]; then
  mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || echo "setup: tracefs not mounted (TCP tracepoints unavailable)" >&2
fi

# Rust binaries: linkem, linkem-probe, endpoint.
if ! command -v cargo >/dev/null; then
  echo "setup: cargo not found; install Rust (rustup) first" >&2
  exit 2
fi
# The Rust build (CPU) and the Python package (mostly downloads) run side by side: on a
# fresh 2-core machine that saves about a minute of the main job's first result.
python_package() {
  # with --all also the test tools and Ray (the `cluster` extra, for --executor ray and its
  # tests), which the main job does not need
  if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
  fi
  local extras="" needs="import longlook"
  if [ "$browser" -eq 1 ]; then extras="[test,cluster]" needs="import longlook, pytest, nbclient, ray, ruff"; fi
  if ! .venv/bin/python -c "$needs" 2>/dev/null \
     || [ pyproject.toml -nt .venv/.longlook-installed ]; then
    echo "setup: installing the Python package${extras:+ with $extras} into .venv"
    .venv/bin/pip install -q --upgrade pip
    .venv/bin/pip install -q -e ".$extras"
    # E-Divisive (longlook compare --history): its metadata caps numpy<2 and Python<3.12,
    # which would downgrade numpy for all of longlook; it runs on ours, so no deps (pyproject
    # lists what it imports)
    .venv/bin/pip install -q --no-deps signal-processing-algorithms==2.1.6
    touch .venv/.longlook-installed
  fi
}
python_package > .venv-setup.log 2>&1 &
python_pid=$!
echo "setup: building Rust binaries (release), installing the Python package beside it"
rust_ok=0
cargo build --release --workspace --quiet || rust_ok=$?
python_ok=0
wait "$python_pid" || python_ok=$?
cat .venv-setup.log
rm -f .venv-setup.log
if [ "$rust_ok" -ne 0 ]; then echo "setup: the Rust build failed (cargo build --release --workspace)" >&2; exit "$rust_ok"; fi
if [ "$python_ok" -ne 0 ]; then echo "setup: the Python package did not install (see above)" >&2; exit "$python_ok"; fi

# ---- QUIC stacks, only with --all-stacks -------------------------------------------------
# Other QUIC stacks as adapters (python/longlook/stacks/adapters/<name>/): ngtcp2 from Debian, the
# others built once per version under ~/.cache/longlook/stacks/<name>-<version>/ (aioquic from
# PyPI, quic-go and go-x-net from the Go module proxy, quiche/tquic/s2n-quic/msquic/gm-quic from crates.io;
# each adapter's own Debian packages, e.g. msquic's libnuma-dev, first). Cached: a no-op when
# built. The main job uses none of them; a scenario that names one installs it on first use.
if [ "$all_stacks" -eq 1 ]; then
  stack_packages=(ngtcp2-server ngtcp2-client libclang-dev)
  stack_missing=()
  for p in "${stack_packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || stack_missing+=("$p"); done
  if [ ${#stack_missing[@]} -gt 0 ]; then
    apt_install "${stack_missing[@]}"
  fi
  echo "setup: QUIC stacks (python -m longlook.stacks.builds.install --all-versions)"
  .venv/bin/python -m longlook.stacks.builds.install --all-versions
fi
# ---- end of QUIC stacks -----------------------------------------------------------------
# ---- video, only with --all -----------------------------------------------------------
# dash.js for the video kind's browser player, pinned (kinds/video/dashjs.py), from npm; its
# dist file is copied into the package data (python/longlook/kinds/video/static/), never
# fetched at run time. Without --all, the first scenario with the dash.js player does this.
if [ "$browser" -eq 1 ]; then
  .venv/bin/python -c "from longlook.kinds.video.dashjs import install_dashjs; install_dashjs()"
fi
# ---- end of video -----------------------------------------------------------------------
echo "setup: done"
