"""ngtcp2 at two releases: Debian's 0.12.1 (apt's programs on PATH) and bookworm-backports'
1.11.0 (unpacked into its own folder, run with its libraries first): each release's calls
name its own programs, and each says what it can be asked for."""

from __future__ import annotations

from pathlib import Path

from longlook.stacks.adapters.ngtcp2 import backports
from longlook.stacks.registry import resolve

from .test_chacha20_cases import fetch_call


def server_call(stack, tmp_path: Path):
    return stack.server_argv(
        port=4433, cert=tmp_path / "c.pem", key=tmp_path / "k.pem", root=tmp_path, qlog_dir=tmp_path, cc="cubic"
    )


def test_the_backport_runs_from_its_own_folder_with_its_libraries(tmp_path):
    new = resolve("ngtcp2@1.11.0")
    for call, program in ((server_call(new, tmp_path), "gtlsserver"), (fetch_call(new, tmp_path), "gtlsclient")):
        assert call.argv[0] == str(new.build_dir / backports.PROGRAMS[program])
        assert call.env["LD_LIBRARY_PATH"] == str(new.build_dir / backports.LIBS)
    assert fetch_call(new, tmp_path).env["SSLKEYLOGFILE"] == str(tmp_path / "keys.log")  # the key log kept
    old = resolve("ngtcp2@0.12.1")
    assert "LD_LIBRARY_PATH" not in server_call(old, tmp_path).env
    assert not server_call(old, tmp_path).argv[0].startswith(str(old.build_dir))


def test_each_release_says_what_it_can_be_asked_for(tmp_path):
    new, old = resolve("ngtcp2@1.11.0"), resolve("ngtcp2@0.12.1")
    assert "v2" in new.client_cases and "v2" not in new.unsupported_as_client
    asked = new.case_calls("v2", fetch_call(new, tmp_path), tmp_path).measured
    assert "--version=v2" in asked.argv
    assert "v2" not in old.client_cases and "draft" in old.unsupported_as_client["v2"]
    assert old.case_calls("v2", fetch_call(old, tmp_path), tmp_path) is None
    assert "bbr2" in old.ccs and "bbr2" not in new.ccs  # 1.x dropped it
    assert "bookworm-backports" in new.version_info() and "1.11.0-1~bpo12+1" in new.version_info()


def test_every_backported_release_pins_its_programs_package():
    for version, packages in backports.PACKAGES.items():
        assert packages["ngtcp2-client"].startswith(version) and packages["ngtcp2-server"].startswith(version)
        assert all("~bpo12" in v for v in packages.values())  # bookworm-backports builds
