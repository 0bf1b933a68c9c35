"""Experiments carried from one machine to the next: an experiment's folder packed as
ARCHIVE/<name>.tar.xz, committed with the project, and unpacked into the results folder on a
machine that does not hold it, so work longer than one machine's lifetime (the paper budget
of `reproduce`, the matrix's performance grid: many hours) resumes where the last machine
stopped, and a published page can be regenerated from a clean clone.

What travels is what the verdicts and their explanations read, at a size a repository can
hold: the store, every run's small files, and its qlogs without their packet-level events
(`transport:packet_sent`, `packet_received`, `frames_processed`, and their kin in other
dialects: 75-99% of a qlog's bytes, measured on a 10 MB page load). The congestion-control
events stay, so state machines, window timelines and losses read the same as on the machine
that measured; what needs single packets (a report's path changes and receive gaps) does
not. Left behind: packet captures, the experiment's throwaway certificate and key, and the
files its servers served. CARRIED (a JSON file in the folder) says what was left out. xz (the
standard library's lzma): the thinned qlogs are repetitive JSON it shrinks 20-30x, and
packing happens once per scenario.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..errors import LonglookError
from .store import DB_FILE

SUFFIX = ".tar.xz"
MARK = "CARRIED"
CAPTURES = (".pcap", ".pcapng", ".pcap.gz")  # no verdict reads a capture
LOGS = (".sqlog", ".qlog")
# packet-level qlog events: most of a qlog's bytes; no state machine reads them. Each
# dialect's names: qlog 0.3's, and the quic: ones of the newer drafts (quiche, tquic); the
# per-packet data movement, datagram and spin-bit events some stacks add to every packet
PACKET_EVENTS = (
    b'"transport:packet_sent"',
    b'"transport:packet_received"',
    b'"transport:frames_processed"',
    b'"transport:datagrams_received"',
    b'"transport:datagrams_sent"',
    b'"transport:data_moved"',
    b'"quic:packet_sent"',
    b'"quic:packet_received"',
    b'"quic:stream_data_moved"',
    b'"connectivity:spin_bit_updated"',
)
LEFT_OUT_DIRS = ("cert", "stack-content")  # a throwaway key; the files the servers served


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


def _kept(rel: PurePosixPath) -> bool:
    return not (rel.parts and rel.parts[0] in LEFT_OUT_DIRS) and not rel.name.endswith(CAPTURES)


def thin(data: bytes) -> bytes:
    """A JSON-SEQ (or JSON lines) qlog without its packet-level events."""
    return b"".join(line for line in data.splitlines(keepends=True) if not any(e in line for e in PACKET_EVENTS))


def _add_bytes(tar: tarfile.TarFile, arcname: str, data: bytes, mtime: float) -> None:
    info = tarfile.TarInfo(arcname)
    info.size, info.mtime, info.mode = len(data), int(mtime), 0o644
    tar.addfile(info, io.BytesIO(data))


def pack(out: Path, name: str, archive: Path) -> Carried | None:
    """OUT/<name>/ as ARCHIVE/<name>.tar.xz (see the module's docstring for what travels),
    written beside and renamed into place (an interrupted pack leaves the last archive whole).
    None when OUT holds no such experiment."""
    folder = Path(out) / name
    if not (folder / DB_FILE).exists():
        return None
    Path(archive).mkdir(parents=True, exist_ok=True)
    target = archive_path(archive, name)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=SUFFIX, dir=archive)
    os.close(fd)
    mark = {
        "left_out": {
            "captures": list(CAPTURES),
            "folders": list(LEFT_OUT_DIRS),
            "qlog_events": [e.decode().strip('"') for e in PACKET_EVENTS],
        },
        "why": "carried between machines at a size a repository holds (longlook.core.carry)",
    }
    try:
        with tarfile.open(tmp, mode="w:xz", preset=6) as tar:
            tar.add(folder, arcname=name, recursive=False)
            # sorted: a stable order between packs of the same folder
            for path in sorted(folder.rglob("*")):
                rel = PurePosixPath(path.relative_to(folder).as_posix())
                if rel.name == MARK or not _kept(rel):
                    continue
                if path.is_symlink() or not (path.is_file() or path.is_dir()):
                    continue  # refused on the way in, so left out on the way out
                arcname = f"{name}/{rel}"
                if path.is_file() and path.name.endswith(LOGS):
                    _add_bytes(tar, arcname, thin(path.read_bytes()), path.stat().st_mtime)
                else:
                    tar.add(path, arcname=arcname, recursive=False)
            _add_bytes(tar, f"{name}/{MARK}", json.dumps(mark, indent=1).encode(), (folder / DB_FILE).stat().st_mtime)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 is for the half-written file only
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
