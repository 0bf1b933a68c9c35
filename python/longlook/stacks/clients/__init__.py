"""Page-load clients the runner can drive, all with the signature of `endpoint.fetch`:

    fetch(testbed, *, url, protocol, run_id, cert_dir, out, timeout_s, mode, zero_rtt, keylog)
        -> fetch_result.FetchResult   (its `document` follows the fetch JSON of docs/interfaces.md)

"native" is the project's own `endpoint fetch`. "chromium" is headless Chromium over the
DevTools protocol, QUIC forced for h3 runs and disabled for h2 runs; "chromium-discovery"
lets it learn h3 from Alt-Svc and race, as on the web (clients/chromium.py). A new client is
a module here plus a line in `fetcher`.
"""

from __future__ import annotations

import functools

from typing import Callable

from ...errors import LonglookError

KNOWN_CLIENTS = ("native", "chromium", "chromium-discovery")


def fetcher(name: str, *, chromium_netlog: bool = False, logs: bool = True) -> Callable:
    """The fetch function of client `name`. `chromium_netlog` keeps Chromium's net-log of
    each run (ignored by the native client, whose server writes qlogs anyway); without `logs`
    the native client writes no qlog (Chromium writes none but its net-log)."""
    if name == "native":
        from ..endpoint import fetch

        return fetch if logs else functools.partial(fetch, qlog=False)
    if name in ("chromium", "chromium-discovery"):
        from .chromium import chromium_fetcher

        return chromium_fetcher(quic="discovery" if name == "chromium-discovery" else "pinned", netlog=chromium_netlog)
    raise LonglookError(f"unknown client '{name}'", hint=f"use one of: {', '.join(KNOWN_CLIENTS)}")
