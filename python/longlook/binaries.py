"""Where the project's Rust binaries are, with a clear error when they are not built."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .errors import LonglookError

REPO_ROOT = Path(__file__).resolve().parents[2]


def find_binary(name: str) -> Path:
    """Locate `name` (linkem, linkem-probe, endpoint): $LONGLOOK_BIN_DIR, the workspace's
    target/release, then PATH."""
    candidates = []
    if env_dir := os.environ.get("LONGLOOK_BIN_DIR"):
        candidates.append(Path(env_dir) / name)
    candidates.append(REPO_ROOT / "target" / "release" / name)
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    if found := shutil.which(name):
        return Path(found)
    raise LonglookError(
        f"the '{name}' binary was not found (looked in {', '.join(map(str, candidates))} and PATH)",
        hint="build it with `cargo build --release` at the repository root, or run scripts/setup.sh",
    )
