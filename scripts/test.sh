#!/usr/bin/env bash
# Set up, then run every test: Rust unit/integration tests and the Python suite (which
# includes real-namespace testbed tests; they need root).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --all  # every QUIC stack, Chromium, ffmpeg, dash.js: the tests use them all
.venv/bin/lint-imports  # the floors (pyproject.toml [tool.importlinter])
.venv/bin/ruff format --check --quiet python tests  # one style (pyproject.toml [tool.ruff])
.venv/bin/ruff check --quiet python tests
# Rust style and lints (rustfmt.toml: 120 columns), then its tests
cargo fmt --all --check
cargo clippy --workspace --release --all-targets --quiet -- -D warnings
cargo test --release --workspace --quiet
.venv/bin/longlook clean
.venv/bin/python -m pytest -q "$@"
