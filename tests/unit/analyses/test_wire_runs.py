"""A run's capture judged by an interop case (analyses/wire_runs): the verdict of the recorded
captures, kept beside the run's files so a second report does not read the pcap again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from longlook.analyses.wire_runs import judge_run, reader_version
from longlook.errors import LonglookError
from repo_paths import DATA

CAPTURES = DATA / "captures"
PORT = 44433  # the recordings' server port (tests/data/captures/SOURCE.md)


def _run(experiment: Path, name: str) -> dict:
    run_dir = experiment / "runs" / name
    run_dir.mkdir(parents=True)
    shutil.copy(CAPTURES / f"{name}.pcapng", run_dir / "capture.pcap")
    shutil.copy(CAPTURES / f"{name}.keylog", run_dir / "keys.log")
    return {
        "artifacts": json.dumps({"pcap": f"runs/{name}/capture.pcap", "keylog": f"runs/{name}/keys.log"}),
        "details": json.dumps({"url": f"https://127.0.0.1:{PORT}/bulk/1m"}),
    }


@pytest.mark.skipif(shutil.which("tshark") is None, reason="needs tshark (scripts/setup.sh installs it)")
def test_a_rebound_run_is_judged_from_its_capture_and_the_verdict_is_kept(tmp_path: Path):
    moved, stayed = _run(tmp_path, "rebind-port-pass"), _run(tmp_path, "rebind-port-fail")
    first = judge_run(tmp_path, moved, "rebind-port")
    assert first["verdict"] == "passed", first
    assert judge_run(tmp_path, stayed, "rebind-port")["verdict"] == "failed"
    kept = tmp_path / "runs" / "rebind-port-pass" / "wire-rebind-port.json"
    assert json.loads(kept.read_text()) == {**first, "reader": reader_version()}
    (tmp_path / "runs" / "rebind-port-pass" / "capture.pcap").unlink()  # the kept verdict answers
    assert judge_run(tmp_path, moved, "rebind-port") == first


@pytest.mark.skipif(shutil.which("tshark") is None, reason="needs tshark (scripts/setup.sh installs it)")
def test_a_verdict_kept_by_another_reader_is_judged_again(tmp_path: Path):
    run = _run(tmp_path, "rebind-port-pass")
    kept = tmp_path / "runs" / "rebind-port-pass" / "wire-rebind-port.json"
    kept.write_text(json.dumps({"verdict": "failed", "evidence": "an older reader's", "reader": "0ld"}))
    assert judge_run(tmp_path, run, "rebind-port")["verdict"] == "passed"
    kept.write_text(json.dumps({"verdict": "failed", "evidence": "kept before readers had versions"}))
    assert judge_run(tmp_path, run, "rebind-port")["verdict"] == "passed"
    assert json.loads(kept.read_text())["reader"] == reader_version()


def test_a_run_without_a_capture_has_nothing_to_judge_and_a_bad_case_is_one_error(tmp_path: Path):
    assert judge_run(tmp_path, {"artifacts": {}, "details": {"url": "https://x:1/"}}, "rebind-port") is None
    with pytest.raises(LonglookError, match="unknown interop case"):
        judge_run(tmp_path, {}, "rebind-everything")


def test_a_carried_run_is_judged_by_its_kept_verdict_or_not_at_all(tmp_path: Path):
    # core.carry leaves captures behind: the verdict read before the run travelled answers;
    # without one the case is not measurable, and nothing is kept in its place
    run = {
        "artifacts": {"pcap": "runs/r/capture.pcap", "keylog": "runs/r/keys.log"},
        "details": {"url": f"https://127.0.0.1:{PORT}/bulk/1m"},
    }
    folder = tmp_path / "runs" / "r"
    folder.mkdir(parents=True)
    kept = {"verdict": "passed", "evidence": "read on the machine that measured"}
    (folder / "wire-rebind-port.json").write_text(json.dumps({**kept, "reader": reader_version()}))
    assert judge_run(tmp_path, run, "rebind-port") == kept
    missing = judge_run(tmp_path, run, "rebind-addr")
    assert missing["verdict"] == "not measurable"
    assert "capture.pcap is not here" in missing["evidence"] and "longlook again" in missing["evidence"]
    assert not (folder / "wire-rebind-addr.json").exists()
