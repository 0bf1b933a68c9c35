"""Report section: the migration fingerprint of each client -> server pair, where a link of the
experiment has a NAT or a handover and the runs kept a full pcap and their key log: how the
pair moved the connection, read from the wire (wire.migration) over every QUIC run whose
capture shows a move. The path changes section says whether the connection survived and what
it cost; this one says how each stack went about it (RFC 9000 §9), so two stacks' answers to
the same move sit side by side, as the conformance fingerprint sets their windows and ACKs
side by side."""

from __future__ import annotations

import math
from collections import Counter
from html import escape


from ...analyses.wire_runs import migration_of_run
from ...render.html import Section, numbers_table
from .path_changes import change_of, median_of


def _ms(values) -> str:
    m = median_of(values)
    return "–" if math.isnan(m) else f"{m:,.0f}"


def _share(values, n: int) -> str:
    """ "k of n" over the runs where the item was measured (None: not shown by the capture)."""
    known = [v for v in values if v is not None]
    if not known:
        return "–"
    yes = sum(bool(v) for v in known)
    return f"{yes} of {len(known)}" + ("" if len(known) == n else f" ({n - len(known)} not shown)")


def _seen(prints: list[dict], key: str) -> list[bool | None]:
    """Per run: whether the server's packets to the new address show the item `key` times
    (True), show it did not happen (False: every one of them decrypted), or cannot say."""
    return [True if p.get(key) is not None else (False if not p.get("hidden") else None) for p in prints]


def _mode(values) -> str:
    known = [v for v in values if v is not None]
    if not known:
        return "–"
    value, count = Counter(known).most_common(1)[0]
    text = {True: "yes", False: "no"}.get(value, str(value)) if isinstance(value, bool) else str(value)
    return text + ("" if count == len(known) else f" ({count} of {len(known)})")


def _amplification(prints: list[dict]) -> str:
    ratios = [p["unvalidated_sent"] / p["unvalidated_received"] for p in prints if p.get("unvalidated_received")]
    if not ratios:
        return "–"
    worst = max(ratios)
    return f"{worst:.1f}x ({'within' if worst <= 3 else 'over'} 3x)"


def _pair(sc, arm: str) -> str:
    found = next((a for a in getattr(sc, "arms", []) if getattr(a, "label", None) == arm), None)
    if found is None:
        return escape(arm)
    client = getattr(found, "client", None) or "ours"
    server = getattr(found, "server", None) or "ours"
    return f"{escape(arm)} ({escape(str(client))} → {escape(str(server))})"


def section(store, analysis) -> Section | None:
    sc, runs = analysis.scenario, analysis.runs
    experiment = getattr(store, "directory", None)
    capture = getattr(sc, "capture", None)
    if sc is None or runs.empty or experiment is None or capture is None:
        return None
    if not (capture.pcap == "full" and capture.keylog):
        return None
    try:
        changed = {c.id for c in sc.cells() if change_of(getattr(c, "link", None)) != "none"}
    except (AttributeError, ValueError):
        return None
    quic = runs[runs["cell_id"].isin(changed)]
    if "protocol_requested" in quic:
        quic = quic[quic["protocol_requested"] == "h3"]
    rows = []
    order = {cid: i for i, cid in enumerate(analysis.cells["cell_id"])} if hasattr(analysis, "cells") else {}
    groups = sorted(quic.groupby(["cell_id", "arm"]), key=lambda t: (order.get(t[0][0], 0), t[0][1]))
    for (cid, arm), g in groups:
        prints = [p for _, run in g.iterrows() if (p := migration_of_run(experiment, run.to_dict())) is not None]
        moved = [p for p in prints if p.get("moved")]
        if not prints:
            continue
        col = lambda key: [p.get(key) for p in moved]  # noqa: E731
        rows.append(
            [
                escape(cid),
                _pair(sc, arm),
                f"{len(moved)} of {len(prints)}" + (f": {_mode(col('moved'))}" if moved else ""),
                _mode([p.get("disable_active_migration") for p in prints]),
                " / ".join(_mode([p.get(k) for p in prints]) for k in ("server_cid_limit", "client_cid_limit")),
                _ms(col("cids_issued")) if moved else "–",
                _share(col("new_dcid"), len(moved)) if moved else "–",
                f"{_share(_seen(moved, 'challenge_ms'), len(moved))}, {_ms(col('challenge_ms'))} ms" if moved else "–",
                _ms(col("response_ms")),
                _share(col("client_probed"), len(moved)) if moved else "–",
                f"{_share(_seen(moved, 'data_ms'), len(moved))}, {_ms(col('data_ms'))} ms" if moved else "–",
                _amplification(moved),
                _ms(col("old_path_last_ms")),
                _share(col("old_path_challenged"), len(moved)) if moved else "–",
            ]
        )
    if not rows:
        return None
    head = [
        "cell",
        "arm (client → server)",
        "runs that moved, of those read",
        "server: disable_active_migration",
        "active_connection_id_limit (server / client)",
        "CIDs the server issued before the move, median",
        "client used a new, issued CID",
        "server's PATH_CHALLENGE to the new address, after (ms)",
        "client's PATH_RESPONSE, after (ms)",
        "client probed the path itself",
        "data to the new address, after (ms)",
        "sent before validation, worst",
        "server's last packet to the old address, after (ms)",
        "server re-validated the old path",
    ]
    note = (
        "<p class='note'>Per cell and arm, from each QUIC run's capture at the server's side of the NAT (the "
        "router's pcap, decrypted with the run's key log), over the cells whose path changes: the connection's "
        "first move "
        "(a datagram from an address or port the client had not used). Times are medians from that "
        'datagram; a share counts the runs whose capture shows the item ("not shown": not decrypted). '
        "What it says, against RFC 9000 §9: the server's announced disable_active_migration and how many "
        "connection IDs each side takes; whether the client moved to a connection ID the server had issued "
        "(§9.5: never the old path's, so the paths cannot be linked); how soon the server validated the new "
        "path (§9.3) and sent data there; the bytes it sent there before validation against three times "
        "what it had received (§8.2.1); how long it kept sending to the old address, and whether it "
        "validated that one too (§9.3.3). A row with no move is a client that did not move its connection "
        "(it stayed on the old path or failed).</p>"
    )
    return Section(id="migration-fingerprint", title="Migration fingerprint", html=note + numbers_table(head, rows))
