"""One page load in a fresh headless Chromium, run inside the client namespace:

    python -m longlook.stacks.clients.chromium_driver --url URL --quic forced|off|discovery|first-visit
        --spki BASE64 --run-id ID --out fetch.json --har page.har [--netlog FILE]
        [--timeout-s 60] [--protocol-requested h3|h2] [--mode page] [--chromium PATH]

Writes the fetch JSON (docs/interfaces.md, plus `last_object_ms`, per-object `protocol`,
`client`, `browser_version`, `quic`, `navigation_timing`, `artifacts`) and a HAR 1.2 file.
Exit codes mirror `endpoint fetch`: 0 ok, 3 the page came over another protocol than
requested (or a mix), 1 any other failure, 124 no load within --timeout-s.

The browser is new for every run (fresh profile, cache disabled, no connection reuse) and
is driven over the DevTools pipe, so nothing listens in the namespace.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable
from urllib.parse import urlsplit

from ...versions import __version__
from .devtools_pipe import DevToolsBrowser, DevToolsError
from .har import build_har
from .page_load import NetworkLog, bulk_document, fetch_document, protocol_label

DEFAULT_CHROMIUM = "/usr/bin/chromium"
QUIC_MODES = ("forced", "off", "discovery", "first-visit")
EXIT_OK, EXIT_FAILED, EXIT_PROTOCOL_MISMATCH, EXIT_TIMEOUT = 0, 1, 3, 124
UNUSED_PORT = 9  # discard: discovery mode names the host with it (see browser_argv)

# Quiet, reproducible browser: no first-run UI, and no background traffic (which this closed
# network refuses anyway) competing with the measured page.
BASE_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--metrics-recording-only",
    "--mute-audio",
    "--disable-breakpad",
    "--disable-domain-reliability",
    "--password-store=basic",
)


def browser_argv(
    chromium: str,
    *,
    url: str,
    quic: str,
    spki: str,
    user_data_dir: str,
    netlog: str | None = None,
    keylog: str | None = None,
) -> list[str]:
    """Chromium's command line for one run (exact flags: shared/notes/quic-stacks.md).

    forced: QUIC to the page's origin from the first request (`--origin-to-force-quic-on`).
    off: `--disable-quic`, so the endpoint's Alt-Svc cannot move the page to h3.
    discovery: the browser learns h3 from Alt-Svc and races QUIC against TCP, as on the web.
    first-visit: the same browser, but the drivers give it no unmeasured first visit: the
    measured one begins over TCP and learns the Alt-Svc itself, as a new user's does.
    The SPKI pin makes Chromium trust the endpoint's self-signed certificate; QUIC fails
    without it even with --ignore-certificate-errors. Chromium also refuses QUIC to a host
    whose certificate is not from a public root unless the host is named in
    --origin-to-force-quic-on (it allows the host, whatever the port), so discovery names
    the host with an unused port: QUIC allowed for the page's origin, but not forced.
    `keylog`: the browser's TLS secrets (QUIC and TCP) appended there, NSS key log format.
    """
    if quic not in QUIC_MODES:
        raise ValueError(f"quic mode {quic!r}: use one of {', '.join(QUIC_MODES)}")
    parts = urlsplit(url)
    argv = [chromium, *BASE_FLAGS, f"--user-data-dir={user_data_dir}", f"--ignore-certificate-errors-spki-list={spki}"]
    port = parts.port or 443
    if quic == "forced":
        argv.append(f"--origin-to-force-quic-on={parts.hostname}:{port}")
    elif quic == "off":
        argv.append("--disable-quic")
    else:
        unused = UNUSED_PORT if port != UNUSED_PORT else UNUSED_PORT + 1
        argv.append(f"--origin-to-force-quic-on={parts.hostname}:{unused}")
    if netlog:
        argv += [f"--log-net-log={netlog}", "--net-log-capture-mode=Everything"]
    if keylog:
        argv.append(f"--ssl-key-log-file={keylog}")
    return [*argv, "about:blank"]


NAVIGATION_TIMING_JS = (
    "JSON.stringify({origin: performance.timeOrigin, nav: performance.getEntriesByType('navigation')[0]})"
)


@dataclass
class BrowserLoad:
    """One browser's load of the page."""

    version: str = ""
    log: NetworkLog = field(default_factory=NetworkLog)
    navigation: dict | None = None  # the page's Navigation Timing entry
    time_origin_unix_ms: float | None = None
    error: str | None = None
    timed_out: bool = False
    session: str = ""  # the DevTools session on the page (its Network events are enabled)


