"""dash.js in a fresh headless Chromium, run inside the client namespace:

    python -m longlook.kinds.video.dashjs_driver --url PLAYER_URL --quic forced|off|discovery|first-visit
        --spki BASE64 --run-id ID --out dashjs.json [--timeout-s 90] [--chromium PATH]

Loads the player page (page/player.html, served with the clip; dash.js and page/player.js are
injected over the DevTools protocol, so only the clip crosses the emulated link) and samples it once a second
over the DevTools protocol (position, buffer level, quality requested and rendered, dropped
frames, the video element's and dash.js's events), with every request's protocol and bytes
from the Network domain; stops when the clip ends, the player reports an error, or the
timeout passes. Writes one JSON document; exit 0 when it played to the end, 124 on timeout,
1 otherwise. Chromium's flags and the DevTools pipe are the page-load client's
(stacks/clients/chromium_driver.py, devtools_pipe.py).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

from ...stacks.clients.chromium_driver import browser_argv, drive, driver_parser
from ...stacks.clients.devtools_pipe import DevToolsBrowser, DevToolsError
from ...stacks.clients.page_load import NetworkLog

EXIT_OK, EXIT_FAILED, EXIT_TIMEOUT = 0, 1, 124
SAMPLE_S = 1.0
PLAYER_FLAGS = ("--autoplay-policy=no-user-gesture-required",)
SAMPLE_JS = "JSON.stringify(window.llSample ? window.llSample() : null)"


def player_argv(chromium: str, *, url: str, quic: str, spki: str, profile: str, keylog: str | None = None) -> list[str]:
    argv = browser_argv(chromium, url=url, quic=quic, spki=spki, user_data_dir=profile, keylog=keylog)
    return [*argv[:-1], *PLAYER_FLAGS, argv[-1]]  # about:blank stays last


def group_cpu_s(session_id: int) -> float:
    """CPU seconds (user + system, with reaped children) of every process in a session: the
    browser and its renderer, GPU and network-service processes."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == session_id:
            total += sum(int(x) for x in fields[11:15])
    return total / tick


HERE = Path(__file__).parent
INJECTED = (HERE / "static" / "dash.all.min.js", HERE / "page" / "player.js")


def _once_dom_is_there(script: Path) -> str:
    """The script run when the DOM is ready (dash.js throws if evaluated before the document
    exists); listeners run in the order added, so dash.js is defined before player.js runs."""
    return "document.addEventListener('DOMContentLoaded', function () {\n" + script.read_text() + "\n}, {once: true});"


def _setup(browser: DevToolsBrowser, run_id: str) -> str:
    session = browser.attach_to_first_page()
    browser.send("Network.enable", session=session)
    browser.send("Network.setCacheDisabled", {"cacheDisabled": True}, session=session)
    browser.send("Network.setExtraHTTPHeaders", {"headers": {"x-longlook-run": run_id}}, session=session)
    browser.send("Page.enable", session=session)
    for script in INJECTED:  # into every document, not over the link
        browser.send("Page.addScriptToEvaluateOnNewDocument", {"source": _once_dom_is_there(script)}, session=session)
    return session


def warm_up(argv: list[str], url: str, run_id: str, deadline: float, stderr) -> dict:
    """The unmeasured first visit of discovery mode: the page only, so the profile learns the
    server's Alt-Svc (kept when the browser closes)."""
    sep = "&" if "?" in url else "?"
    log = NetworkLog()
    try:
        with DevToolsBrowser.launch(argv, stderr=stderr) as browser:
            session = _setup(browser, f"{run_id}-warmup")
            browser.send("Page.navigate", {"url": url + sep + "warmup=1"}, session=session)
            for event in browser.events(min(deadline, time.monotonic() + 15)):
                if event.get("sessionId") == session:
                    log.on_event(event["method"], event.get("params", {}))
                if log.load_event_s is not None:
                    break
    except (DevToolsError, OSError) as e:
        return {"ok": False, "error": f"chromium: {e}"}
    return {
        "ok": log.load_event_s is not None,
        "error": None,
        "protocols": sorted({r.protocol for r in log.requests.values() if r.protocol}),
    }


