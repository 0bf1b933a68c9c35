"""The QUIC matrix's interoperability grid, read from an experiment whose arms are client x
server pairs of QUIC stacks (`longlook matrix`): each run's capture (the router's full pcap
and the run's TLS key log) judged by the interop cases a page load of several objects can
show (wire.cases), never by exit codes. Per pair and case: passed when every judged run of
the pair passed, failed with the evidence of the first run that failed, not measurable when
no run's capture could show it (not decrypted: no key log from either side), and "no run"
when the pair has no run with a capture.

Our client also runs one resumed 0-RTT connection per server, judged for resumption and 0-RTT;
a stack's client whose adapter says how to ask it for a case (stacks.base.CLIENT_CASES:
resumption, 0-RTT, key update, ChaCha20, QUIC v2) runs one more connection per server and case,
judged for that case. Every pair also downloads across a NAT that rebinds the client's port, and
one that rebinds its address (rebind-port, rebind-addr), and our client, which can move on
purpose, across a handover to a second path with every server (connection-migration).
A server whose adapter says how to start it for a case
(stacks.base.SERVER_CASES: Retry) is started once more for it, and every client that can connect
to it runs one connection there, judged for that case.
The page's other grid (goodput per pair at 10, 100 and 1000 Mbit/s, CPU per MB and the regime
each cell was in) is perf.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ...errors import LonglookError
from ...stacks.base import CLIENT_CASES, SERVER_CASES
from ...stacks.endpoint import NATIVE_UNSUPPORTED
from ...stacks.registry import resolve
from ..wire_runs import judge_cases, run_field
from ..wire_runs.moves import move_case

# what one page load of several objects over HTTP/3 can show, in the interop runner's names
PAGE_CASES = ("handshake", "transfer", "multiplexing", "http3", "ecn")
# what a run whose client resumed its session with 0-RTT shows (a warm-up connection, then the
# measured one: two handshakes, so the page's cases are judged on the other runs)
RESUMED_CASES = ("resumption", "zerortt")
# what a run whose client was asked for a case (its arm's client_case) is judged by
# (each case by itself; 0-RTT also shows the resumption it rests on)
ASKED_CASES = {case: RESUMED_CASES if case == "zerortt" else (case,) for case in CLIENT_CASES}
# what a run whose path moved under it shows (its link's NAT rebinding, or a handover our
# client moves across on purpose): wire_runs.moves says which
MOVE_CASES = ("rebind-port", "rebind-addr", "connection-migration")
CASES = tuple(dict.fromkeys(PAGE_CASES + RESUMED_CASES + CLIENT_CASES + SERVER_CASES + MOVE_CASES))
# the cases a run's arm exists for: passed only when its download also went to its end, as the
# interop runner's tests of them ask (a 0-RTT request the server took, on a connection that
# then never delivered the page, is no working 0-RTT); the page's own cases are judged on what
# the wire shows, whatever became of the page (transfer is its completion)
COMPLETED_CASES = tuple(dict.fromkeys(RESUMED_CASES + CLIENT_CASES + SERVER_CASES + MOVE_CASES))
NO_RUN = "no run"
UNSUPPORTED = "unsupported"


@dataclass
class Cell:
    """One pair's verdict on one case, over its judged runs."""

    verdict: str = NO_RUN
    passed: int = 0
    judged: int = 0
    evidence: str = ""

    def add(self, result: dict) -> None:
        self.judged += 1
        if result["verdict"] == "passed":
            self.passed += 1
            if self.verdict in (NO_RUN, "not measurable"):
                self.verdict, self.evidence = "passed", result["evidence"]
        elif result["verdict"] == "failed":
            if self.verdict != "failed":
                self.verdict, self.evidence = "failed", result["evidence"]
        elif self.verdict == NO_RUN:
            self.verdict, self.evidence = "not measurable", result["evidence"]


@dataclass
class Matrix:
    clients: list[str]
    servers: list[str]
    cases: tuple[str, ...]
    cells: dict[tuple[str, str, str], Cell] = field(default_factory=dict)  # (client, server, case)

    def cell(self, client: str, server: str, case: str) -> Cell:
        return self.cells.setdefault((client, server, case), Cell())


def pair_of(run: dict) -> tuple[str, str]:
    """(client, server) of a run, from the options it ran with."""
    options = run.get("options") or {}
    client = options.get("client") or "native"
    return ("ours" if client == "native" else client), options.get("server") or "ours"


def resumed(run: dict) -> bool:
    return bool((run.get("options") or {}).get("zero_rtt"))


def cases_of(run: dict) -> tuple[str, ...]:
    """The cases a run is judged by: the one its client was asked for, or a resumed run's,
    or a page load's."""
    options = run.get("options") or {}
    if options.get("server_case"):  # a server started for a case (Retry) is judged by it alone
        return (options["server_case"],) if options["server_case"] in SERVER_CASES else ()
    asked = options.get("client_case")
    if asked:
        return ASKED_CASES.get(asked, ())
    return RESUMED_CASES if resumed(run) else PAGE_CASES


