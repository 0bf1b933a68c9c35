"""Install or build QUIC stacks, each once per version (cached under the build directory).

    python -m longlook.stacks.install                   # every stack at its default version
    python -m longlook.stacks.install quic-go@v0.64.1   # named stacks (NAME or NAME@VERSION)
    python -m longlook.stacks.install --all-versions    # every version the adapters list
    python -m longlook.stacks.install --list            # what is installed, with versions

Prints one line per stack with the seconds it took (0 when cached); exit 1 if any failed.
"""

from __future__ import annotations

import argparse
import sys
import time

from ..errors import LonglookError
from .registry import STACKS, resolve, stack_class


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m longlook.stacks.install", description=__doc__.split("\n")[0])
    ap.add_argument("stacks", nargs="*", help="NAME or NAME@VERSION (default: every stack)")
    ap.add_argument("--all-versions", action="store_true", help="every version each adapter lists")
    ap.add_argument("--list", action="store_true", help="show what is installed and exit")
    a = ap.parse_args(argv)
    try:
        if a.stacks:
            specs = a.stacks
        elif a.all_versions:
            specs = [f"{n}@{v}" for n in STACKS for v in stack_class(n).versions]
        else:
            specs = list(STACKS)
        stacks = [resolve(s) for s in specs]
    except LonglookError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.list:
        for s in stacks:
            state = "installed" if s.installed() else f"missing ({s.install_command})"
            print(f"{s.spec:24} {', '.join(s.ccs):28} {state}")
        return 0
    failed = 0
    for s in stacks:
        t = time.monotonic()
        try:
            cached = s.installed()
            s.install()
            print(f"stacks: {s.spec} {'cached' if cached else 'built'} in {time.monotonic() - t:.0f} s "
                  f"({s.version_info()})", flush=True)
        except LonglookError as e:
            failed += 1
            print(f"stacks: {s.spec} FAILED after {time.monotonic() - t:.0f} s: {e}", file=sys.stderr, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
