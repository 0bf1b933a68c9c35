"""The synthetic content of `endpoint serve` as files on disk, for stacks that serve files.

Same paths and sizes as the endpoint (docs/interfaces.md): `/page/<N>x<S>.html` references
N images `/obj/<S>/<i>.jpg`, each exactly S bytes and a valid JPEG (an 8x8 picture padded
with comment segments, as crates/endpoint/src/content.rs builds them); `/bulk/<S>` is S
bytes. Files are written once (atomically) and reused by every run and stack.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..units import format_size

# an 8x8 grey baseline JPEG (the endpoint's TINY_JPEG)
TINY_JPEG = bytes.fromhex(
    "ffd8ffe000104a46494600010100000100010000ffdb004300100b0c0e0c0a100e0d0e1211101318281a1816"
    "16183123251d283a333d3c3933383740485c4e404457453738506d51575f626768673e4d71797064785c6567"
    "63ffc0000b080008000801011100ffc40014000100000000000000000000000000000000ffc4001410010000"
    "0000000000000000000000000000ffda0008010100003f003fffd9"
)
COM_MAX = 4 + 65533  # a JPEG comment segment: FF FE, 2-byte length, up to 65533 bytes
_CHUNK = bytes(i % 251 for i in range(1 << 16))


def page_html(count: int, size_token: str) -> str:
    imgs = "".join(f'<img src="/obj/{size_token}/{i}.jpg">\n' for i in range(count))
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>longlook page</title>'
        f"</head><body>\n{imgs}</body></html>\n"
    )


def _filler(n: int) -> bytes:
    reps, rest = divmod(n, len(_CHUNK))
    return _CHUNK * reps + _CHUNK[:rest]


def _com_segments(pad: int) -> list[int]:
    full, r = divmod(pad, COM_MAX)
    segs = [COM_MAX] * full
    if r >= 4:
        segs.append(r)
    elif r and full:
        segs[-1] = COM_MAX - 4
        segs.append(4 + r)
    return segs


def jpeg_bytes(size: int) -> bytes:
    """A valid JPEG of exactly `size` bytes (plain filler under the 159-byte picture)."""
    if size < len(TINY_JPEG):
        return _filler(size)
    pad = size - len(TINY_JPEG)
    parts = [TINY_JPEG[:2]]
    segs = _com_segments(pad)
    for length in segs:
        parts.append(bytes([0xFF, 0xFE, (length - 2) >> 8, (length - 2) & 0xFF]))
        parts.append(_filler(length - 4))
    parts.append(TINY_JPEG[2:])
    parts.append(_filler(pad - sum(segs)))  # 1-3 bytes after EOI when nothing else fits
    return b"".join(parts)


def _write(path: Path, data: bytes) -> None:
    if path.is_file() and path.stat().st_size == len(data):
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_bytes(data)
    tmp.replace(path)


def ensure_content(root: Path, mode: str, object_count: int, object_size: int) -> Path:
    """Write the files one workload fetches under `root`; returns the URL path's file."""
    token = format_size(object_size)
    if mode == "bulk":
        path = root / "bulk" / token
        if not (path.is_file() and path.stat().st_size == object_size):
            _write(path, _filler(object_size))
        return path
    body = jpeg_bytes(object_size)
    for i in range(object_count):
        _write(root / "obj" / token / f"{i}.jpg", body)
    page = root / "page" / f"{object_count}x{token}.html"
    _write(page, page_html(object_count, token).encode())
    _write(root / "index.html", b"<!DOCTYPE html>\n<html><body>longlook</body></html>\n")
    return page
