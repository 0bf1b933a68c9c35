"""Reading a pcap and its TLS key log through tshark (Debian's 4.0.17) into a `Capture`.

    tshark -n -r FILE -d udp.port==PORT,quic -o tls.keylog_file:KEYLOG \\
           -Y "udp and not icmp and not icmpv6" \\
           -T json --no-duplicate-keys -J "frame ip ipv6 udp quic http3"

JSON, not `-T fields`: fields flatten a datagram's coalesced packets into one row, and a
case must know which packet carried which frame. `-J` keeps the layers the cases read (the
TLS messages stay, nested in their CRYPTO frames). ICMP errors quote UDP datagrams, which
tshark would dissect as QUIC again: they are filtered out. The output is read one packet at
a time, so a long capture costs memory for its datagrams, not for its JSON.

When tshark's reading is not the wire's (GSO super-datagrams in a capture taken at the
sender, a late packet of one connection filed under the next, a client with zero-length
connection IDs that moved), the datagrams are written out again and read a second time
(reread.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import IO, Iterator

from ..errors import LonglookError
from . import dissect, pcap, reread
from .model import Capture, Datagram

FILTER = "udp and not icmp and not icmpv6"
LAYERS = "frame ip ipv6 udp quic http3"
READINGS = 3  # the first, and at most two more (reread.py), after a moved client's
INSTALL_HINT = "install Wireshark's command-line reader: apt-get install tshark (4.0 or newer)"


def tshark_argv(tshark: str, pcap_file: Path, server_port: int, keylog: Path | None) -> list[str]:
    argv = [tshark, "-n", "-r", str(pcap_file), "-d", f"udp.port=={server_port},quic"]
    if keylog is not None:
        argv += ["-o", f"tls.keylog_file:{keylog}"]
    return argv + ["-Y", FILTER, "-T", "json", "--no-duplicate-keys", "-J", LAYERS]


def json_objects(stream: IO[str], chunk: int = 1 << 16) -> Iterator[dict]:
    """The objects of one JSON array as they arrive, without holding the whole text."""
    decoder = json.JSONDecoder()
    buf = ""
    while True:
        more = stream.read(chunk)
        buf += more
        pos = 0
        while True:
            while pos < len(buf) and buf[pos] in " \t\r\n,[]":
                pos += 1
            if pos >= len(buf):
                break
            try:
                obj, pos_after = decoder.raw_decode(buf, pos)
            except json.JSONDecodeError:
                if not more:
                    raise LonglookError(f"tshark's JSON output ends in the middle of a packet: {buf[pos : pos + 80]!r}")
                break  # the object's end has not arrived yet
            yield obj
            pos = pos_after
        buf = buf[pos:]
        if not more:
            return


def _raw(layers: dict, payload_hex: str) -> pcap.RawDatagram:
    ip = dissect.each(layers.get("ip")) or dissect.each(layers.get("ipv6"))
    h = ip[0] if ip else {}
    udp = dissect.each(layers.get("udp"))[0]
    src, dst, _ = dissect.address(layers)
    seconds, nanos = dissect.epoch(layers)
    return pcap.RawDatagram(
        seconds=seconds,
        nanos=nanos,
        src=src,
        dst=dst,
        tos=int(h.get("ip.dsfield", h.get("ipv6.tclass", "0")), 0),
        sport=int(udp["udp.srcport"]),
        dport=int(udp["udp.dstport"]),
        payload=bytes.fromhex(payload_hex.replace(":", "")),
    )


def _run(argv: list[str], pcap_file: Path, keep_raw: bool) -> tuple[list[Datagram], list[pcap.RawDatagram], str]:
    """tshark's datagrams, each one's headers and payload when `keep_raw`, and what it said
    on stderr when it failed."""
    datagrams: list[Datagram] = []
    raws: list[pcap.RawDatagram] = []
    t0 = None
    with tempfile.TemporaryFile(mode="w+") as err:
        try:
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True)
        except OSError as e:
            raise LonglookError(f"cannot run {argv[0]}: {e.strerror}", hint=INSTALL_HINT) from None
        try:
            for obj in json_objects(proc.stdout):
                layers = (obj.get("_source") or {}).get("layers") or {}
                try:
                    if t0 is None:
                        t0 = dissect.epoch(layers)
                    datagrams.append(dissect.datagram(layers, t0))
                    if keep_raw:
                        payload = (dissect.each(layers.get("udp")) or [{}])[0].get("udp.payload", "")
                        raws.append(_raw(layers, payload))
                except (ValueError, KeyError, TypeError, AttributeError) as e:
                    number = (layers.get("frame") or {}).get("frame.number", "?")
                    raise LonglookError(
                        f"{pcap_file}: tshark printed packet {number} in a shape this reader does not know ({e!r})",
                        hint="the reader follows tshark 4.0's JSON (Debian's tshark package)",
                    ) from None
        finally:
            proc.stdout.close()
            rc = proc.wait()
        err.seek(0)
        said = "\n".join(x for x in err.read().splitlines() if "Running as user" not in x and x.strip())
    if rc != 0 and not datagrams:
        first = said.splitlines()[0] if said else f"exit status {rc}"
        raise LonglookError(
            f"{pcap_file}: tshark cannot read it ({first})",
            hint="give a pcap or pcapng file (dumpcap -w FILE, or a run's capture.pcap)",
        )
    return datagrams, raws, said if rc != 0 else ""


def _check_file(path: Path, what: str, example: str) -> None:
    if not path.is_file():
        why = "is a directory" if path.is_dir() else "no such file"
        raise LonglookError(f"{path}: {why}, not a {what}", hint=f"give the {what}, e.g. {example}")
    if not os.access(path, os.R_OK):
        raise LonglookError(f"{path}: cannot read the {what} (permission denied)")


def _read_again(tshark: str, plans: list[list[pcap.RawDatagram]], server_port: int, keylog) -> list[Datagram]:
    with tempfile.TemporaryDirectory(prefix="longlook-wire-") as tmp:
        again_file = Path(tmp) / "again.pcap"
        pcap.write(again_file, (r for p in plans for r in p))
        return _run(tshark_argv(tshark, again_file, server_port, keylog), again_file, False)[0]


def read_capture(pcap_file: str | Path, keylog: str | Path | None, server_port: int) -> Capture:
    """The datagrams to and from `server_port` in a capture, decrypted with `keylog` (NSS key
    log format) when given. One LonglookError when tshark is missing or cannot read the file."""
    pcap_file = Path(pcap_file)
    _check_file(pcap_file, "capture file", "capture.pcap")
    keylog = None if keylog is None else Path(keylog)
    if keylog is not None:
        _check_file(keylog, "TLS key log", "keys.log")
    tshark = shutil.which("tshark")
    if tshark is None:
        raise LonglookError("tshark is not installed: QUIC captures are read through it", hint=INSTALL_HINT)
    datagrams, raws, said = _run(tshark_argv(tshark, pcap_file, server_port, keylog), pcap_file, True)
    notes = [f"tshark: {said.splitlines()[0]}"] if said else []
    pieces, plans = [[d] for d in datagrams], [[r] for r in raws]
    back = reread.moved_back(datagrams, raws, server_port)
    if back is not None:
        again = _read_again(tshark, [[r] for r in back], server_port, keylog)
        if len(again) == len(back):
            notes.append(reread.moved_note(raws, back))
            raws, plans = back, [[r] for r in back]
            pieces = reread.regroup(pieces, plans, again)
    for _ in range(READINGS - 1):
        new = reread.cuts_first([reread.plan(ds, p) for ds, p in zip(pieces, plans)], plans)
        if new == plans:
            break
        again = _read_again(tshark, new, server_port, keylog)
        if len(again) != sum(map(len, new)):  # not one datagram read per datagram written
            notes.append(f"a second reading gave {len(again)} datagrams for {sum(map(len, new))}: not used")
            break
        plans, pieces = new, reread.regroup(pieces, new, again)  # time counts from the same first datagram
    datagrams = [d for ds in pieces for d in ds]
    notes += reread.notes(plans, raws)
    randoms = keylog_randoms(keylog) if keylog is not None else frozenset()
    return Capture(tuple(datagrams), server_port, source=str(pcap_file), notes=tuple(notes), keylog_randoms=randoms)


def keylog_randoms(keylog: Path) -> frozenset[str]:
    """The client randoms an NSS key log holds secrets for (`LABEL <client random> <secret>`
    per line, lower-case hex)."""
    found = set()
    for line in keylog.read_text(errors="replace").splitlines():
        words = line.split()
        if len(words) == 3 and not line.startswith("#"):
            found.add(words[1].lower())
    return frozenset(found)