def declared(stack: str, side: str, case: str) -> str | None:
    """Why `stack`'s adapter says it cannot do `case` as `side` ("client", "server"), or None
    (a client that is no stack, Chromium, declares nothing; ours: stacks.endpoint)."""
    if stack == "ours":
        return NATIVE_UNSUPPORTED.get(case)
    try:
        adapter = resolve(stack)
    except LonglookError:
        return None
    table = adapter.unsupported_as_client if side == "client" else adapter.unsupported_as_server
    return table.get(case)


def mark_unsupported(m: Matrix) -> None:
    """A pair's case that did not pass and that its client or server declares it cannot do
    is "unsupported" with the declaration, apart from the failures; one that passed stays
    passed (the run shows the declaration wrong)."""
    for client in m.clients:
        for server in m.servers:
            # a pair that cannot complete a handshake can do none of the other cases either
            no_handshake = m.cell(client, server, "handshake").verdict != "passed" and (
                declared(client, "client", "handshake") or declared(server, "server", "handshake")
            )
            for case in m.cases:
                cell = m.cell(client, server, case)
                if cell.verdict == "passed":
                    continue
                if declared(client, "client", case):
                    cell.verdict, cell.evidence = UNSUPPORTED, f"{client}: {declared(client, 'client', case)}"
                elif declared(server, "server", case):
                    cell.verdict, cell.evidence = UNSUPPORTED, f"{server}: {declared(server, 'server', case)}"
                elif no_handshake:
                    cell.verdict, cell.evidence = UNSUPPORTED, f"no handshake: {no_handshake}"


def judge(experiment: Path, runs, moved: tuple = ()) -> Matrix:
    """The grid of an experiment's runs (a store's runs frame): each run with a capture judged
    by the cases it can show (a resumed run by RESUMED_CASES, the others by PAGE_CASES;
    analyses.wire_runs keeps the verdicts beside the run); and of each experiment in `moved`,
    (experiment, runs, cells) of a scenario whose links move the client, each run judged by
    the case of its cell's move (MOVE_CASES)."""
    judged = [(experiment, r, cases_of(r)) for r in runs.to_dict("records")]
    for folder, moved_runs, cells in moved:
        links = {cell.id: cell.link for cell in cells}
        for r in moved_runs.to_dict("records"):
            case = move_case(links.get(r.get("cell_id")), run_field(r.get("details")).get("migration"))
            judged.append((folder, r, (case,) if case else ()))
    pairs = [pair_of(r) for _, r, _ in judged]
    m = Matrix(sorted({c for c, _ in pairs}), sorted({s for _, s in pairs}), CASES)
    for (folder, run, cases), (client, server) in zip(judged, pairs):
        for case, result in judge_cases(folder, run, cases).items():
            cell = m.cell(client, server, case)
            if result is not None:
                cell.add(completed(case, run, result))
    mark_unsupported(m)
    return m


def completed(case: str, run: dict, result: dict) -> dict:
    """A case of COMPLETED_CASES passes only when the run's download went on to its end (as
    the interop runner's tests ask): a new path validated and then stalled, or 0-RTT accepted
    on a connection that then never finished, is a failure, with both halves of the
    evidence."""
    if case not in COMPLETED_CASES or result["verdict"] != "passed" or run.get("status") in (None, "ok"):
        return result
    why = run.get("error")
    why = why if isinstance(why, str) and why else run.get("status")
    return {"verdict": "failed", "evidence": f"{result['evidence']}; but the download did not complete ({why})"}


MARK = {"passed": "✓", "failed": "✗", "not measurable": "?", NO_RUN: "·", UNSUPPORTED: "–"}
LEGEND = (
    "✓ passed in every judged run (k/n: runs passed of runs judged), ✗ failed (evidence below), "
    "? the capture could not show it (not decrypted), – unsupported: the client's or server's adapter "
    "declares it cannot do it (why below; not a failure), · not run: the client's adapter has no switch "
    "to ask its client for the case, or the server's none to start its server for it (Retry) (the "
    "page's cases are asked of every pair)"
)


def markdown(m: Matrix) -> str:
    """One grid per case (rows: clients, columns: servers), then every failure with its
    evidence; ✓ passed, ✗ failed, ? not measurable from the capture, · no run."""
    out = [LEGEND, ""]
    for case in m.cases:
        out += [f"### {case}", "", "| client \\ server | " + " | ".join(m.servers) + " |"]
        out.append("|---|" + "---|" * len(m.servers))
        for c in m.clients:
            marks = []
            for s in m.servers:
                cell = m.cells.get((c, s, case), Cell())
                count = f" {cell.passed}/{cell.judged}" if cell.judged else ""
                marks.append(MARK[cell.verdict] + count)
            out.append(f"| {c} | " + " | ".join(marks) + " |")
        out.append("")
    failures = [(k, v) for k, v in sorted(m.cells.items()) if v.verdict in ("failed", "not measurable")]
    if failures:
        out += ["### Evidence", ""]
        out += [f"- {c} → {s}, {case}: {v.verdict}: {v.evidence}" for (c, s, case), v in failures]
        out.append("")
    declarations = sorted({(case, v.evidence) for (_, _, case), v in m.cells.items() if v.verdict == UNSUPPORTED})
    if declarations:
        out += ["### Declared unsupported", ""]
        out += [f"- {case}: {why}" for case, why in declarations]
        out.append("")
    return "\n".join(out)