def play(argv: list[str], *, url: str, run_id: str, timeout_s: float, stderr) -> dict:
    doc: dict = {
        "samples": [],
        "events": [],
        "requests": [],
        "error": None,
        "timed_out": False,
        "ended": False,
        "browser_version": "",
        "cpu_s": None,
    }
    log = NetworkLog()
    try:
        with DevToolsBrowser.launch(argv, stderr=stderr) as browser:
            doc["browser_version"] = browser.send("Browser.getVersion").get("product", "")
            session = _setup(browser, run_id)
            t0 = time.monotonic()
            deadline = t0 + timeout_s
            browser.send("Page.navigate", {"url": url}, session=session, timeout_s=timeout_s)
            next_sample = t0 + SAMPLE_S
            while True:
                for event in browser.events(next_sample):
                    if event.get("sessionId") == session:
                        log.on_event(event["method"], event.get("params", {}))
                reply = browser.send(
                    "Runtime.evaluate", {"expression": SAMPLE_JS, "returnByValue": True}, session=session
                )
                t = time.monotonic() - t0
                sample = json.loads(reply.get("result", {}).get("value") or "null")
                if sample:
                    events = sample.pop("events", [])
                    offset = t - sample["now"] / 1000  # page clock -> run clock
                    doc["events"] += [{**e, "t_s": e["t"] / 1000 + offset} for e in events]
                    doc["samples"].append({**sample, "t_s": t})
                    if sample.get("error"):
                        doc["error"] = sample["error"]
                        break
                    if sample.get("ended"):
                        doc["ended"] = True
                        break
                if time.monotonic() >= deadline:
                    doc["timed_out"] = True
                    doc["error"] = f"the clip did not finish within {timeout_s:.0f} s"
                    break
                next_sample += SAMPLE_S
            doc["cpu_s"] = group_cpu_s(browser.process.pid)
            doc["wall_s"] = time.monotonic() - t0
            doc["t0_monotonic"] = t0
    except (DevToolsError, OSError) as e:
        doc["error"] = f"chromium: {e}"
    for r in log.page_requests():
        start = r.issued_s - doc.get("t0_monotonic", r.issued_s)  # CDP timestamps: CLOCK_MONOTONIC
        end = (r.finished_s - doc.get("t0_monotonic", r.finished_s)) if r.finished_s else None
        doc["requests"].append(
            {
                "path": urlsplit(r.url).path,
                "protocol": r.protocol,
                "status": r.status,
                "bytes": r.body_bytes,
                "encoded_bytes": r.encoded_bytes,
                "start_s": start,
                "end_s": end,
                "failed": r.failed,
            }
        )
    return doc


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    profile = tempfile.mkdtemp(prefix="longlook-dashjs-")
    deadline = time.monotonic() + args.timeout_s
    stderr = open(out.with_name(out.stem + ".chromium.stderr"), "wb")
    warmup = None
    try:
        argv = player_argv(
            args.chromium,
            url=args.url,
            quic=args.quic,
            spki=args.spki,
            profile=profile,
            keylog=str(Path(args.keylog).resolve()) if args.keylog else None,
        )
        if args.quic == "discovery":
            warmup = warm_up(argv, args.url, args.run_id, deadline, stderr)
        doc = play(argv, url=args.url, run_id=args.run_id, timeout_s=args.timeout_s, stderr=stderr)
    finally:
        stderr.close()
        shutil.rmtree(profile, ignore_errors=True)
    doc.update(quic=args.quic, url=args.url, run_id=args.run_id, warmup=warmup)
    out.write_text(json.dumps(doc))
    if doc["timed_out"]:
        return EXIT_TIMEOUT
    return EXIT_OK if doc["ended"] and not doc["error"] else EXIT_FAILED


def main(argv: list[str] | None = None) -> int:
    return drive(run, driver_parser("dashjs_driver", __doc__.split("\n\n")[0], timeout_s=90.0).parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
