"""Records of the testbeds this host runs, so `longlook clean` removes only what is ours.

One JSON file per testbed in RUNTIME_DIR: its id, namespaces, the owning process (pid and
start time, which together survive pid reuse) and linkem's pid.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .processes import is_alive, start_time

RUNTIME_DIR = Path(os.environ.get("LONGLOOK_RUNTIME_DIR", "/run/longlook"))


@dataclass
class Record:
    id: str
    namespaces: list[str]
    owner_pid: int
    owner_started: int | None
    workdir: str
    linkem_pid: int | None = None
    linkem_started: int | None = None
    extra: dict = field(default_factory=dict)

    @property
    def path(self) -> Path:
        return RUNTIME_DIR / f"{self.id}.json"

    def owner_alive(self) -> bool:
        return is_alive(self.owner_pid, self.owner_started)

    def save(self) -> None:
        RUNTIME_DIR.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=1))
        tmp.replace(self.path)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def new_record(tb_id: str, namespaces: list[str], workdir: Path) -> Record:
    pid = os.getpid()
    return Record(id=tb_id, namespaces=namespaces, owner_pid=pid, owner_started=start_time(pid), workdir=str(workdir))


def all_records() -> list[Record]:
    records = []
    if not RUNTIME_DIR.is_dir():
        return records
    for path in sorted(RUNTIME_DIR.glob("*.json")):
        try:
            records.append(Record(**json.loads(path.read_text())))
        except (OSError, ValueError, TypeError):
            path.unlink(missing_ok=True)  # a torn or foreign file: nothing to act on
    return records
