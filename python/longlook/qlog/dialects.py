"""Other stacks' qlogs in our vocabulary (docs/interfaces.md, "Congestion-state vocabulary").

Each stack writes qlog its own way: aioquic one JSON document per connection (`traces[0]
.events`, absolute times in ms), quic-go, ngtcp2 and quiche JSON-SEQ (relative times),
tquic and quiche in qlog 0.4+ names (`quic:packet_sent`, `quic:recovery_metrics_updated`, read
as `transport:packet_sent`, `recovery:metrics_updated`). `normalise`
rewrites any of them as one JSON-SEQ file that `qlog.read_qlog` and the states
analysis read like our endpoint's:

- times in ms from the first event;
- `recovery:metrics_updated` keeps every field and gains `congestion_window` (aioquic says
  `cwnd`); `ssthresh` is null while infinite (quiche logs u64::MAX);
- `recovery:congestion_state_updated`, where the stack emits it (quic-go, quiche), has its
  state names mapped onto Kakhki's Table 3 (`slow_start` -> `SlowStart`, ...), the stack's
  own name kept in `stack_state`;
- where it does not (aioquic, ngtcp2, tquic), the states are derived from the metrics, each
  event marked `derived: true`: `SlowStart` while the window is below ssthresh (or ssthresh
  is unset), `Recovery` from a `packet_lost` event, a window that shrank, or an ssthresh set
  or lowered below the window (a slow-start exit such as HyStart++'s sets it at the window:
  that is `CongestionAvoidance`), until the window grows past the size it was last cut to
  (a further cut within Recovery moves that mark) at least one smoothed RTT after Recovery
  began (RFC 9002 §7.3.2; losses in between belong to the same episode),
  `CongestionAvoidance` otherwise (without
  a logged ssthresh, the window the stack cut to stands for it). `ApplicationLimited`,
  `RetransmissionTimeout` and `TailLossProbe` cannot be told from those metrics, and are
  never derived.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .reader import RECORD_SEPARATOR, parse_records

# stacks' own state names -> Table 3
STATE_NAMES = {
    "slow_start": "SlowStart",
    "congestion_avoidance": "CongestionAvoidance",
    "conservative_slow_start": "SlowStart",  # HyStart++'s CSS (quiche): still slow start
    "recovery": "Recovery",
    "application_limited": "ApplicationLimited",
    "app_limited": "ApplicationLimited",
    "persistent_congestion": "RetransmissionTimeout",
    # BBR's phases have no Table-3 name: its probing phases are growth, its drain a reduction
    "startup": "SlowStart",
    "drain": "Recovery",
    "probe_bw": "CongestionAvoidance",
    "probe_rtt": "CongestionAvoidance",
}
METRIC_ALIASES = {"cwnd": "congestion_window"}


# What the report says about a stack's states (the module's docstring, in short).
DERIVED_STATES_NOTE = (
    "its qlog has no congestion_state_updated, so the states are derived from its metrics: "
    "SlowStart while the window is below ssthresh (or ssthresh is unset); Recovery from a "
    "packet_lost event, a window that shrank, or an ssthresh set below the window, until the window "
    "grows past the size it was last cut to, at least one smoothed RTT later; "
    "CongestionAvoidance otherwise (also after a slow-start "
    "exit that sets ssthresh at the window, HyStart++). "
    "ApplicationLimited, RetransmissionTimeout and TailLossProbe cannot be derived and never appear."
)
EMITTED_STATES_NOTE = (
    "its qlog's congestion_state_updated, its own state names mapped onto Table 3 (slow_start, "
    "recovery, ...; BBR's startup as SlowStart, drain as Recovery, probe_bw/probe_rtt as "
    "CongestionAvoidance; the stack's name kept as stack_state)."
)


RECOVERY_EVENTS = (
    "metrics_updated",
    "congestion_state_updated",
    "packet_lost",
    "loss_timer_updated",
    "marked_for_retransmit",
)


def canonical_name(name: str) -> str:
    """qlog 0.4+ names events `quic:*` (tquic; quiche also `quic:recovery_metrics_updated`);
    the 0.3 names our logs use are `transport:*` and `recovery:*`."""
    if not name.startswith("quic:"):
        return name
    event = name.removeprefix("quic:").removeprefix("recovery_")  # quiche: quic:recovery_metrics_updated
    return f"recovery:{event}" if event in RECOVERY_EVENTS else f"transport:{event}"


def load_any(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(header, events) of a qlog in JSON (`traces`) or JSON-SEQ form, event names in the
    0.3 vocabulary (`canonical_name`)."""
    header, events = _load(path)
    for e in events:
        e["name"] = canonical_name(str(e.get("name")))
    return header, events


