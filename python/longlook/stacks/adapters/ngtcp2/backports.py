"""A newer ngtcp2 beside Debian's own: its packages from bookworm-backports, fetched by apt
into a folder of their own and unpacked there (`dpkg -x`), never installed. The system's
gtlsclient and gtlsserver stay Debian's 0.12.1; the backported ones run from the folder with
its libraries first on the loader's path.

apt reads a sources list and a package index of its own under the folder, so the host's apt
configuration is not touched. The downloads are checked against the archive's signed index
(apt does, with the system's Debian keyring). Backports keeps one version of a package at a
time: when a pinned one is gone from it, the error says so."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from ....errors import LonglookError

SOURCE = "deb http://deb.debian.org/debian bookworm-backports main"
# each release: the packages it takes (programs, then the libraries they need beyond bookworm's)
PACKAGES = {
    "1.11.0": {
        "ngtcp2-client": "1.11.0-1~bpo12+1",
        "ngtcp2-server": "1.11.0-1~bpo12+1",
        "libngtcp2-16": "1.11.0-1~bpo12+1",
        "libngtcp2-crypto-gnutls8": "1.11.0-1~bpo12+1",
        "libnghttp3-9": "1.8.0-1~bpo12+1",
    },
}
LIBS = "usr/lib/x86_64-linux-gnu"
PROGRAMS = {"gtlsclient": "usr/bin/gtlsclient", "gtlsserver": "usr/sbin/gtlsserver"}


def program(root: Path, name: str) -> Path:
    return root / PROGRAMS[name]


def library_path(root: Path) -> str:
    return str(root / LIBS)


def unpacked(root: Path) -> bool:
    return all(program(root, name).is_file() for name in PROGRAMS)


def _apt(apt_dir: Path) -> list[str]:
    return [
        "-o",
        f"Dir::Etc::sourcelist={apt_dir / 'sources.list'}",
        "-o",
        "Dir::Etc::sourceparts=-",
        "-o",
        f"Dir::State::Lists={apt_dir / 'lists'}",
        "-o",
        f"Dir::Cache={apt_dir / 'cache'}",
        "-o",
        "APT::Sandbox::User=root",  # the download folder is root's
    ]


def _run(argv: list[str], what: str, hint: str) -> None:
    p = subprocess.run(argv, capture_output=True, text=True)
    if p.returncode != 0:
        said = (p.stderr.strip() or p.stdout.strip()).splitlines()
        raise LonglookError(f"{what} failed: {said[-1] if said else f'exit status {p.returncode}'}", hint=hint)


def fetch(version: str, root: Path) -> None:
    """Download `version`'s packages and unpack them into `root` (a no-op when done)."""
    if unpacked(root):
        return
    packages = PACKAGES[version]
    hint = (
        f"bookworm-backports must still carry {', '.join(f'{p} {v}' for p, v in packages.items())}; "
        "if a newer backport replaced one, pin it in stacks/adapters/ngtcp2/backports.py"
    )
    with tempfile.TemporaryDirectory(prefix="longlook-backports-") as tmp:
        apt_dir, debs = Path(tmp) / "apt", Path(tmp) / "debs"
        (apt_dir / "lists" / "partial").mkdir(parents=True)
        (apt_dir / "cache" / "archives" / "partial").mkdir(parents=True)
        debs.mkdir()
        (apt_dir / "sources.list").write_text(SOURCE + "\n")
        _run(["apt-get", "-q", *_apt(apt_dir), "update"], "apt-get update (bookworm-backports)", hint)
        wanted = [f"{p}={v}" for p, v in packages.items()]
        argv = ["apt-get", "-q", *_apt(apt_dir), "download", *wanted]
        p = subprocess.run(argv, capture_output=True, text=True, cwd=debs)
        if p.returncode != 0:
            said = p.stderr.strip().splitlines()
            raise LonglookError(f"apt-get download of ngtcp2 {version} failed: {said[-1] if said else ''}", hint=hint)
        staging = root.with_name(root.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        for deb in sorted(debs.glob("*.deb")):
            _run(["dpkg-deb", "-x", str(deb), str(staging)], f"unpacking {deb.name}", hint)
        if not unpacked(staging):
            raise LonglookError(f"ngtcp2 {version}: the packages hold no gtlsclient and gtlsserver", hint=hint)
        shutil.rmtree(root, ignore_errors=True)
        staging.rename(root)  # whole or not at all: an interrupted fetch leaves no half folder
