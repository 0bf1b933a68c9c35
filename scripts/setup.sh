#!/usr/bin/env bash
# Everything longlook needs on a fresh Debian machine, idempotent and quick when already done:
# system packages, tracefs, the Rust binaries (release), the Python package in .venv.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
  echo "longlook set-up needs root (network namespaces, apt): run it with sudo" >&2
  exit 2
fi

# System tools the testbed drives, and Debian's Chromium for the browser client (never a
# downloaded build). apt once failed mid-way on a first install (a dpkg archive missing)
# and worked when re-run, so installs are retried, repairing dpkg in between.
packages=(iproute2 ethtool iptables nftables iperf3 procps graphviz chromium)
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
