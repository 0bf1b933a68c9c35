#!/usr/bin/env bash
# Set up, then run the `quick` scenario (a small real QUIC-vs-TCP experiment through the
# emulated link) and write its report: results/quick/report.html.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
out=${1:-results/quick}
rc=0
.venv/bin/longlook run scenarios/quick.toml --out "$out" || rc=$?
# exit 1 = some cell lacks the runs a comparison needs: the report shows what did finish
if [ "$rc" -le 1 ]; then .venv/bin/longlook report "$out"; fi
exit "$rc"
