"""Results kept beside a run's files (a wire verdict, a qlog reading), each with the version of
the code that read it: a digest of its package's source. A result kept by other code is read
again, so a fixed reader or check never leaves its old answers in a report."""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from types import ModuleType

VERSION_KEY = "reader"


@functools.cache
def source_version(package: ModuleType) -> str:
    """A digest of every Python file of `package` (its path and bytes)."""
    h = hashlib.sha256()
    root = Path(package.__file__).parent
    for f in sorted(root.rglob("*.py")):
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:12]


def read_kept(cache: Path, version: str) -> dict | None:
    """The result kept in `cache` by code of `version`, without the version; None when there is
    none, or it was kept by other code."""
    if not cache.is_file():
        return None
    doc = json.loads(cache.read_text())
    if not isinstance(doc, dict) or doc.pop(VERSION_KEY, None) != version:
        return None
    return doc


def keep(cache: Path, result: dict, version: str) -> None:
    cache.write_text(json.dumps({**result, VERSION_KEY: version}))
