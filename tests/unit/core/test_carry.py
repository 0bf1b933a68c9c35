"""Carrying a budget's experiments between machines: what is packed comes back whole, captures
stay behind, a hostile archive is refused, an unchanged store is not packed again."""

from __future__ import annotations

import io
import json
import os
import tarfile
import time
from pathlib import Path

import pytest

from longlook.core.carry import archive_path, carry_out, pack, unpack
from longlook.core.store import DB_FILE
from longlook.errors import LonglookError


def _experiment(out: Path, name: str) -> Path:
    folder = out / name
    (folder / "runs" / "r1").mkdir(parents=True)
    (folder / DB_FILE).write_bytes(b"store" * 100)
    (folder / "runs" / "r1" / "server.sqlog").write_text(QLOG)
    (folder / "runs" / "r1" / "run.pcap").write_bytes(b"\0" * 4096)
    (folder / "runs" / "r1" / "fetch.json").write_text('{"ok": true}')
    (folder / "cert").mkdir()
    (folder / "cert" / "key.pem").write_text("secret")
    return folder


CC_EVENT = '\x1e{"time": 2, "name": "recovery:metrics_updated", "data": {"congestion_window": 14720}}\n'
QLOG = (
    '\x1e{"qlog_format": "JSON-SEQ"}\n'
    + '\x1e{"time": 1, "name": "transport:packet_sent", "data": {"header": {"packet_number": 1}}}\n' * 300
    + CC_EVENT
    + '\x1e{"time": 3, "name": "transport:packet_received", "data": {}}\n' * 300
    + '\x1e{"time": 4, "name": "recovery:congestion_state_updated", "data": {"new": "Recovery"}}\n'
)


def test_round_trip_leaves_captures_out(tmp_path):
    _experiment(tmp_path / "a", "fig8")
    packed = pack(tmp_path / "a", "fig8", tmp_path / "archive")
    assert packed and packed.action == "packed" and packed.archive == archive_path(tmp_path / "archive", "fig8")
    back = unpack(tmp_path / "archive", tmp_path / "b", "fig8")
    assert back and back.action == "unpacked"
    folder = tmp_path / "b" / "fig8"
    assert (folder / DB_FILE).read_bytes() == b"store" * 100
    # the congestion-control events travel whole, the packet-level ones stay behind
    qlog = (folder / "runs" / "r1" / "server.sqlog").read_text()
    assert qlog == (
        '\x1e{"qlog_format": "JSON-SEQ"}\n'
        + CC_EVENT
        + '\x1e{"time": 4, "name": "recovery:congestion_state_updated", "data": {"new": "Recovery"}}\n'
    )
    assert (folder / "runs" / "r1" / "fetch.json").read_text() == '{"ok": true}'
    assert not (folder / "runs" / "r1" / "run.pcap").exists()
    assert not (folder / "cert").exists()
    assert "transport:packet_sent" in json.loads((folder / "CARRIED").read_text())["left_out"]["qlog_events"]


def test_a_folder_that_holds_the_experiment_is_kept(tmp_path):
    _experiment(tmp_path / "a", "fig8")
    pack(tmp_path / "a", "fig8", tmp_path / "archive")
    (tmp_path / "a" / "fig8" / DB_FILE).write_bytes(b"newer")
    kept = unpack(tmp_path / "archive", tmp_path / "a", "fig8")
    assert kept and kept.action == "kept"
    assert (tmp_path / "a" / "fig8" / DB_FILE).read_bytes() == b"newer"
    assert unpack(tmp_path / "archive", tmp_path / "a", "other") is None


def test_member_outside_its_folder_is_refused(tmp_path):
    archive = tmp_path / "archive"
    archive.mkdir()
    with tarfile.open(archive_path(archive, "fig8"), mode="w:xz") as tar:
        data = b"x"
        info = tarfile.TarInfo("fig8/../../escaped")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with pytest.raises(LonglookError, match="not a file or folder inside fig8/"):
        unpack(archive, tmp_path / "out", "fig8")
    assert not (tmp_path / "escaped").exists()


def test_damaged_archive_is_one_clear_error(tmp_path):
    archive = tmp_path / "archive"
    archive.mkdir()
    archive_path(archive, "fig8").write_bytes(b"not xz")
    with pytest.raises(LonglookError, match="cannot unpack"):
        unpack(archive, tmp_path / "out", "fig8")


def test_only_a_changed_store_is_packed_again(tmp_path):
    folder = _experiment(tmp_path / "a", "fig8")
    archive = tmp_path / "archive"
    assert [c.name for c in carry_out(archive, [folder])] == ["fig8"]
    assert carry_out(archive, [folder]) == []  # nothing measured since
    later = time.time() + 5
    os.utime(folder / DB_FILE, (later, later))
    assert [c.name for c in carry_out(archive, [folder])] == ["fig8"]
    assert carry_out(archive, [tmp_path / "a" / "none"]) == []


def test_every_dialect_s_packet_events_are_thinned_and_the_congestion_ones_kept():
    from longlook.core.carry import thin

    kept = '\x1e{"time": 2, "name": "recovery:metrics_updated", "data": {"congestion_window": 12000}}\n'
    per_packet = [
        "transport:packet_sent",
        "quic:packet_sent",  # the newer drafts' names (quiche, tquic)
        "quic:packet_received",
        "quic:stream_data_moved",
        "transport:data_moved",  # gm-quic: one per packet
        "transport:datagrams_received",  # aioquic
        "connectivity:spin_bit_updated",
    ]
    log = "".join(f'\x1e{{"time": 1, "name": "{n}", "data": {{}}}}\n' for n in per_packet) + kept
    assert thin(log.encode()).decode() == kept
