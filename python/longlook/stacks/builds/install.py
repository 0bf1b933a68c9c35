"""Install or build QUIC stacks, each once per version (cached under the build directory).

    python -m longlook.stacks.builds.install                   # every stack at its default version
    python -m longlook.stacks.builds.install quic-go@v0.64.1   # named stacks (NAME or NAME@VERSION)
    python -m longlook.stacks.builds.install --all-versions    # every version the adapters list
    python -m longlook.stacks.builds.install --list            # what is installed, with versions

Prints one line per stack with the seconds it took (0 when cached); exit 1 if any failed.
`longlook stacks install` is the same. scripts/setup.sh installs none of them unless asked
(`--all-stacks`): a scenario that names a stack has it installed before its grid starts
(`ensure_stacks`, called by the kind's prepare), with progress on stderr.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import threading
import time
from typing import Callable, Iterable

from ...errors import LonglookError
from .cache import evict, limit_bytes, touch
from ..registry import STACKS, is_stack, resolve, stack_class
from .specs import unlisted_release

HEARTBEAT_S = 30.0


def _say(line: str) -> None:
    print(f"stacks: {line}", file=sys.stderr, flush=True)


def _present(package: str) -> bool:
    """A package counts as present when its command is on PATH or dpkg has it."""
    if shutil.which(package):
        return True
    return subprocess.run(["dpkg", "-s", package], capture_output=True).returncode == 0


def ensure_packages(packages: Iterable[str], why: str, say: Callable[[str], None] = _say) -> None:
    """apt-get install whichever of `packages` is missing (refreshing the lists once when the
    first try fails); one clear error otherwise."""
    missing = [p for p in dict.fromkeys(packages) if not _present(p)]
    if not missing:
        return
    say(f"installing {' '.join(missing)} for {why} (apt)")
    argv = ["apt-get", "install", "-y", "-qq", *missing]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    p = subprocess.run(argv, capture_output=True, text=True, env=env)
    if p.returncode != 0:  # stale package lists on a machine set up long ago
        subprocess.run(["apt-get", "update", "-qq"], capture_output=True, env=env)
        p = subprocess.run(argv, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise LonglookError(
            f"installing {' '.join(missing)} for {why} failed: {p.stderr.strip()[-500:]}",
            hint=f"as root: `apt-get install -y {' '.join(missing)}` (or `bash scripts/setup.sh --all-stacks`)",
        )


def ensure_chromium(say: Callable[[str], None] = _say) -> None:
    """Debian's Chromium for the browser clients, installed on first use (unless
    $LONGLOOK_CHROMIUM names another browser)."""
    if not os.environ.get("LONGLOOK_CHROMIUM"):
        ensure_packages(["chromium"], "the Chromium client", say)


def _with_heartbeat(what: str, work: Callable[[], None], say: Callable[[str], None]) -> float:
    """Run `work`, saying every HEARTBEAT_S that it is still going (a build is minutes of
    silence otherwise); return the seconds it took."""
    started = time.monotonic()
    done = threading.Event()

    def beat() -> None:
        while not done.wait(HEARTBEAT_S):
            say(f"still {what} ({time.monotonic() - started:.0f} s)")

    t = threading.Thread(target=beat, daemon=True)
    t.start()
    try:
        work()
    finally:
        done.set()
        t.join()
    return time.monotonic() - started


def check_installable(spec: str) -> None:
    """Before anything is built: the name and version exist, and a named release is one its
    registry lists (one error naming the nearest, instead of the registry's 403 mid-build)."""
    resolve(spec)
    if (unlisted := unlisted_release(spec)) is not None:
        raise unlisted


def install_stack(spec: str, say: Callable[[str], None] = _say) -> tuple[bool, float]:
    """Install one stack (with what its build needs from Debian); (was cached, seconds)."""
    s = resolve(spec)
    if s.installed():
        touch(s.build_dir)
        return True, 0.0
    ensure_packages(s.apt_needs, s.spec, say)
    say(
        f"{s.spec}: not installed yet: installing into {s.build_dir} (once per version, then cached; "
        f"a build can take minutes)"
    )
    seconds = _with_heartbeat(f"installing {s.spec}", s.install, say)
    touch(s.build_dir)
    defaults = {resolve(f"{name}@{v}").build_dir for name in STACKS for v in stack_class(name).versions}
    for gone in evict(s.build_dir.parent, keep=defaults | {s.build_dir}):
        say(f"stacks: cache over {limit_bytes() / 1e9:g} GB: removed the least recently used build {gone.name}")
    return False, seconds


def ensure_stacks(specs: Iterable[str | None], say: Callable[[str], None] = _say) -> None:
    """Before a grid: every other QUIC stack a scenario names is installed, now, with progress
    (ours and longlook's own clients are left alone: they are not stacks)."""
    for spec in dict.fromkeys(s for s in specs if s and is_stack(s)):
        cached, seconds = install_stack(spec, say)
        if not cached:
            say(f"{resolve(spec).spec}: installed in {seconds:.0f} s")


def all_specs(all_versions: bool = False) -> list[str]:
    """Every stack at its default version, or at every version its adapter lists."""
    if all_versions:
        return [f"{n}@{v}" for n in STACKS for v in stack_class(n).versions]
    return list(STACKS)


def install_all(specs: list[str], out: Callable[[str], None] = print) -> int:
    """Install each of `specs`, one line each; the number that failed."""
    failed = 0
    for spec in specs:
        t = time.monotonic()
        try:
            cached, _ = install_stack(spec)
            s = resolve(spec)
            out(
                f"stacks: {s.spec} {'cached' if cached else 'built'} in {time.monotonic() - t:.0f} s "
                f"({s.version_info()})"
            )
        except LonglookError as e:
            failed += 1
            print(f"stacks: {spec} FAILED after {time.monotonic() - t:.0f} s: {e}", file=sys.stderr, flush=True)
    return failed


def list_lines(specs: list[str]) -> list[str]:
    lines = []
    for s in (resolve(x) for x in specs):
        state = "installed" if s.installed() else f"missing ({s.install_command})"
        lines.append(f"{s.spec:24} {', '.join(s.ccs):28} {state}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m longlook.stacks.builds.install", description=__doc__.split("\n")[0])
    ap.add_argument("stacks", nargs="*", help="NAME or NAME@VERSION (default: every stack)")
    ap.add_argument("--all", action="store_true", help="every stack at its default version (the default)")
    ap.add_argument("--all-versions", action="store_true", help="every version each adapter lists")
    ap.add_argument("--list", action="store_true", help="show what is installed and exit")
    a = ap.parse_args(argv)
    try:
        specs = a.stacks or all_specs(a.all_versions)
        for s in specs:
            check_installable(s)  # an unknown name or release: one error before anything is built
    except LonglookError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.list:
        print("\n".join(list_lines(specs)))
        return 0
    return 1 if install_all(specs, lambda line: print(line, flush=True)) else 0


if __name__ == "__main__":
    sys.exit(main())
