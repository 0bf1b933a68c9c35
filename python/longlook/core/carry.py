"""Experiments carried from one machine to the next: an experiment's folder packed as
ARCHIVE/<name>.tar.xz, committed with the project, and unpacked into the results folder on a
machine that does not hold it, so work longer than one machine's lifetime (the paper budget
of `reproduce`, the matrix's performance grid: many hours) resumes where the last machine
stopped, and a published page can be regenerated from a clean clone.

What travels is the whole experiment (its store and every run's files: state-machine
analyses read the runs' qlogs) except packet captures, which no verdict reads and which
would dominate the size. xz (the standard library's lzma) because the qlogs are repetitive
JSON that it shrinks several times better than gzip, and packing happens once per scenario,
not between runs.
"""

from __future__ import annotations

import os
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..errors import LonglookError
from .store import DB_FILE

SUFFIX = ".tar.xz"
LEFT_OUT = (".pcap", ".pcapng", ".pcap.gz")  # captures: never read by a claim, most of the bytes


@dataclass
class Carried:
    name: str
    archive: Path
    action: str  # "unpacked", "packed", "kept" (already there / nothing new)
    bytes: int = 0


def archive_path(archive: Path, name: str) -> Path:
    return Path(archive) / f"{name}{SUFFIX}"


def unpack(archive: Path, out: Path, name: str) -> Carried | None:
    """Unpack ARCHIVE/<name>.tar.xz into OUT/<name>/ when OUT does not hold that experiment
    yet; None when there is nothing to carry. Members outside <name>/, links and devices are
    refused (an archive is input like any other)."""
    source = archive_path(archive, name)
    if not source.exists():
        return None
    target = Path(out) / name
    if (target / DB_FILE).exists():
        return Carried(name, source, "kept")
    Path(out).mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(source, mode="r:xz") as tar:
            members = tar.getmembers()
            for m in members:
                parts = PurePosixPath(m.name).parts
                if not parts or parts[0] != name or ".." in parts or not (m.isfile() or m.isdir()):
                    raise LonglookError(
                        f"{source}: member {m.name!r} is not a file or folder inside {name}/",
                        hint="an archive holds one scenario's folder; remove the file or pack it again",
                    )
            tar.extractall(out, members=members, filter="data")
    except (tarfile.TarError, EOFError, OSError) as e:
        raise LonglookError(
            f"{source}: cannot unpack ({e})", hint="the file is damaged; restore it from git or remove it"
        ) from e
    return Carried(name, source, "unpacked", source.stat().st_size)


def _left_out(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    # links and special files are refused on the way in, so they are left out on the way out
    keep = (info.isfile() or info.isdir()) and not info.name.endswith(LEFT_OUT)
    return info if keep else None


def pack(out: Path, name: str, archive: Path) -> Carried | None:
    """OUT/<name>/ as ARCHIVE/<name>.tar.xz, written beside and renamed into place (an
    interrupted pack leaves the last archive whole). None when OUT holds no such experiment."""
    folder = Path(out) / name
    if not (folder / DB_FILE).exists():
        return None
    Path(archive).mkdir(parents=True, exist_ok=True)
    target = archive_path(archive, name)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=SUFFIX, dir=archive)
    os.close(fd)
    try:
        # preset 6 (the default): 2-4x smaller than gzip on qlogs; sorted members for a
        # stable order between packs of the same folder
        with tarfile.open(tmp, mode="w:xz", preset=6) as tar:
            tar.add(folder, arcname=name, filter=_left_out, recursive=False)
            for path in sorted(folder.rglob("*")):
                tar.add(path, arcname=f"{name}/{path.relative_to(folder)}", filter=_left_out, recursive=False)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Carried(name, target, "packed", target.stat().st_size)


def carry_in(archive: Path, out: Path, names) -> list[Carried]:
    """Unpack each named experiment OUT does not hold yet; what was unpacked."""
    carried = [unpack(archive, out, name) for name in names]
    return [c for c in carried if c is not None and c.action == "unpacked"]


def carry_out(archive: Path, directories) -> list[Carried]:
    """Pack each experiment folder whose store changed since its archive was written (it
    measured runs in this session, or it has data and no archive yet)."""
    carried = []
    for directory in map(Path, directories):
        stores = list(directory.glob(f"{DB_FILE}*"))
        if not (directory / DB_FILE).exists():
            continue
        target = archive_path(archive, directory.name)
        if not target.exists() or max(p.stat().st_mtime for p in stores) > target.stat().st_mtime:
            if (c := pack(directory.parent, directory.name, archive)) is not None:
                carried.append(c)
    return carried
