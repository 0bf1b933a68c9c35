"""A run's directory as bytes and back: how a run's artifacts travel from a cluster node to
the driver, which unpacks them where a local run would have left them (DIR/runs/<run_id>/)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from .store import RUNS_DIR


def pack_run(out_dir: Path, run_id: str) -> bytes:
    """DIR/runs/<run_id>/ as a gzip'd tar whose members start with <run_id>/ (level 1: the
    node packs between runs, so speed matters more than size)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tar:
        tar.add(Path(out_dir) / RUNS_DIR / run_id, arcname=run_id)
    return buf.getvalue()


def unpack_run(out_dir: Path, run_id: str, bundle: bytes) -> None:
    """Into DIR/runs/<run_id>/; members outside that directory are refused."""
    root = Path(out_dir) / RUNS_DIR
    root.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(bundle), mode="r:gz") as tar:
        members = tar.getmembers()
        for m in members:
            if not (m.name == run_id or m.name.startswith(f"{run_id}/")):
                raise ValueError(f"run bundle {run_id}: member {m.name!r} outside the run's directory")
        tar.extractall(root, members=members, filter="data")
