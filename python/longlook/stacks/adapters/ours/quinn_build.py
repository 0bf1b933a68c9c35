"""Our endpoint (crates/endpoint, this checkout's code) built against one quinn-proto release:
what `ours@0.11.15` names (stacks/adapters/ours/).

The version is quinn-proto's, the crate where quinn's transport lives (congestion control,
pacing, loss recovery, ACKs, MTU discovery). It is paired with the quinn release that was
current for it: the newest quinn 0.11 whose quinn-proto requirement it meets (e.g. quinn-proto
0.11.13 -> quinn 0.11.9). quinn-udp and every other dependency stay at the workspace's
Cargo.lock, so only the quinn pair differs between two builds.

Supported: quinn-proto 0.11.13 and newer in the 0.11 line. Older releases lack the `qlog`
feature our endpoint is built with (quinn-proto gained it in 0.11.13). The `bloom` feature and
the address-validation token API (NEW_TOKEN) the endpoint also uses came one release earlier
(0.11.12), so every supported release has them. A release that does not
compile with this checkout's endpoint is one error naming the release and the supported range.

The build works on a copy, never on crates/endpoint: the endpoint's Cargo.toml and sources
and the workspace's Cargo.lock are copied into `<build dir>/src`, quinn's requirement is
relaxed to "0.11" there, `cargo update --precise` pins the pair, and cargo builds into a
target folder shared by these builds (`ours-cargo-target` in the stacks cache, an LRU entry
like any build), so the dependencies common to all releases compile once. Only the binary and
`build.json` (the exact quinn, quinn-proto, quinn-udp versions and the endpoint source's
digest) stay in the build folder. A build whose endpoint source differs from this
checkout's is stale, and is rebuilt on its next use.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

from packaging.version import InvalidVersion, Version

from ....binaries import REPO_ROOT
from ....errors import LonglookError
from ...builds.cache import touch

ENDPOINT = REPO_ROOT / "crates" / "endpoint"
OLDEST = Version("0.11.13")  # quinn-proto's first release with the `qlog` feature
LINE = Version("0.12")  # the 0.11 line: semver-compatible with the endpoint's code
SUPPORTED = f"quinn-proto {OLDEST} up to (not including) {LINE}"
TARGET_FOLDER = "ours-cargo-target"
BUILD_FILE = "build.json"


def check_supported(version: str) -> Version:
    """`version` as a supported quinn-proto release, or one error with the range."""
    try:
        v = Version(version)
    except InvalidVersion:
        v = None
    if v is None or not (OLDEST <= v < LINE):
        raise LonglookError(
            f"ours@{version}: our endpoint builds against {SUPPORTED} only",
            hint=f"ours@VERSION names a quinn-proto release, e.g. ours@{OLDEST} "
            f"(older ones lack the qlog feature the endpoint needs)",
        )
    return v


def source_digest() -> str:
    """SHA-256 (first 12 hex) of the endpoint's Cargo.toml and sources: a build from other
    code is another build."""
    h = hashlib.sha256()
    files = [ENDPOINT / "Cargo.toml", *sorted(p for p in (ENDPOINT / "src").rglob("*") if p.is_file())]
    for f in files:
        h.update(str(f.relative_to(ENDPOINT)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def quinn_for(proto: str, quinn_index: list[dict]) -> str:
    """The newest (not yanked) quinn 0.11 release whose quinn-proto requirement `proto` meets:
    the quinn that was current when that quinn-proto was."""
    p = Version(proto)
    best = None
    for entry in quinn_index:
        v = Version(entry["vers"])
        if entry.get("yanked") or v.is_prerelease or not (Version("0.11") <= v < LINE):
            continue
        req = next(
            (
                d["req"]
                for d in entry.get("deps", ())
                if (d.get("package") or d["name"]) == "quinn-proto" and d.get("kind", "normal") == "normal"
            ),
            None,
        )
        floor = _floor(req)
        if floor is not None and floor <= p and (best is None or v > best):
            best = v
    if best is None:
        raise LonglookError(
            f"ours@{proto}: no quinn 0.11 release accepts quinn-proto {proto}", hint=f"supported: {SUPPORTED}"
        )
    return str(best)


def _floor(req: str | None) -> Version | None:
    """The lowest version a cargo requirement like "^0.11.12" or "0.11" admits."""
    m = re.match(r"^\s*[\^~=]?\s*(\d+(?:\.\d+){0,2})\s*$", req or "")
    return Version(m.group(1)) if m else None


def locked(lockfile: Path) -> dict[str, str]:
    """The versions of quinn, quinn-proto and quinn-udp in a Cargo.lock."""
    packages = tomllib.loads(lockfile.read_text()).get("package", [])
    return {p["name"]: p["version"] for p in packages if p["name"] in ("quinn", "quinn-proto", "quinn-udp")}


def read_build(build_dir: Path) -> dict | None:
    try:
        return json.loads((build_dir / BUILD_FILE).read_text())
    except (OSError, json.JSONDecodeError):
        return None


def build(proto: str, quinn: str, build_dir: Path) -> dict:
    """Build the endpoint against quinn `quinn` + quinn-proto `proto` into `build_dir`
    (`endpoint` and build.json); returns build.json's content. One error naming the release
    when a step fails."""
    if not shutil.which("cargo"):
        raise LonglookError(f"ours@{proto} needs cargo to build", hint="run scripts/setup.sh (it installs Rust)")
    digest = source_digest()
    src = build_dir / "src"
    shutil.rmtree(src, ignore_errors=True)
    (src / "endpoint").mkdir(parents=True)
    shutil.copy(ENDPOINT / "Cargo.toml", src / "endpoint" / "Cargo.toml")
    shutil.copytree(ENDPOINT / "src", src / "endpoint" / "src")
    shutil.copy(REPO_ROOT / "Cargo.lock", src / "Cargo.lock")
    _write_workspace(src)
    _relax_quinn(src / "endpoint" / "Cargo.toml", proto)
    target = build_dir.parent / TARGET_FOLDER
    target.mkdir(parents=True, exist_ok=True)
    touch(target)
    env = {**os.environ, "CARGO_TARGET_DIR": str(target), "CARGO_TERM_COLOR": "never"}
    steps = [
        ["cargo", "update", "-p", "quinn", "--precise", quinn],
        ["cargo", "update", "-p", "quinn-proto", "--precise", proto],
        ["cargo", "build", "--release", "--locked", "-p", "endpoint"],
    ]
    for argv in steps:
        p = subprocess.run(argv, cwd=src, env=env, capture_output=True, text=True)
        if p.returncode != 0:
            errors = [line for line in p.stderr.splitlines() if line.startswith("error")]
            raise LonglookError(
                f"building ours@{proto} (quinn {quinn}) failed at `{' '.join(argv)}`: "
                f"{' | '.join(errors[:3]) or p.stderr.strip()[-600:]}",
                hint=f"this checkout's endpoint supports {SUPPORTED}; the full log: run the same command in {src}",
            )
    shutil.copy2(target / "release" / "endpoint", build_dir / "endpoint")
    info = {
        "quinn_proto": proto,
        **{k.replace("-", "_"): v for k, v in locked(src / "Cargo.lock").items()},
        "endpoint_source": digest,
    }
    (build_dir / BUILD_FILE).write_text(json.dumps(info, indent=1))
    shutil.rmtree(src / "endpoint" / "src", ignore_errors=True)  # the binary is what stays
    return info


def _write_workspace(src: Path) -> None:
    """The copy's workspace: the repository's Cargo.toml with the endpoint as its one member
    (same profile, same package defaults)."""
    text = (REPO_ROOT / "Cargo.toml").read_text()
    new, n = re.subn(r"(?m)^members\s*=\s*\[[^\]]*\]", 'members = ["endpoint"]', text)
    if n != 1:
        raise LonglookError(
            "the workspace Cargo.toml has no one `members = [...]` line to rewrite",
            hint="stacks/adapters/ours/quinn_build.py reads it to build ours@VERSION",
        )
    (src / "Cargo.toml").write_text(new)


def _relax_quinn(manifest: Path, proto: str) -> None:
    """Let the copy's quinn requirement admit any 0.11 release (the pair is pinned by
    `cargo update --precise`)."""
    text = manifest.read_text()
    new, n = re.subn(r'(?m)^(quinn\s*=\s*\{\s*version\s*=\s*)"[^"]*"', r'\1"0.11"', text)
    if n != 1:
        raise LonglookError(
            f"ours@{proto}: crates/endpoint/Cargo.toml has no `quinn = {{ version = ... }}` line",
            hint="stacks/adapters/ours/quinn_build.py relaxes it to build other quinn releases",
        )
    manifest.write_text(new)
