"""The links sweep of a scenario: `[[links]]` entries with list-valued fields expanded into
link profiles, and each profile's short, unique label (`10mbit-36ms,loss=0`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from pydantic import BaseModel

from ..linkprofile import Direction, LinkProfile
from ..testbed.segments import is_segmented, expand_segmented, segments_label
from ..units import short_number
from .validation import expand_sweep

# Link fields that may be given as a list to sweep over (Direction's scalar fields, plus the
# scenario-only shorthand rtt_ms = two equal one-way delays).
SWEEPABLE_LINK_FIELDS = tuple(
    f for f in Direction.model_fields if f not in ("gilbert_elliott", "reorder", "middlebox", "aqm")
) + ("rtt_ms",)


def _rtt_shorthand(d: dict, pos: dict[str, int], where: str) -> None:
    handover = d.get("handover")
    if isinstance(handover, dict) and isinstance(handover.get("path"), dict):  # the second path's own
        handover["path"] = dict(handover["path"])
        _rtt_shorthand(handover["path"], {}, f"{where}.handover.path")
    if "rtt_ms" not in d:
        return
    if "delay_ms" in d:
        raise ValueError(f"{where}: set rtt_ms or delay_ms, not both")
    rtt = d.pop("rtt_ms")
    if not isinstance(rtt, (int, float)) or isinstance(rtt, bool) or rtt < 0:
        loc = f"rtt_ms[{pos['rtt_ms']}]" if "rtt_ms" in pos else "rtt_ms"
        raise ValueError(f"{where}.{loc}: must be a number of ms >= 0, got {rtt!r}")
    d["delay_ms"] = rtt / 2
    if "rtt_ms" in pos:
        pos["delay_ms"] = pos.pop("rtt_ms")


def expand_links(raw: Any, *, top_fields: Iterable[str]) -> list[LinkProfile]:
    """`[[links]]` (or one `[link]` table) -> one profile per combination of its lists.
    Errors name the entry and the list element: links[0].rate_mbit[2]: ..."""
    if isinstance(raw, list) and raw and not all(isinstance(e, dict) for e in raw):
        bad = next(i for i, e in enumerate(raw) if not isinstance(e, dict))
        raise ValueError(f"links[{bad}]: must be a table of link settings")
    if not isinstance(raw, (list, dict)):
        raise ValueError("links: must be a table of link settings")
    entries = raw if isinstance(raw, list) else [raw]
    if any(is_segmented(e) for e in entries):  # a path through the proxy (testbed/segments.py)
        return _expand_segmented(entries, raw, top_fields)
    return expand_sweep(
        raw, "links", LinkProfile, top_fields=top_fields, sweepable=SWEEPABLE_LINK_FIELDS, adjust=_rtt_shorthand
    )  # type: ignore[return-value]


def _expand_segmented(entries: list, raw: Any, top_fields: Iterable[str]) -> list[LinkProfile]:
    where = (lambda i: "links") if not isinstance(raw, list) else (lambda i: f"links[{i}]")
    plain = [i for i, e in enumerate(entries) if not is_segmented(e)]
    if plain:  # one testbed topology per experiment
        raise ValueError(
            f"{where(plain[0])}: has no segments while other links do; give every "
            f"link link_a and link_b (the proxy topology), or none"
        )

    def one_segment(table: Any, at: str) -> list[LinkProfile]:
        return expand_sweep(
            table,
            at,
            LinkProfile,
            top_fields=top_fields,  # type: ignore[return-value]
            sweepable=SWEEPABLE_LINK_FIELDS,
            adjust=_rtt_shorthand,
        )

    return [p for i, e in enumerate(entries) for p in expand_segmented(e, where(i), one_segment)]


def _base_label(p: LinkProfile) -> str:
    up, down = p.resolved("up"), p.resolved("down")

    def rate(d: Direction) -> str:
        return f"trace:{Path(d.trace).stem}" if d.trace else f"{short_number(d.rate_mbit)}mbit"

    r = rate(down) if rate(up) == rate(down) else f"down{rate(down)}-up{rate(up)}"
    lu, ld = p.expected_loss("up"), p.expected_loss("down")
    loss = short_number(ld) if lu == ld else f"{short_number(ld)}/{short_number(lu)}"
    split = f",{segments_label(p)}" if p.segments else ""
    return f"{r}-{short_number(p.rtt_ms())}ms,loss={loss}{split}"


def _signature(p: LinkProfile) -> dict[str, Any]:
    """Every setting of a link, flattened per direction, for spotting what differs."""
    flat: dict[str, Any] = {}
    for which in ("up", "down"):
        resolved = p.resolved(which)
        # a buffer given per BDP is told apart by that setting, not by the bytes it comes to
        derived = {"buffer_bytes"} if resolved.buffer_bdp is not None else set()
        for k, v in resolved.model_dump(exclude_none=True, exclude=derived).items():
            nested = getattr(resolved, k, None)
            if k == "aqm" and nested is not None:
                # the discipline by name (aqm=codel, aqm=pie+ecn), its settings beyond the RFC's
                flat[f"{which}.aqm"] = nested.discipline + ("+ecn" if nested.ecn else "")
                for kk, vv in nested.model_dump(exclude_none=True, exclude={"discipline", "ecn"}).items():
                    flat[f"{which}.aqm.{kk}"] = vv
                continue
            if isinstance(nested, BaseModel):
                # a nested policy (the middlebox) by what it sets: its defaults are what a
                # link without one does, so they tell no two links apart
                v = nested.model_dump(exclude_defaults=True)
            if isinstance(v, dict):
                for kk, vv in v.items():
                    flat[f"{which}.{k}.{kk}"] = vv
            else:
                flat[f"{which}.{k}"] = v
    if p.handover is not None:  # when, and to what path
        h = p.handover
        flat["handover"] = f"{short_number(h.at_s)}s-to-{_base_label(h.path)}"
        if h.notice_ms:
            flat["handover.notice_ms"] = h.notice_ms
        if h.tcp_reconnect:
            flat["handover.tcp_reconnect"] = "on"
    if p.nat is not None:  # the NAT by what it sets beyond its defaults
        flat["nat.on"] = "on"
        for k, v in p.nat.model_dump(exclude_defaults=True).items():
            flat[f"nat.{k}"] = "+".join(short_number(x) for x in v) if isinstance(v, (tuple, list)) else v
    return flat


_SHORT_EXTRA = {
    "buffer_bytes": "buf",
    "buffer_packets": "bufpkts",
    "buffer_bdp": "bufbdp",
    "jitter_ms": "jitter",
    "jitter_distribution": "jitterdist",
}


def link_labels(profiles: list[LinkProfile]) -> list[str]:
    """Base label (rate, RTT, loss) plus every other setting that differs between the
    scenario's links, so labels are unique but short."""
    labels = _labels_with(profiles, covered=("rate_mbit", "trace", "delay_ms", "loss"))
    if len(set(labels)) < len(labels):  # e.g. same RTT split differently: spell out everything
        labels = _labels_with(profiles, covered=())
    return labels