def load_page(browser: DevToolsBrowser, *, url: str, run_id: str, deadline: float) -> BrowserLoad:
    """Navigate and collect events until the load event and every request have finished."""
    session = browser.attach_to_first_page()
    browser.send("Network.enable", session=session)
    browser.send("Network.setCacheDisabled", {"cacheDisabled": True}, session=session)
    # the server files this run's connection logs under its id (docs/interfaces.md)
    browser.send("Network.setExtraHTTPHeaders", {"headers": {"x-longlook-run": run_id}}, session=session)
    browser.send("Page.enable", session=session)
    load = BrowserLoad(session=session)

    def take(events) -> None:
        for event in events:
            if event.get("sessionId") == session:
                load.log.on_event(event["method"], event.get("params", {}))
            if load.log.complete() or (load.log.document is not None and load.log.document.failed):
                return

    # Page.navigate answers once the document's response arrives (or the navigation fails)
    try:
        nav = browser.send(
            "Page.navigate", {"url": url}, session=session, timeout_s=max(1.0, deadline - time.monotonic())
        )
    except DevToolsError:
        take(browser.events(time.monotonic()))  # what did arrive, for the HAR
        load.error, load.timed_out = "no response to the page request within the timeout", True
        return load
    if nav.get("errorText"):
        load.error = f"navigation failed: {nav['errorText']}"
        return load
    take(browser.events(deadline))
    doc = load.log.document
    if doc is not None and doc.failed:
        load.error = f"navigation failed: {doc.failed}"
    elif not load.log.complete():
        load.error, load.timed_out = "the page did not load within the timeout", True
    else:
        timing = json.loads(
            browser.send(
                "Runtime.evaluate", {"expression": NAVIGATION_TIMING_JS, "returnByValue": True}, session=session
            )["result"]["value"]
        )
        load.navigation, load.time_origin_unix_ms = timing.get("nav"), timing.get("origin")
    return load


# the page a bulk object is fetched from: any path of the object's origin (the server answers
# it, if only with a 404), so the fetch is same-origin and its body readable, never opaque
BULK_PAGE = "/longlook-bulk-page"
# read the body to its end chunk by chunk (a body nobody reads stops the download at the
# stream's high-water mark; arrayBuffer would hold 50 MB at once)
FETCH_JS = (
    "(async () => {{ const r = await fetch({url}, {{cache: 'no-store'}}); const rd = r.body.getReader(); "
    "let n = 0; for (;;) {{ const c = await rd.read(); if (c.done) break; n += c.value.length; }} "
    "return n; }})()"
)


def load_object(browser: DevToolsBrowser, *, url: str, run_id: str, deadline: float) -> BrowserLoad:
    """A bulk object the way a web application downloads one: a page of its origin, then
    fetch() reading the body to its end. Navigating to the object itself would make it a
    download, which headless Chromium aborts."""
    parts = urlsplit(url)
    page = load_page(browser, url=f"{parts.scheme}://{parts.netloc}{BULK_PAGE}", run_id=run_id, deadline=deadline)
    doc = page.log.document
    if doc is None or doc.failed or doc.status is None:
        page.error = page.error or "the page the object is fetched from did not load"
        return page
    page.error = None  # the page itself is a 404 where the server serves no such path
    session = page.session
    browser.send(
        "Runtime.evaluate", {"expression": FETCH_JS.format(url=json.dumps(url)), "awaitPromise": False}, session=session
    )

    def object_done() -> bool:
        return any(r.url == url and r.done for r in page.log.requests.values())

    for event in browser.events(deadline):
        if event.get("sessionId") == session:
            page.log.on_event(event["method"], event.get("params", {}))
        if object_done():
            break
    if not object_done():
        page.error, page.timed_out = "the object did not arrive within the timeout", True
    return page


def browse(argv: list[str], *, url: str, run_id: str, deadline: float, stderr, bulk: bool = False) -> BrowserLoad:
    """Start a browser, load the page (or fetch the bulk object) once, close the browser."""
    load = BrowserLoad()
    try:
        with DevToolsBrowser.launch(argv, stderr=stderr) as browser:
            version = browser.send("Browser.getVersion").get("product", "")
            fetcher = load_object if bulk else load_page
            load = fetcher(browser, url=url, run_id=run_id, deadline=deadline)
            load.version = version
    except (DevToolsError, OSError) as e:
        load.error = f"chromium: {e}"
    return load


