#!/usr/bin/env bash
# Everything longlook needs on a fresh Debian machine, idempotent and quick when already done:
# system packages, tracefs, the Rust binaries (release), the Python package in .venv.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
  echo "longlook set-up needs root (network namespaces, apt): run it with sudo" >&2
  exit 2
fi

# System tools the testbed drives. apt can fail mid-way on a first install and succeed when
# re-run, so each install is retried once.
packages=(iproute2 ethtool iptables nftables iperf3 procps)
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null || apt-get install -y -qq "${missing[@]}" >/dev/null
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
echo "setup: building Rust binaries (release)"
cargo build --release --workspace --quiet

# Python package and its tools.
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
if ! .venv/bin/python -c "import longlook, pytest" 2>/dev/null \
   || [ pyproject.toml -nt .venv/.longlook-installed ]; then
  echo "setup: installing the Python package into .venv"
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -e '.[test]'
  touch .venv/.longlook-installed
fi
echo "setup: done"