def _labels_with(profiles: list[LinkProfile], covered: tuple[str, ...]) -> list[str]:
    sigs = [_signature(p) for p in profiles]
    keys = sorted({k for s in sigs for k in s})
    varying = [k for k in keys if len({repr(s.get(k)) for s in sigs}) > 1]
    labels = []
    for p, s in zip(profiles, sigs):
        extras: dict[str, str] = {}
        for k in varying:
            which, _, field = k.partition(".")
            if field.split(".")[0] in covered:
                continue
            name = _SHORT_EXTRA.get(field, field.replace(".", "-"))
            val = s.get(k)
            if val is None:  # not set on this link: its absence already tells it apart
                continue
            text = short_number(val) if isinstance(val, (int, float)) and not isinstance(val, bool) else str(val)
            if which == "handover":  # one per link: when, to what path, how late it is noticed
                extras["handover" if not field else f"handover-{name}"] = text
                continue
            if which == "nat":  # one NAT per link, not per direction
                extras["nat" if field == "on" else f"nat-{name}"] = text
                continue
            # one entry per field when both directions agree, else per direction
            other = s.get(("down" if which == "up" else "up") + "." + field)
            key = name if other == val else f"{which}-{name}"
            extras[key] = text
        labels.append(",".join([_base_label(p)] + [f"{k}={v}" for k, v in extras.items()]))
    return labels
