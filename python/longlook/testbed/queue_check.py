"""The self-check's last step on a link with an AQM: the discipline's signature on real
traffic. The rate, delay and loss checks run without the AQM (LinkProfile.for_self_check);
this one runs one saturating TCP flow (the probe's, Cubic, not ECN-capable) through each
direction that has one, and reads from linkem what its queue did: the mean sojourn of the
packets the flow queued, and the AQM's drops and marks. A queue that works holds the
standing delay near its target (CoDel and FQ-CoDel 5 ms, PIE and DualPI2's Classic queue
15 ms) where drop-tail lets it grow to the buffer. Judged only where the buffer could hold
more than SIGNATURE_FACTOR targets of delay: below that, drop-tail keeps the delay as low and
the two cannot be told apart."""

from __future__ import annotations

from ..linkprofile import Aqm, Direction, LinkProfile
from .linkcheck import DEPTHS, LinkCheckResult, Row, buffer_bytes, check_link, direction_rates
from .probe import PathProbe
from .testbed import Testbed

# each discipline's delay target in ms when its table leaves it unset (the RFCs' defaults)
DEFAULT_TARGET_MS = {"codel": 5.0, "fq_codel": 5.0, "pie": 15.0, "dualpi2": 15.0}
# the standing delay may reach this many targets (a saturating Cubic flow behind CoDel sat
# at 3.2 ms, behind PIE at 15 ms, on this testbed); a buffer holding less is not judged
SIGNATURE_FACTOR = 3.0


def target_ms(aqm: Aqm) -> float:
    return aqm.target_ms if aqm.target_ms is not None else DEFAULT_TARGET_MS[aqm.discipline]


def full_buffer_ms(d: Direction, base_dir) -> float | None:
    """How long the direction's buffer takes to drain when full, at its mean rate (None: no
    limit; a packet limit counts 1500-byte packets)."""
    buf = buffer_bytes(d)
    mean, _ = direction_rates(d, base_dir)
    if buf is None or not mean > 0:
        return None
    return buf * 8 / (mean * 1e6) * 1e3


def _queue(stats: dict, which: str) -> dict:
    d = (stats.get("directions") or {}).get(which) or {}
    return {k: d.get(k, 0) for k in ("sojourn_packets", "sojourn_ns_sum", "dropped_aqm", "ce_marked", "dropped_buffer")}


def check_queue(tb: Testbed, profile: LinkProfile, *, duration_s: float, base_dir=None) -> list[Row]:
    """One row per direction with an AQM: the mean sojourn of a saturating flow's packets,
    judged against SIGNATURE_FACTOR times the discipline's target, and whether it acted.
    `tb` must be running `profile` (with its AQM; without a NAT, whose bindings the probe's
    down-direction connection from the server could not pass)."""
    base_dir = base_dir or tb.base_dir
    rows: list[Row] = []
    with PathProbe(tb) as probe:
        for which in ("up", "down"):
            d = profile.resolved(which)
            if d.aqm is None:
                continue
            target = target_ms(d.aqm)
            before = _queue(tb.linkem.stats(), which)
            probe.tcp(which, duration_s)
            after = _queue(tb.linkem.stats(), which)
            delta = {k: after[k] - before[k] for k in after}
            packets = delta["sojourn_packets"]
            sojourn = delta["sojourn_ns_sum"] / packets / 1e6 if packets else float("nan")
            acted = delta["dropped_aqm"] + delta["ce_marked"]
            full = full_buffer_ms(d, base_dir)
            judged = full is None or full > SIGNATURE_FACTOR * target
            rows.append(
                Row(
                    which,
                    f"standing delay behind {d.aqm.discipline}",
                    "ms",
                    sojourn,
                    target,
                    *((None, SIGNATURE_FACTOR * target) if judged else (None, None)),
                    (
                        f"a saturating Cubic flow's mean sojourn over {packets} packets; the AQM dropped "
                        f"{delta['dropped_aqm']}, marked {delta['ce_marked']}, the buffer dropped "
                        f"{delta['dropped_buffer']}"
                    )
                    + (
                        ""
                        if judged
                        else f"; not judged: the buffer holds {full:.3g} ms, too little to tell the AQM from drop-tail"
                    ),
                )
            )
            if judged:
                rows.append(
                    Row(
                        which,
                        f"{d.aqm.discipline} acted",
                        "packets",
                        float(acted),
                        note="drops and CE marks by the AQM under the saturating flow",
                        verdict=acted > 0,
                    )
                )
    return rows


def has_aqm(profile: LinkProfile) -> bool:
    return any(profile.resolved(w).aqm is not None for w in ("up", "down"))


def self_check(
    tb: Testbed, profile: LinkProfile, *, duration_s: float, base_dir=None, depth: str = "full", **options
) -> LinkCheckResult:
    """The whole self-check of `profile` on `tb` (running it): rate, delay and loss on the
    path without its NAT and AQM (LinkProfile.for_self_check), then each AQM's signature with
    the AQM back (check_queue, still without the NAT); `tb` runs `profile` again after.
    `depth` is one of linkcheck.DEPTHS; `options` override it."""
    checked = profile.for_self_check()
    if checked is not profile:
        tb.reconfigure(checked, base_dir=base_dir)
    options = {**DEPTHS[depth], **options}
    result = check_link(tb, checked, duration_s=duration_s, base_dir=base_dir, **options)
    result.raw["depth"] = depth
    if has_aqm(profile):
        tb.reconfigure(profile.without_nat(), base_dir=base_dir)
        result.rows += check_queue(tb, profile, duration_s=max(duration_s, 2.0), base_dir=base_dir)
    if tb.profile is not profile:
        tb.reconfigure(profile, base_dir=base_dir)
    return result
