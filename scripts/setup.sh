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
packages=(iproute2 ethtool iptables nftables iperf3 procps graphviz chromium ffmpeg)
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
  .venv/bin/pip install -q -e '.[test,cluster]'  # cluster: Ray, for --executor ray and its tests
  # E-Divisive (longlook compare --history): its metadata caps numpy<2 and Python<3.12,
  # which would downgrade numpy for all of longlook; it runs on ours, so no deps (pyproject
  # lists what it imports)
  .venv/bin/pip install -q --no-deps signal-processing-algorithms==2.1.6
  touch .venv/.longlook-installed
fi

# ---- QUIC stacks (issue 14) -------------------------------------------------------------
# Other QUIC stacks as adapters (python/longlook/stacks/<name>/): ngtcp2 from Debian, the
# others built once per version under target/stacks/<name>-<version>/ (aioquic from PyPI,
# quic-go from the Go module proxy, quiche/tquic from crates.io). Cached: a no-op when built.
stack_packages=(ngtcp2-server ngtcp2-client libclang-dev)
stack_missing=()
for p in "${stack_packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || stack_missing+=("$p"); done
if [ ${#stack_missing[@]} -gt 0 ]; then
  apt_install "${stack_missing[@]}"
fi
echo "setup: QUIC stacks (python -m longlook.stacks.install --all-versions)"
.venv/bin/python -m longlook.stacks.install --all-versions
# ---- end of QUIC stacks -----------------------------------------------------------------
# ---- video (issue 15) -------------------------------------------------------------------
# dash.js for the video kind's browser player, pinned, from npm; its dist file is shipped as
# package data (python/longlook/kinds/video/static/), never fetched at run time.
DASHJS_VERSION=4.7.4
dashjs_dir=python/longlook/kinds/video/static
if ! grep -qs "^$DASHJS_VERSION\$" "$dashjs_dir/dashjs.version"; then
  if ! command -v npm >/dev/null; then apt_install npm; fi
  echo "setup: dash.js $DASHJS_VERSION (npm)"
  tmp=$(mktemp -d)
  npm install --prefix "$tmp" --no-audit --no-fund --ignore-scripts --silent "dashjs@$DASHJS_VERSION"
  mkdir -p "$dashjs_dir"
  cp "$tmp/node_modules/dashjs/dist/dash.all.min.js" "$dashjs_dir/dash.all.min.js"
  cp "$tmp/node_modules/dashjs/LICENSE.md" "$dashjs_dir/dashjs.LICENSE.md" 2>/dev/null || true
  echo "$DASHJS_VERSION" > "$dashjs_dir/dashjs.version"
  rm -rf "$tmp"
fi
# ---- end of video -----------------------------------------------------------------------
echo "setup: done"
