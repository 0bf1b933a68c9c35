"""`longlook reproduce --only kakhki-fig6b-few` end to end on the testbed, with the claim's
scenario reduced further (3 rounds of one 1 MB page at 50 Mbit/s: seconds of traffic): real
page loads through linkem, the claim judged from them, and a second pass that only reads."""

import json

from typer.testing import CliRunner

from longlook.analyses.reproduce import registry
from longlook.analyses.reproduce.claims import ShippedScenario
from longlook.cli import app
from testbed_helpers import needs_testbed

TINY = {
    "rounds": 3,
    "links[*]": {"rate_mbit": [50]},
    "workloads": ["1x1m"],
    # a busy machine flags runs (stalls); this test is about the pipeline, not fidelity
    "fidelity": {"exclude_flagged": False, "retry_flagged": False},
}


@needs_testbed("linkem", "endpoint")
def test_reproduce_one_claim_end_to_end_then_read_again(tmp_path, monkeypatch):
    shipped = registry.SCENARIOS["kakhki-fig6b-object-count"]
    monkeypatch.setitem(registry.SCENARIOS, shipped.name, ShippedScenario(shipped.file, TINY, "tiny"))
    args = ["reproduce", "--only", "kakhki-fig6b-few", "--budget", "short", "--out", str(tmp_path), "--no-link-check"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "reproduction.json").read_text())
    (claim,) = doc["claims"]
    assert claim["id"] == "kakhki-fig6b-few"
    assert claim["verdict"] in ("holds", "does not hold", "inconclusive"), claim
    assert claim["n"] == "3/3" and claim["p"] is not None
    (cell,) = claim["cells"]
    assert cell["mean_a"] > 100 and cell["mean_b"] > 100  # 1 MB at 50 Mbit/s takes > 160 ms
    (sc,) = doc["scenarios"]
    assert sc["status"] == "ran" and sc["runs"] == 6
    assert (tmp_path / "kakhki-fig6b-object-count" / "longlook.duckdb").exists()
    assert 'data-verdict="' + claim["verdict"] + '"' in (tmp_path / "reproduction.html").read_text()

    # resume semantics: the complete experiment is read, nothing measured again
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    again = json.loads((tmp_path / "reproduction.json").read_text())
    assert again["scenarios"][0]["status"] == "read" and again["scenarios"][0]["runs"] == 0
    assert again["claims"][0]["number"] == claim["number"]


@needs_testbed("linkem", "endpoint")
def test_a_reproduction_carried_to_a_machine_without_its_results_reads_the_same(tmp_path, monkeypatch):
    """--archive: the scenario packed after it ran; a results folder that lost it (another
    machine) unpacks it and judges the claim from it exactly as the first did."""
    import shutil

    shipped = registry.SCENARIOS["kakhki-fig6b-object-count"]
    monkeypatch.setitem(registry.SCENARIOS, shipped.name, ShippedScenario(shipped.file, TINY, "tiny"))
    out, archive = tmp_path / "out", tmp_path / "archive"
    base = ["reproduce", "--only", "kakhki-fig6b-few", "--budget", "short", "--out", str(out), "--no-link-check"]
    res = CliRunner().invoke(app, [*base, "--archive", str(archive)])
    assert res.exit_code == 0, res.output
    first = json.loads((out / "reproduction.json").read_text())["claims"][0]
    assert (archive / "kakhki-fig6b-object-count.tar.xz").exists()
    shutil.rmtree(out)
    res = CliRunner().invoke(app, [*base, "--archive", str(archive), "--no-run"])
    assert res.exit_code == 0, res.output
    carried = json.loads((out / "reproduction.json").read_text())
    assert carried["scenarios"][0]["status"] == "read"
    assert carried["claims"][0]["number"] == first["number"] and carried["claims"][0]["p"] == first["p"]
    assert (out / "kakhki-fig6b-object-count" / "CARRIED").exists()
