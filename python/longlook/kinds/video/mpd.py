"""The part of a DASH manifest a player needs: per adaptation set its representations and the
segment template (number-based, as ffmpeg's dash muxer writes with `-use_template 1
-use_timeline 0`). xml.etree is enough for that subset; anything else is refused by name."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

from ...errors import LonglookError

NS = {"d": "urn:mpeg:dash:schema:mpd:2011"}


@dataclass(frozen=True)
class Representation:
    id: str
    kind: str  # "video" | "audio"
    bandwidth: int  # bit/s as declared
    width: int | None
    height: int | None
    init: str  # path relative to the manifest
    media: str  # template with $Number$ (formatted)
    start_number: int
    segment_s: float
    segments: int

    def segment_path(self, index: int) -> str:
        """Media segment `index` (0-based)."""
        return _fill(self.media, self.id, self.start_number + index)

    @property
    def label(self) -> str:
        return f"{self.height}p" if self.height else self.id


@dataclass(frozen=True)
class Manifest:
    duration_s: float
    video: tuple[Representation, ...]  # ascending bandwidth
    audio: tuple[Representation, ...]

    @property
    def segment_s(self) -> float:
        return self.video[0].segment_s

    @property
    def segments(self) -> int:
        return self.video[0].segments


def parse_manifest(text: str, source: str = "manifest") -> Manifest:
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise LonglookError(f"{source}: not a DASH manifest ({e})") from None
    duration = _iso_duration(root.get("mediaPresentationDuration") or "", source)
    video, audio = [], []
    for aset in root.iterfind("d:Period/d:AdaptationSet", NS):
        set_template = aset.find("d:SegmentTemplate", NS)
        for rep in aset.iterfind("d:Representation", NS):
            tpl = rep.find("d:SegmentTemplate", NS)
            tpl = tpl if tpl is not None else set_template
            if tpl is None or tpl.get("duration") is None:
                raise LonglookError(
                    f"{source}: representation {rep.get('id')} has no number-based SegmentTemplate (duration attribute)"
                )
            mime = rep.get("mimeType") or aset.get("mimeType") or aset.get("contentType") or ""
            kind = "video" if "video" in mime else "audio" if "audio" in mime else mime
            seg_s = int(tpl.get("duration")) / int(tpl.get("timescale", "1"))
            r = Representation(
                id=rep.get("id"),
                kind=kind,
                bandwidth=int(rep.get("bandwidth", "0")),
                width=_int(rep.get("width")),
                height=_int(rep.get("height")),
                init=_fill(tpl.get("initialization"), rep.get("id"), 0),
                media=tpl.get("media"),
                start_number=int(tpl.get("startNumber", "1")),
                segment_s=seg_s,
                segments=math.ceil(duration / seg_s - 1e-6),
            )
            (video if kind == "video" else audio).append(r)
    if not video:
        raise LonglookError(f"{source}: no video representation")
    return Manifest(duration_s=duration, video=tuple(sorted(video, key=lambda r: r.bandwidth)), audio=tuple(audio))


def _int(v: str | None) -> int | None:
    return int(v) if v else None


def _fill(template: str, rep_id: str, number: int) -> str:
    out = template.replace("$RepresentationID$", rep_id)
    return re.sub(r"\$Number(%0(\d+)d)?\$", lambda m: str(number).zfill(int(m.group(2) or 0)), out)


_DURATION = re.compile(r"^P(?:(\d+)D)?T?(?:(\d+)H)?(?:(\d+)M)?(?:([\d.]+)S)?$")


def _iso_duration(text: str, source: str) -> float:
    m = _DURATION.match(text)
    if not text or not m:
        raise LonglookError(f"{source}: bad mediaPresentationDuration {text!r}")
    d, h, mi, s = (float(x) if x else 0.0 for x in m.groups())
    return d * 86400 + h * 3600 + mi * 60 + s