def run(args: argparse.Namespace) -> int:
    out, har_path = Path(args.out), Path(args.har)
    profile = tempfile.mkdtemp(prefix="longlook-chromium-")
    netlog = str(Path(args.netlog).resolve()) if args.netlog else None
    keylog = str(Path(args.keylog).resolve()) if args.keylog else None
    argv = browser_argv(
        args.chromium, url=args.url, quic=args.quic, spki=args.spki, user_data_dir=profile, netlog=netlog, keylog=keylog
    )
    deadline = time.monotonic() + args.timeout_s
    stderr = open(out.with_name(out.stem + ".chromium.stderr"), "wb")
    warmup = None
    try:
        if args.quic == "discovery":
            # An unmeasured first visit in the same profile: the browser learns the origin's
            # Alt-Svc (saved in the profile when it closes), so the measured visit, by a new
            # browser with no open connections, races QUIC against TCP as a returning
            # visitor's would. Without it a fresh profile always loads over TCP.
            first = browse(
                browser_argv(args.chromium, url=args.url, quic=args.quic, spki=args.spki, user_data_dir=profile),
                url=args.url,
                run_id=f"{args.run_id}-warmup",
                deadline=deadline,
                stderr=stderr,
            )
            warmup = {
                "ok": first.error is None,
                "error": first.error,
                "protocol": protocol_label(first.log.page_requests()),
            }
        load = browse(
            argv, url=args.url, run_id=args.run_id, deadline=deadline, stderr=stderr, bulk=args.mode == "bulk"
        )
    finally:
        stderr.close()
        shutil.rmtree(profile, ignore_errors=True)

    common = dict(
        run_id=args.run_id,
        url=args.url,
        protocol_requested=args.protocol_requested,
        time_origin_unix_ms=load.time_origin_unix_ms,
        error=load.error,
    )
    if args.mode == "bulk":
        doc = bulk_document(load.log, **common)
    else:
        doc = fetch_document(load.log, mode=args.mode, navigation=load.navigation, **common)
    har = build_har(
        load.log,
        browser_version=load.version.partition("/")[2] or load.version,
        creator_version=__version__,
        title=args.url,
        navigation=load.navigation,
    )
    har_path.write_text(json.dumps(har, indent=1))
    artifacts = {"har": har_path.name}
    if netlog and Path(netlog).exists():
        artifacts["netlog"] = Path(netlog).name
    doc.update(
        client="chromium",
        browser_version=load.version,
        quic=args.quic,
        artifacts=artifacts,
        **({"warmup": warmup} if warmup else {}),
    )
    out.write_text(json.dumps(doc, indent=1))
    if load.timed_out:
        return EXIT_TIMEOUT
    if doc["ok"] and doc["protocol"] != args.protocol_requested:
        return EXIT_PROTOCOL_MISMATCH
    return EXIT_OK if doc["ok"] else EXIT_FAILED


def driver_parser(prog: str, description: str, timeout_s: float) -> argparse.ArgumentParser:
    """The arguments every Chromium driver takes (page loads here, dash.js in the video kind)."""
    p = argparse.ArgumentParser(prog=prog, description=description)
    p.add_argument("--url", required=True)
    p.add_argument("--quic", choices=QUIC_MODES, required=True)
    p.add_argument("--spki", required=True, help="base64 SHA-256 of the server's SubjectPublicKeyInfo")
    p.add_argument("--run-id", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--timeout-s", type=float, default=timeout_s)
    p.add_argument("--chromium", default=DEFAULT_CHROMIUM)
    p.add_argument("--keylog", help="append the browser's TLS secrets here (NSS key log format)")
    return p


def drive(run: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """A driver's run: SIGTERM from the parent's timeout unwinds through `with`, which closes
    the browser."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(EXIT_TIMEOUT))
    return run(args)


def main(argv: list[str] | None = None) -> int:
    p = driver_parser("chromium_driver", __doc__.split("\n\n")[0], timeout_s=60.0)
    p.add_argument("--har", required=True)
    p.add_argument("--netlog")
    p.add_argument("--protocol-requested", default="h3")
    p.add_argument("--mode", default="page")
    return drive(run, p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