def _load(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    raw = Path(path).read_bytes()
    if raw.lstrip()[:1] == b"{" and RECORD_SEPARATOR not in raw[:64]:
        try:
            doc = json.loads(raw)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: neither JSON nor JSON-SEQ qlog ({e})") from None
        traces = doc.get("traces") or []
        if not traces:
            raise ValueError(f"{path}: a JSON qlog with no trace")
        header = {k: v for k, v in doc.items() if k != "traces"}
        header["trace"] = {k: v for k, v in traces[0].items() if k != "events"}
        return header, list(traces[0].get("events") or [])
    records = parse_records(raw)
    if not records:
        raise ValueError(f"{path}: no qlog records")
    header = records[0] if ("qlog_format" in records[0] or "file_schema" in records[0]) else {}
    return header, [r for r in records if "name" in r and "time" in r]


def state_name(name: str | None) -> str | None:
    if name is None:
        return None
    key = name.lower().replace("-", "_")
    for prefix in ("bbr_", "bbr2_", "bbr3_"):
        key = key.removeprefix(prefix)
    return STATE_NAMES.get(key, name)


INFINITE = 2**62  # quiche logs an unset ssthresh as u64::MAX


def _metrics(data: dict[str, Any], last: dict[str, Any]) -> dict[str, Any]:
    out = dict(data)
    for src, dst in METRIC_ALIASES.items():
        if src in out and dst not in out:
            out[dst] = out[src]
    if isinstance(out.get("ssthresh"), (int, float)) and out["ssthresh"] >= INFINITE:
        out["ssthresh"] = None  # infinite: null, as in our vocabulary
    last.update({k: v for k, v in out.items() if v is not None})
    return out


def derive_states(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """congestion_state_updated events derived from metrics_updated and packet_lost (see the
    module's docstring), in time order."""
    out: list[dict[str, Any]] = []
    state, cwnd, ssthresh, recovery_cwnd = None, None, None, None
    recovery_at, srtt = 0.0, None  # when Recovery began; the stack's smoothed RTT (ms)
    logs_ssthresh = False  # else the window of the last cut stands for it (tquic)

    def enter(t: float, new: str, trigger: str) -> None:
        nonlocal state
        if new != state:
            out.append(
                {
                    "time": t,
                    "name": "recovery:congestion_state_updated",
                    "data": {"old": state or "Init", "new": new, "trigger": trigger, "derived": True},
                }
            )
            state = new

    for e in events:
        name, data, t = e.get("name"), e.get("data") or {}, e["time"]
        if name == "recovery:packet_lost":
            if state != "Recovery":
                recovery_cwnd, recovery_at = None, t  # the mark: the reduced window that follows
                enter(t, "Recovery", "packet_lost")
            continue
        if name != "recovery:metrics_updated":
            continue
        new_cwnd = data.get("congestion_window", data.get("cwnd"))
        # a null ssthresh (tquic logs one) says nothing: keep what we know, or our stand-in
        logs_ssthresh = logs_ssthresh or data.get("ssthresh") is not None
        new_ss = data["ssthresh"] if data.get("ssthresh") is not None else ssthresh
        srtt = data.get("smoothed_rtt") or srtt
        # a window reduction: the window shrank, or ssthresh was set or lowered below the
        # window it had. A slow-start exit (HyStart++: ngtcp2, quiche) sets ssthresh at the
        # window without cutting it: no reduction.
        shrank = new_cwnd is not None and cwnd is not None and new_cwnd < cwnd
        lowered = new_ss is not None and (ssthresh is None or new_ss < ssthresh) and cwnd is not None and new_ss < cwnd
        if state is not None and (lowered or shrank):
            if state != "Recovery":
                recovery_at = t
                enter(t, "Recovery", "ssthresh_reduced" if lowered else "window_reduced")
            recovery_cwnd = new_cwnd  # each cut, also within Recovery, is what it must outgrow
        ssthresh = new_ss
        if new_cwnd is None:
            continue
        if state == "Recovery":
            if recovery_cwnd is None:
                recovery_cwnd = new_cwnd
            elif new_cwnd > recovery_cwnd and (srtt is None or t - recovery_at >= srtt):
                # RFC 9002 §7.3.2: Recovery ends with the ack of a packet sent in it, at least
                # a round trip after it began; a stack growing its window sooner is still in it
                if not logs_ssthresh:
                    ssthresh = recovery_cwnd  # a stack without ssthresh in its log: the window it cut to
                enter(t, "CongestionAvoidance", "window_grew")
        elif ssthresh is None or new_cwnd < ssthresh:
            enter(t, "SlowStart", "below_ssthresh")
        else:
            enter(t, "CongestionAvoidance", "at_ssthresh")
        cwnd = new_cwnd
    return out


def translate(header: dict[str, Any], events: list[dict[str, Any]], stack: str) -> tuple[dict, list[dict]]:
    """Our header and events for a stack's log (pure; see the module's docstring)."""
    events = sorted((e for e in events if isinstance(e.get("time"), (int, float))), key=lambda e: e["time"])
    t0 = events[0]["time"] if events else 0.0
    last: dict[str, Any] = {}
    out = []
    emitted = False
    for e in events:
        data = dict(e.get("data") or {})
        name = e["name"]
        if name == "recovery:metrics_updated":
            data = _metrics(data, last)
        elif name == "recovery:congestion_state_updated":
            emitted = True
            data["stack_state"] = data.get("new")
            data["old"], data["new"] = state_name(data.get("old")), state_name(data.get("new"))
        out.append({**e, "time": float(e["time"]) - t0, "data": data})
    if not emitted:
        out = sorted(out + derive_states(out), key=lambda e: e["time"])
    trace = dict(header.get("trace") or {})
    common = dict(trace.get("common_fields") or {})
    common.setdefault("protocol_type", ["QUIC"])
    trace["common_fields"] = common
    trace["longlook"] = {
        "stack": stack,
        "states": "emitted" if emitted else "derived",
        "original_format": header.get("qlog_format"),
    }
    new_header = {
        "qlog_format": "JSON-SEQ",
        "qlog_version": "0.3",
        "title": f"{stack} qlog in longlook's vocabulary",
        "trace": trace,
    }
    return new_header, out


def normalise(path: Path, out: Path, *, stack: str) -> None:
    """Write the stack's qlog at `path` as our JSON-SEQ at `out`."""
    header, events = translate(*load_any(path), stack=stack)
    with open(out, "wb") as f:
        for rec in [header, *events]:
            f.write(RECORD_SEPARATOR + json.dumps(rec, separators=(",", ":")).encode() + b"\n")
