"""`--executor ray` misuse gets one clear error (LonglookError with a hint) and writes
nothing: Ray missing, no cluster at --address, an unknown executor, --address without ray."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from longlook.cli import app
from longlook.errors import LonglookError
from testbed_helpers import REPO

SCENARIO = REPO / "scenarios" / "quick.toml"


def _error(tmp_path: Path, *args: str) -> str:
    r = CliRunner().invoke(app, ["run", str(SCENARIO), "--out", str(tmp_path / "x"), *args])
    assert isinstance(r.exception, LonglookError), f"{type(r.exception).__name__}: {r.exception}"
    assert r.exception.hint and not (tmp_path / "x").exists()
    return str(r.exception)


def test_without_ray_the_error_gives_the_pip_command(tmp_path: Path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    text = _error(tmp_path, "--executor", "ray")
    assert "Ray is not installed" in text and "pip install -e '.[cluster]'" in text


def test_no_cluster_at_the_address_writes_nothing(tmp_path: Path):
    pytest.importorskip("ray", reason="Ray is not installed (pip install -e '.[cluster]')")
    with socket.socket() as s:  # a port where nothing listens
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    text = _error(tmp_path, "--executor", "ray", "--address", f"127.0.0.1:{port}")
    assert f"--address 127.0.0.1:{port}: no Ray cluster answers there" in text


def test_unknown_executor_and_address_without_ray(tmp_path: Path):
    assert "--executor dask: unknown executor" in _error(tmp_path, "--executor", "dask")
    assert "--address is for --executor ray" in _error(tmp_path, "--address", "h:1")
