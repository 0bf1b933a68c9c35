"""dash.js in headless Chromium as the video kind's second player: set-up (the player page and
the pinned dash.js copied beside the clip, Chromium found), one run (dashjs_driver in the
client namespace), and what the driver recorded turned into a Playback (pure)."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ...core.kind import Measurement, RunContext
from ...errors import LonglookError
from ...testbed.processes import stop_child
from ...stacks.clients.chromium import chromium_path, driver_env, quic_mode
from ...stacks.endpoint import server_spki
from ...stacks.endpoint import SERVER_ADDR
from .mpd import Manifest
from .qoe import Playback, Sample, Stall, qoe_metrics, series_rows
from .serving import server_for
from .traffic import bytes_per_second

HERE = Path(__file__).parent
DASHJS = HERE / "static" / "dash.all.min.js"
DASHJS_VERSION_FILE = HERE / "static" / "dashjs.version"
DASHJS_PIN = "4.7.4"  # from npm, copied into static/ once: never fetched at run time
PAGE_FILES = ("player.html",)  # dash.js and player.js are injected by the driver
PLAYER_DIR = "player"
DRIVER_GRACE_S = 20.0
END_SLACK_S = 0.5  # a `waiting` this close to the clip's end is the end, not a stall
_SEGMENT = re.compile(r"/chunk-([^-/]+)-(\d+)\.m4s$")


def install_dashjs() -> None:
    """The pinned dash.js from npm into static/, once (the first scenario with the dash.js
    player, or `scripts/setup.sh --all`); a no-op when that version is there."""
    if DASHJS.is_file() and dashjs_version() == DASHJS_PIN:
        return
    import tempfile

    from ...stacks.builds.install import ensure_packages

    ensure_packages(["npm"], "dash.js")
    print(f"video: installing dash.js {DASHJS_PIN} (npm) into {DASHJS.parent}", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        p = subprocess.run(
            [
                "npm",
                "install",
                "--prefix",
                tmp,
                "--no-audit",
                "--no-fund",
                "--ignore-scripts",
                "--silent",
                f"dashjs@{DASHJS_PIN}",
            ],
            capture_output=True,
            text=True,
        )
        dist = Path(tmp) / "node_modules" / "dashjs"
        if p.returncode != 0 or not (dist / "dist" / "dash.all.min.js").is_file():
            raise LonglookError(
                f"installing dash.js {DASHJS_PIN} from npm failed: {p.stderr.strip()[-500:]}",
                hint="retry, or run `bash scripts/setup.sh --all`",
            )
        DASHJS.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(dist / "dist" / "dash.all.min.js", DASHJS)
        if (dist / "LICENSE.md").is_file():
            shutil.copyfile(dist / "LICENSE.md", DASHJS.parent / "dashjs.LICENSE.md")
    DASHJS_VERSION_FILE.write_text(DASHJS_PIN + "\n")


def prepare_dashjs(content: Path) -> dict[str, Any]:
    """Check Chromium and dash.js (installed on first use); put the player page and dash.js
    under <clip>/player/."""
    from ...stacks.builds.install import ensure_chromium

    ensure_chromium()
    chromium_path()
    install_dashjs()
    target = content / PLAYER_DIR
    target.mkdir(exist_ok=True)
    for name in PAGE_FILES:
        shutil.copyfile(HERE / "page" / name, target / name)
    return {"dashjs_version": dashjs_version()}


def dashjs_version() -> str:
    return DASHJS_VERSION_FILE.read_text().strip() if DASHJS_VERSION_FILE.is_file() else "unknown"


def dashjs_versions() -> dict[str, Any]:
    out = subprocess.run([chromium_path(), "--version"], capture_output=True, text=True, timeout=20)
    return {"dashjs": dashjs_version(), "chromium": out.stdout.strip()}


def measure_dashjs(ctx: RunContext) -> Measurement:
    manifest: Manifest = ctx.state["manifest"]
    port, server = server_for(ctx, ctx.state["content"])
    protocol = ctx.arm.protocol
    timeout = ctx.scenario.run_timeout_s()
    url = f"https://{SERVER_ADDR}:{port}/{PLAYER_DIR}/player.html?mpd=/manifest.mpd&abr={ctx.cell.abr}"
    out = ctx.run_dir / "dashjs.json"
    argv = [
        sys.executable,
        "-m",
        "longlook.kinds.video.dashjs_driver",
        "--url",
        url,
        # the cell's quic_mode is how its QUIC arms get QUIC; the TCP-only arm never does
        "--quic",
        quic_mode(protocol, ctx.cell.quic_mode if protocol != "h2" else "forced"),
        "--spki",
        server_spki(ctx.session["servers"].cert_dir / "cert.pem"),
        "--run-id",
        ctx.run_id,
        "--out",
        str(out),
        "--timeout-s",
        str(timeout),
        "--chromium",
        chromium_path(),
    ]
    if ctx.keylog is not None:  # [capture] keylog: the browser's secrets
        argv += ["--keylog", str(ctx.keylog)]
    proc = subprocess.Popen(
        ctx.testbed.exec_argv("client", argv),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=driver_env(),
    )
    try:
        _, stderr = proc.communicate(timeout=timeout + DRIVER_GRACE_S)
    except subprocess.TimeoutExpired:
        stop_child(proc)
        stderr = ""
    ctx.testbed.check()
    artifacts = {"dashjs": out.name, "chromium_stderr": "dashjs.chromium.stderr"}
    artifacts.update(server.take_artifacts(ctx.run_id, ctx.run_dir))
    try:
        doc = json.loads(out.read_text())
    except (OSError, json.JSONDecodeError):
        tail = (stderr or "").strip().splitlines()[-1:] or [f"exit code {proc.returncode}"]
        return Measurement(
            status="failed",
            error=f"the dash.js driver left no result: {tail[0]}",
            protocol_requested=protocol,
            artifacts=artifacts,
        )
    return measurement_from_driver(doc, manifest, protocol=protocol, scenario=ctx.scenario, artifacts=artifacts)


def measurement_from_driver(
    doc: dict, manifest: Manifest, *, protocol: str, scenario, artifacts: dict[str, str]
) -> Measurement:
    p = playback_from_driver(doc, manifest)
    media = [r for r in doc["requests"] if r["path"].endswith(".m4s")]
    negotiated = _protocol_of(media)
    status, error = "ok", doc.get("error")
    if doc.get("timed_out"):
        status = "timeout"
    elif error or not doc.get("ended"):
        status, error = "failed", error or "the player stopped before the end of the clip"
    elif negotiated != protocol:
        status, error = "protocol_mismatch", f"requested {protocol}, segments came over {negotiated}"
    cpu = cpu_figures(doc, p.stalls)
    # a starved player measured the machine, not the network: the run is flagged like a bad
    # path (kept, shown with its reason, measured again within `retries`)
    starved = starved_reason(cpu, scenario.max_player_cpu, scenario.max_dropped_frames)
    audit_reasons = [f"client CPU-starved: {starved}"] if starved else []
    rows = [
        {
            "path": r["path"],
            "kind": _kind(r["path"], manifest),
            "level": _level(r["path"], manifest),
            "segment": _segment(r["path"], manifest),
            "status": r.get("status") or 0,
            "bytes": r.get("bytes") or 0,
            "start_s": r.get("start_s"),
            "end_s": r.get("end_s"),
            "protocol": r.get("protocol"),
        }
        for r in doc["requests"]
    ]
    tcp_share = _tcp_share_series(rows)
    t0 = doc.get("t0_monotonic")  # CLOCK_MONOTONIC, one clock for every namespace
    started = (t0 + time.time() - time.monotonic()) * 1000 if t0 is not None else None
    return Measurement(
        status=status,
        error=error,
        protocol_requested=protocol,
        protocol_negotiated=negotiated,
        started_unix_ms=started,
        metrics=qoe_metrics(p),
        details={
            "player": "dashjs",
            "browser_version": doc.get("browser_version"),
            "quic": doc.get("quic"),
            "warmup": doc.get("warmup"),
            "ended": p.ended,
            "stalls": [asdict(s) for s in p.stalls],
            **cpu,
            "dash_events": [e for e in doc.get("events", []) if e["type"].startswith("dash:")],
        },
        series=series_rows(p) + tcp_share,
        rows={"requests": rows},
        artifacts=artifacts,
        audit_reasons=audit_reasons,
    )


# Dropped frames say CPU starvation only when the CPU was busy and there were enough of them:
# a renderer drops frames around a stall or a quality switch whatever its CPU (h3
# runs flagged at 0.33 cores), and two drops of a short clip's few frames are no evidence.
MIN_DROPPED_FRAMES = 10
BUSY_CORES = 0.9  # a starved decoder keeps about a core busy
NEAR_EVENT_S = 1.0  # drops this close to a stall or a rendered-quality switch are explained


def cpu_figures(doc: dict, stalls: list[Stall] | None = None) -> dict[str, Any]:
    wall = doc.get("wall_s") or 0.0
    cpu = doc.get("cpu_s")
    last = doc["samples"][-1] if doc.get("samples") else {}
    frames, dropped = last.get("frames"), last.get("dropped")
    unexplained = unexplained_drops(doc.get("samples") or [], stalls or [])
    return {
        "player_cpu_s": cpu,
        "player_wall_s": wall,
        "player_cpu_cores": (cpu / wall) if cpu is not None and wall > 0 else None,
        "frames": frames,
        "dropped_frames": dropped,
        "dropped_share": (dropped / frames) if frames else None,
        "unexplained_dropped_frames": unexplained,
        "unexplained_dropped_share": (unexplained / frames) if frames and unexplained is not None else None,
    }


def unexplained_drops(samples: list[dict], stalls: list[Stall]) -> int | None:
    """Frames the renderer dropped (its own counter, sampled once a second) away from
    stalls and rendered-quality switches, which drop frames whatever the CPU."""
    if not samples or samples[-1].get("dropped") is None:
        return None
    switches = [
        b["t_s"]
        for a, b in zip(samples, samples[1:])
        if a.get("quality") is not None and b.get("quality") != a.get("quality")
    ]
    total, before = 0, 0
    for smp in samples:
        now = smp.get("dropped")
        if now is None:
            continue
        t = smp.get("t_s", 0.0)
        near = any(st.start_s - NEAR_EVENT_S <= t <= st.end_s + NEAR_EVENT_S for st in stalls) or any(
            abs(t - w) <= NEAR_EVENT_S for w in switches
        )
        if not near:
            total += max(0, now - before)
        before = now
    return total


def starved_reason(cpu: dict, max_cores: float, max_dropped: float) -> str | None:
    """Why the player was CPU-starved, or None: its CPU over the run near the machine's, or
    many frames dropped away from stalls and switches while it kept a core busy."""
    cores = cpu.get("player_cpu_cores")
    if cores is not None and cores > max_cores:
        return f"the browser used {cores:.2f} cores on average (limit {max_cores:g})"
    share = cpu.get("unexplained_dropped_share", cpu.get("dropped_share"))
    dropped = cpu.get("unexplained_dropped_frames", cpu.get("dropped_frames"))
    if (
        share is not None
        and share > max_dropped
        and (dropped or 0) >= MIN_DROPPED_FRAMES
        and cores is not None
        and cores >= BUSY_CORES
    ):
        return (
            f"{share:.1%} of the frames were dropped away from stalls and switches while the "
            f"browser kept {cores:.2f} cores busy (limit {max_dropped:.0%})"
        )
    return None


def playback_from_driver(doc: dict, manifest: Manifest) -> Playback:
    """Stalls from the video element (`waiting` .. `playing` after the first `playing`);
    segment levels from the video segments requested (the last request of each index)."""
    levels = [r.bandwidth / 1000 for r in manifest.video]
    ids = {r.id: i for i, r in enumerate(manifest.video)}
    by_index: dict[int, int] = {}
    for r in sorted(doc["requests"], key=lambda r: r.get("start_s") or 0):
        m = _SEGMENT.search(r["path"])
        if m and m.group(1) in ids and not r.get("failed"):
            by_index[int(m.group(2)) - manifest.video[0].start_number] = ids[m.group(1)]
    samples_in = doc.get("samples", [])
    end_s = samples_in[-1]["t_s"] if samples_in else 0.0
    startup, stalls, open_at = None, [], None
    for e in sorted(doc.get("events", []), key=lambda e: e["t_s"]):
        if e["type"] == "video:playing":
            if startup is None:
                startup = e["t_s"]
            elif open_at is not None:
                stalls.append(Stall(open_at, e["t_s"]))
                open_at = None
        elif e["type"] == "video:waiting" and startup is not None and open_at is None:
            if e.get("position", 0) < manifest.duration_s - END_SLACK_S:
                open_at = e["t_s"]
        elif e["type"] == "video:ended" and open_at is not None:
            stalls.append(Stall(open_at, e["t_s"]))
            open_at = None
    if open_at is not None:
        stalls.append(Stall(open_at, end_s))
    ended = bool(doc.get("ended"))
    position = samples_in[-1]["position"] if samples_in else 0.0
    played = manifest.segments if ended else min(manifest.segments, math.ceil(position / manifest.segment_s))
    segment_levels = [by_index[i] for i in range(played) if i in by_index]
    samples = []
    for s in samples_in:
        t = s["t_s"]
        level = s.get("rendered") if s.get("rendered") is not None else s.get("quality")
        samples.append(
            Sample(
                t_s=t,
                position_s=s.get("position") or 0.0,
                buffer_s=s.get("buffer") or 0.0,
                level=level if startup is not None and t >= startup else None,
                stalled=any(x.start_s <= t < x.end_s for x in stalls),
            )
        )
    return Playback(
        levels_kbit=levels,
        segment_levels=segment_levels,
        stalls=stalls,
        startup_s=startup,
        ended=ended,
        end_s=end_s,
        samples=samples,
    )


def _protocol_of(media: list[dict]) -> str | None:
    seen = {r.get("protocol") for r in media if r.get("protocol")}
    return None if not seen else seen.pop() if len(seen) == 1 else "mixed"


def _kind(path: str, manifest: Manifest) -> str:
    if path.endswith(".mpd"):
        return "manifest"
    m = _SEGMENT.search(path)
    if m:
        return "video" if any(r.id == m.group(1) for r in manifest.video) else "audio"
    return "init" if "/init-" in path else "page"


def _level(path: str, manifest: Manifest) -> int | None:
    for i, r in enumerate(manifest.video):
        if path.endswith("/" + r.init) or (m := _SEGMENT.search(path)) and m.group(1) == r.id:
            return i
    return None


def _segment(path: str, manifest: Manifest) -> int | None:
    m = _SEGMENT.search(path)
    return int(m.group(2)) - manifest.video[0].start_number if m else None


def _tcp_share_series(rows: list[dict]) -> list[dict]:
    """Per second of the run: `F` and `F_udp`, the bytes received over TCP and over QUIC in
    that second (the fallback analysis's F), and `tcp_share`, Chaudhary's
    F(t) = TCP bytes / all bytes up to t."""
    per = bytes_per_second(rows)
    if not per:
        return []
    n = len(next(iter(per.values())))
    zero = [0.0] * n
    udp = per.get("h3", zero)
    tcp = [sum(v[k] for p, v in per.items() if p != "h3") for k in range(n)]
    out, cum_tcp, cum_all = [], 0.0, 0.0
    for k in range(n):
        cum_tcp, cum_all = cum_tcp + tcp[k], cum_all + tcp[k] + udp[k]
        out += [
            {"name": "F", "key": "", "t_s": float(k), "value": tcp[k]},
            {"name": "F_udp", "key": "", "t_s": float(k), "value": udp[k]},
            {"name": "tcp_share", "key": "", "t_s": float(k), "value": cum_tcp / cum_all if cum_all else 0.0},
        ]
    return out
