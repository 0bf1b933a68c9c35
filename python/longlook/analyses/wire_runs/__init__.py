"""A run's interop case judged from its capture: the router's pcap (`[capture] pcap =
"full"`, so the QUIC payloads are there) decrypted with the run's key log (`keylog = true`)
by the wire package's reader, then one of its cases (wire.cases). What a report needs of the
wire without re-reading it: the verdict is kept beside the run's files (`wire-<case>.json`),
so a second report reads a few bytes, not the pcap."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

from ...errors import LonglookError
from ...wire.cases import CASES, check
from ...wire.tshark import read_capture

CACHE = "wire-{case}.json"


def _dict(value) -> dict:
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and value:
        return json.loads(value)
    return {}


def judge_run(experiment: Path, run: dict, case: str) -> dict | None:
    """{"verdict", "evidence"} of `case` on one run's capture; None when the run kept no
    pcap and key log (nothing to judge) or names no server port. The caller makes sure the
    pcap is a "full" one (`[capture] pcap`): a headers-only pcap decrypts nothing. A capture
    tshark cannot read is "not measurable" with its reason, never "failed"."""
    if case not in CASES:
        raise LonglookError(f"unknown interop case {case!r}", hint=f"one of: {', '.join(CASES)}")
    artifacts, details = _dict(run.get("artifacts")), _dict(run.get("details"))
    if "pcap" not in artifacts or "keylog" not in artifacts:
        return None
    port = urlsplit(details.get("url") or "").port
    if port is None:
        return None
    pcap = Path(experiment) / artifacts["pcap"]
    cache = pcap.parent / CACHE.format(case=case)
    if cache.is_file():
        return json.loads(cache.read_text())
    try:
        result = check(case, read_capture(pcap, Path(experiment) / artifacts["keylog"], port))
        out = {"verdict": result.verdict, "evidence": result.evidence}
    except LonglookError as e:
        out = {"verdict": "not measurable", "evidence": f"{e.message} ({e.hint})" if e.hint else e.message}
    cache.write_text(json.dumps(out))
    return out
