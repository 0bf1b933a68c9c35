"""A run's interop case judged from its capture: the router's pcap (`[capture] pcap =
"full"`, so the QUIC payloads are there) decrypted with the run's key log (`keylog = true`)
by the wire package's reader, then one of its cases (wire.cases). What a report needs of the
wire without re-reading it: the verdict is kept beside the run's files (`wire-<case>.json`,
with the version of the reader that judged it), so a second report reads a few bytes, not
the pcap, until the reader changes. The same for a run's migration
fingerprint (wire.migration). So a run carried to another machine without its capture
(core.carry) is judged by what was read from it before it travelled."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

from ... import wire
from ...errors import LonglookError
from ...wire.cases import CASES, check
from ...wire.migration import fingerprint
from ...wire.tshark import read_capture
from ..kept import keep, read_kept, source_version

CACHE = "wire-{case}.json"
MIGRATION = "wire-migration.json"


def reader_version() -> str:
    """The wire package's version: a verdict kept by another is judged again."""
    return source_version(wire)


def run_field(value) -> dict:
    """A run's dict column (artifacts, details) as a dict, whether the frame holds it parsed or
    as its JSON text."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and value:
        return json.loads(value)
    return {}


def _capture_of(experiment: Path, run: dict) -> tuple[Path, Path, int] | None:
    """The run's pcap, key log and server port; None when it kept no pcap or key log or
    names no server port."""
    artifacts, details = run_field(run.get("artifacts")), run_field(run.get("details"))
    port = urlsplit(details.get("url") or "").port
    if "pcap" not in artifacts or "keylog" not in artifacts or port is None:
        return None
    return Path(experiment) / artifacts["pcap"], Path(experiment) / artifacts["keylog"], port


def migration_of_run(experiment: Path, run: dict) -> dict | None:
    """The run's migration fingerprint (wire.migration), kept beside its files as the cases'
    verdicts are; None when it kept nothing to read or tshark could not read it (the path
    changes section says why, from the interop case)."""
    found = _capture_of(experiment, run)
    if found is None:
        return None
    pcap, keylog, port = found
    cache = pcap.parent / MIGRATION
    if (kept := read_kept(cache, reader_version())) is not None:
        return kept
    if not pcap.is_file():  # carried without its capture (judge_cases)
        return None
    try:
        result = fingerprint(read_capture(pcap, keylog, port)).as_dict()
    except LonglookError:
        return None
    keep(cache, result, reader_version())
    return result


def judge_run(experiment: Path, run: dict, case: str) -> dict | None:
    """One case of `judge_cases`."""
    return judge_cases(experiment, run, (case,))[case]


def judge_cases(experiment: Path, run: dict, cases: tuple[str, ...]) -> dict[str, dict | None]:
    """case -> {"verdict", "evidence"} on one run's capture, the capture read once for all
    the cases not kept yet; None for every case when the run kept no pcap and key log
    (nothing to judge) or names no server port. The caller makes sure the pcap is a "full"
    one (`[capture] pcap`): a headers-only pcap decrypts nothing. A capture tshark cannot
    read is "not measurable" with its reason, never "failed"."""
    for case in cases:
        if case not in CASES:
            raise LonglookError(f"unknown interop case {case!r}", hint=f"one of: {', '.join(CASES)}")
    found = _capture_of(experiment, run)
    if found is None:
        return dict.fromkeys(cases)
    pcap, keylog, port = found
    out: dict[str, dict | None] = {}
    for case in cases:
        if (kept := read_kept(pcap.parent / CACHE.format(case=case), reader_version())) is not None:
            out[case] = kept
    todo = [c for c in cases if c not in out]
    if todo and not pcap.is_file():
        # a run carried from another machine (core.carry) left its capture there: it is judged
        # by the verdicts read from it before it travelled, or not at all; nothing is kept, so
        # the run measured again is read afresh
        why = (
            f"{pcap.name} is not here and no verdict of this reader was kept beside the run "
            "(a carried run leaves its capture behind); measure it again: `longlook again`"
        )
        return {c: out.get(c) or {"verdict": "not measurable", "evidence": why} for c in cases}
    if todo:
        try:
            capture = read_capture(pcap, keylog, port)
            results = {c: check(c, capture) for c in todo}
            fresh = {c: {"verdict": r.verdict, "evidence": r.evidence} for c, r in results.items()}
        except LonglookError as e:
            why = f"{e.message} ({e.hint})" if e.hint else e.message
            fresh = {c: {"verdict": "not measurable", "evidence": why} for c in todo}
        for c, result in fresh.items():
            keep(pcap.parent / CACHE.format(case=c), result, reader_version())
        out.update(fresh)
    return {c: out[c] for c in cases}
