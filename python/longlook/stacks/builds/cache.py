"""The stacks' build cache, bounded: least recently used releases go first.

Every build lives in its own folder under stacks_dir() (`<name>-<version>`). A use of a stack
(installed or found installed) stamps its folder; after a build, while the cache holds more
than its limit ($LONGLOOK_STACKS_CACHE_GB, default 8 GB; measured here: a quic-go release
13 MB, aioquic 47 MB, tquic 13 MB, quiche 552 MB, our endpoint on a quinn-proto release 46 MB
plus the target folder those builds share, `ours-cargo-target`, about 0.6 GB), the least
recently used folders are removed, never the stacks' default versions nor the one just built.
A removed release is rebuilt on its next use.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ...untrusted import env_number

STAMP = ".last-used"
DEFAULT_LIMIT_GB = 8.0


def limit_bytes() -> int:
    """$LONGLOOK_STACKS_CACHE_GB in bytes: a number from 0.1 to 10,000 GB, else one error
    (a typo must not silently evict every release but the defaults)."""
    return int(env_number("LONGLOOK_STACKS_CACHE_GB", DEFAULT_LIMIT_GB, low=0.1, high=10_000) * 1e9)


def touch(folder: Path) -> None:
    """Stamp a build as used now (its LRU age)."""
    if folder.is_dir():
        (folder / STAMP).touch()


def _size(folder: Path) -> int:
    total = 0
    for root, _, files in os.walk(folder):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return total


def _last_used(folder: Path) -> float:
    stamp = folder / STAMP
    return (stamp if stamp.exists() else folder).stat().st_mtime


def evict(root: Path, keep: set[Path], limit: int | None = None) -> list[Path]:
    """Remove least recently used builds under `root` until it holds at most `limit` bytes;
    the folders in `keep` stay whatever their age. Returns what was removed."""
    limit = limit_bytes() if limit is None else limit
    if not root.is_dir():
        return []
    folders = [d for d in root.iterdir() if d.is_dir()]
    sizes = {d: _size(d) for d in folders}
    total = sum(sizes.values())
    removed = []
    for d in sorted((d for d in folders if d.resolve() not in {k.resolve() for k in keep}), key=_last_used):
        if total <= limit:
            break
        shutil.rmtree(d, ignore_errors=True)
        total -= sizes[d]
        removed.append(d)
    return removed
