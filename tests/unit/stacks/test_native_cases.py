"""The native client asked for an interop case: the flags it gets, and one clear error for a
case it has no flag for."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from longlook.errors import LonglookError
from longlook.stacks import endpoint


class _Testbed:
    profile = None
    host_buffers = None

    def exec_argv(self, ns, argv):
        return argv

    def check(self):
        pass


def _argv(monkeypatch, tmp_path: Path, **kw) -> list[str]:
    seen = []

    def run(argv, **_):
        seen.append(argv)
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(endpoint.subprocess, "run", run)
    monkeypatch.setattr(endpoint, "find_binary", lambda name: Path("/bin/endpoint"))
    monkeypatch.setattr(endpoint, "fetch_result", lambda *a, **k: None)
    endpoint.fetch(
        _Testbed(),
        url="https://198.18.2.2/x",
        protocol="h3",
        run_id="r",
        cert_dir=tmp_path,
        out=tmp_path / "fetch.json",
        timeout_s=5,
        **kw,
    )
    return seen[0]


def test_the_native_client_is_asked_for_key_update_and_chacha20_by_its_flags(monkeypatch, tmp_path):
    assert "--chacha20" in _argv(monkeypatch, tmp_path, client_case="chacha20")
    argv = _argv(monkeypatch, tmp_path, client_case="keyupdate")
    i = argv.index("--key-update-after-ms")
    assert int(argv[i + 1]) >= 40  # beyond the matrix's 20 ms round trip: the handshake is confirmed
    assert not {"--chacha20", "--key-update-after-ms"} & set(_argv(monkeypatch, tmp_path))


def test_a_case_the_native_client_has_no_flag_for_is_one_error(monkeypatch, tmp_path):
    with pytest.raises(LonglookError, match="cannot be asked for v2"):
        _argv(monkeypatch, tmp_path, client_case="v2")
    assert "v2" in endpoint.NATIVE_UNSUPPORTED
