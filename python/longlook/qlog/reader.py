"""Read the endpoint's qlog JSON-SEQ files (RFC 7464: records separated by 0x1E).

The server writes logs through buffered writers and the runner moves them while they may
still be open, so the last record can be cut short: it is skipped, never an error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RECORD_SEPARATOR = b"\x1e"


@dataclass
class QlogFile:
    """One connection's log: the header and its events in file order."""

    path: Path | None
    header: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def protocol(self) -> str:
        """'QUIC' or 'TCP' (the header's protocol_type)."""
        types = ((self.header.get("trace") or {}).get("common_fields") or {}).get("protocol_type") or []
        return types[0] if types else "QUIC"

    def named(self, name: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("name") == name]

    def last(self, name: str) -> dict[str, Any] | None:
        found = self.named(name)
        return found[-1]["data"] if found else None


def parse_records(raw: bytes) -> list[dict[str, Any]]:
    out = []
    for chunk in raw.split(RECORD_SEPARATOR):
        chunk = chunk.strip()
        if not chunk:
            continue
        try:
            out.append(json.loads(chunk))
        except json.JSONDecodeError:
            continue  # a record cut short by a log still being written
    return out


def read_qlog(path: str | Path) -> QlogFile:
    path = Path(path)
    records = parse_records(path.read_bytes())
    header = records[0] if records and "qlog_format" in records[0] else {}
    events = [r for r in records if "name" in r and "time" in r]
    return QlogFile(path=path, header=header, events=events)


def qlog_from_events(events: list[dict[str, Any]], protocol: str = "QUIC") -> QlogFile:
    """For tests and notebooks: a QlogFile from event dicts ({time, name, data})."""
    header = {"qlog_format": "JSON-SEQ", "trace": {"common_fields": {"protocol_type": [protocol]}}}
    return QlogFile(path=None, header=header, events=list(events))
