"""`longlook matrix`: every installed QUIC client against every installed server (ours and
the stacks'), each pair through the same testbed, interoperability judged on the wire.

The experiment is data: the command writes its scenario (`DIR/matrix.toml`, a page-load
scenario whose arms are the pairs, with the router's full pcap and the runs' key logs) and
runs it into `DIR/experiment` (resumable: run it again to continue), and the moves grid's two
(`DIR/rebinding.toml`: every pair across a NAT's rebinding; `DIR/migration.toml`: our client
across a handover) into `DIR/rebinding` and `DIR/migration`; then each run's capture is judged
by the interop cases it can show (analyses.matrix) and the grid written to `DIR/matrix.md` and
`DIR/matrix.json`. `--no-run` only judges what DIR holds."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Optional

import typer

from ..errors import LonglookError, check_output

WORKLOAD = "10x20k"  # several objects: transfer and multiplexing show on one page


def pair_label(client: str, server: str) -> str:
    """An arm's label: `NAME@VERSION` (a release) spelled with `+`, which labels allow."""
    return f"{client}_{server}".replace("@", "+")


def runnable(client: str, server: str) -> bool:
    """Whether a pair can make a connection at all: not when the server's adapter declares it
    cannot complete a handshake with another stack's client (gm-quic's server needs SNI, which
    clients send no address); its grid cells say "unsupported" with the declaration, and no
    run waits out its timeout for it."""
    from ..analyses.matrix import declared

    return client == server or declared(server, "server", "handshake") is None


def arm(client: str, server: str, suffix: str = "", /, **fields: str | bool) -> list[str]:
    """One h3 arm's lines for the pair (`ours`: the scenario's own client, our native one, and
    our server), labelled by the pair and `suffix`, with `fields` (an interop case, zero_rtt;
    `client = "native"`, which a client case asks to be named)."""
    lines = ["", "[[arms]]", f'label = "{pair_label(client, server)}{suffix}"', 'protocol = "h3"']
    if client != "ours":
        lines.append(f'client = "{client}"')
    if server != "ours":
        lines.append(f'server = "{server}"')
    for key, value in fields.items():
        lines.append(f"{key} = {str(value).lower()}" if isinstance(value, bool) else f'{key} = "{value}"')
    return lines


def pair_arms(
    stacks: list[str], clients: list[str] | None = None, only: set[tuple[str, str]] | None = None
) -> list[str]:
    """One h3 arm per client x server pair of `stacks` (`ours`: the native client, our server),
    and per pair of each of the `clients` that are clients only (Chromium) with every server;
    pairs that cannot connect (`runnable`) are left out, and with `only` every pair but those."""
    lines = []
    for client in [*stacks, *(clients or [])]:
        for server in stacks:
            if runnable(client, server) and (only is None or (client, server) in only):
                lines += arm(client, server)
    return lines


def _link(rate_mbit: float, rtt_ms: float, *extra: str) -> list[str]:
    """One link of a generated scenario: `rate_mbit`, `rtt_ms`, a one-BDP buffer, and `extra`
    lines (a NAT, a handover)."""
    return ["", "[[links]]", f"rate_mbit = {rate_mbit:g}", f"rtt_ms = {rtt_ms:g}", "buffer_bdp = 1", *extra]


def _scenario_head(name: str, description: str, *, rounds: int, lines: list[str], links: list[str]) -> list[str]:
    """A generated scenario's opening, `lines` (its own settings and tables) and its `links`."""
    head = [
        f"# written by `longlook matrix`: {description}",
        f'name = "{name}"',
        f'description = "{description}"',
        "seed = 1",
        f"rounds = {rounds}",
    ]
    return head + lines + links


# what an interoperability scenario runs with: full handshakes (0-RTT is asked for by its own
# arms), the router's whole pcap and the runs' key logs, so each run is judged on the wire
ON_THE_WIRE = ["", "[options]", "zero_rtt = false", "", "[capture]", 'pcap = "full"', "keylog = true"]


def scenario_toml(
    stacks: list[str], *, rounds: int, rate_mbit: float, rtt_ms: float, clients: list[str] | None = None
) -> str:
    """A page-load scenario with one arm per client x server pair of `stacks` (`ours` is our
    endpoint: the native client, our server), and of each client-only client (`clients`:
    Chromium, QUIC pinned to every server)."""
    lines = _scenario_head(
        "quic-matrix",
        f"QUIC interoperability of {len(stacks)} stacks, every client against every server.",
        rounds=rounds,
        lines=["timeout_s = 30", "retries = 1", f'workloads = ["{WORKLOAD}"]', *ON_THE_WIRE],
        links=_link(rate_mbit, rtt_ms),
    )
    lines += pair_arms(stacks, clients)
    # our client can be asked for a resumed 0-RTT connection (a warm-up connection for the
    # ticket, then the measured one): one more arm per server; the stacks' clients have no
    # such switch in their adapters yet
    if "ours" in stacks:
        for server in (s for s in stacks if runnable("ours", s)):
            lines += arm("ours", server, "_0rtt", zero_rtt=True)
    lines += case_arms(stacks)
    lines += server_case_arms(stacks, clients)
    return "\n".join(lines) + "\n"


def case_arms(stacks: list[str]) -> list[str]:
    """One arm per client (ours, each stack's), interop case it can be asked for (ours:
    stacks.endpoint.NATIVE_CASE_ARGV; a stack's: Stack.client_cases) and server it can connect
    to: resumption and 0-RTT with a first connection for the ticket, key update, ChaCha20,
    QUIC v2."""
    from ..stacks.base import MOVING_CLIENT_CASES
    from ..stacks.endpoint import NATIVE_CASE_ARGV
    from ..stacks.registry import is_stack, resolve

    # (a moving case is asked on the migration scenario's handover: migration_toml)
    askable = {
        c: tuple(k for k in resolve(c).client_cases if k not in MOVING_CLIENT_CASES)
        for c in stacks
        if c != "ours" and is_stack(c)
    }
    if "ours" in stacks:
        askable = {"ours": tuple(NATIVE_CASE_ARGV), **askable}
    lines = []
    for client, cases in askable.items():
        for case in cases:
            named = {"client": "native"} if client == "ours" else {}
            for server in (s for s in stacks if runnable(client, s)):
                lines += arm(client, server, f"_{case}", **named, client_case=case)
    return lines


def server_case_arms(stacks: list[str], clients: list[str] | None = None) -> list[str]:
    """One arm per server, interop case it can be started for (Stack.server_cases: Retry)
    and client that can connect to it (each stack's, ours, and the client-only ones)."""
    from ..stacks.registry import is_stack, resolve

    lines = []
    for server in (s for s in stacks if s == "ours" or is_stack(s)):
        for case in resolve(server).server_cases:
            for client in (c for c in [*stacks, *(clients or [])] if runnable(c, server)):
                lines += arm(client, server, f"_{case}", server_case=case)
    return lines


# the moves grid: a download still going when its path moves (1.6 s at the rate, the move 1 s in)
MOVE_RATE_MBIT, MOVE_RTT_MS, MOVE_SIZE, MOVE_AT_S = 20.0, 20.0, "4m", 1.0
# the NAT's two moves (linkem's NAT, docs/nat.md) and the handover's second path
NAT_MOVES = ("port", "address")
# the client's two public addresses, in the shared address space of carrier NATs (RFC 6598):
# a server may refuse a move between addresses of no unicast scope, as linkem's default ones
# in the benchmarking range 198.18.0.0/15 are (s2n-quic's path migration validator: both
# addresses in one scope, with no way for an application to change it)
NAT_PUBLIC = ("100.64.0.1", "100.64.0.2")
HANDOVER_PATH = "{ rate_mbit = 10, rtt_ms = 60, buffer_bytes = 75000 }"


def _moves_head(name: str, description: str, rounds: int, links: list[str]) -> list[str]:
    lines = ["timeout_s = 20", "retries = 1", f'workloads = ["bulk:{MOVE_SIZE}"]', *ON_THE_WIRE]
    return _scenario_head(name, description, rounds=rounds, lines=lines, links=links)


def nat_moves_toml(stacks: list[str], *, rounds: int, clients: list[str] | None = None) -> str:
    """The rebinding cases' scenario: every pair downloads across a NAT that rebinds the
    client's port (one link) and one that rebinds its address (another) 1 s in. A rebinding
    asks nothing of the client (it does not know it moved), so every client meets it as it is."""
    links = []
    for to in NAT_MOVES:
        nat = f'rebind_at_s = [{MOVE_AT_S:g}], rebind_to = "{to}", public = "{NAT_PUBLIC[0]}"'
        nat = f'{nat}, rebind_public = "{NAT_PUBLIC[1]}"' if to == "address" else nat
        links += _link(MOVE_RATE_MBIT, MOVE_RTT_MS, f"nat = {{ {nat} }}")
    description = f"QUIC rebinding of {len(stacks)} stacks: every pair across a NAT's port and address rebinding."
    lines = _moves_head("quic-matrix-rebinding", description, rounds, links)
    return "\n".join(lines + pair_arms(stacks, clients)) + "\n"


def migration_toml(stacks: list[str], *, rounds: int, clients: list[str] | None = None) -> str:
    """The connection migration case's scenario: across a Wi-Fi to LTE handover 1 s into the
    download, our client (quinn's rebind to its second address, with a new connection ID) and
    each stack's client whose adapter can tell it to move (Stack.client_cases) go to their
    second address on purpose, each with every server it can connect to (the client-only
    `clients` cannot be told to)."""
    from ..stacks.registry import is_stack, resolve

    # each path behind a NAT of its own (NAT_PUBLIC), so the server sees the client move
    # between two scoped addresses, not between the testbed's own
    handover = f'handover = {{ at_s = {MOVE_AT_S:g}, public = "{NAT_PUBLIC[1]}", path = {HANDOVER_PATH} }}'
    links = _link(MOVE_RATE_MBIT, MOVE_RTT_MS, f'nat = {{ public = "{NAT_PUBLIC[0]}" }}', handover)
    description = "QUIC connection migration: each client that can be told to move goes to its second path."
    lines = _moves_head("quic-matrix-migration", description, rounds, links)
    arms = pair_arms(stacks, only={("ours", s) for s in stacks})
    for client in (c for c in stacks if c != "ours" and is_stack(c)):
        if "connection-migration" not in resolve(client).client_cases:
            continue
        for server in (s for s in stacks if runnable(client, s)):
            arms += arm(client, server, "_migration", client_case="connection-migration")
    return "\n".join(lines + arms) + "\n"


# the moves grid's scenarios, each run into DIR/<name>: the links its runs are judged by
MOVES = {"rebinding": nat_moves_toml, "migration": migration_toml}
# the grids judged from captures: carried with their wire verdicts, without the captures
INTEROP_GRIDS = ("experiment", *MOVES)


# a bulk object a few seconds long at each rate of the performance grid (slow start a
# small part of it): 4 s at 10 and 100 Mbit/s, 1.6 s at 1 Gbit/s
PERF_SIZES = {10.0: "5m", 100.0: "50m", 1000.0: "200m"}
# a page of many small objects: bound by round trips and per-request work, not by the rate, so
# measured at the grid's lowest rate only (each rate would add its runs for the same answer)
PERF_PAGE = "100x10k"
# from this rate on, two stacks and linkem keep this machine's two vCPUs busy and a flagged run
# measured again is mostly flagged again: the grid shows such a pair as emulator-limited
# instead of paying for a second try
NO_RETRY_FROM_MBIT = 100.0


def perf_size(rate_mbit: float) -> str:
    if rate_mbit in PERF_SIZES:
        return PERF_SIZES[rate_mbit]
    return f"{max(1, round(rate_mbit * 4 / 8))}m"  # about 4 s at the rate


def perf_scenario_toml(
    stacks: list[str],
    *,
    rate_mbit: float,
    rounds: int,
    rtt_ms: float,
    clients: list[str] | None = None,
    page: bool = False,
    why: set[tuple[str, str]] | None = None,
) -> str:
    """The performance grid's scenario at one rate: every pair (and each client-only client,
    Chromium, with every server) downloads one bulk object, and with `page` a page of many
    small objects, over a path of that rate with a one-BDP buffer, the servers' and the
    clients' per-connection logs off (their cost would be counted as the stack's CPU; a
    client whose run is read from its qlog keeps it: Stack.fetch_from_qlog); one more arm,
    our client and server over kernel TCP (h2), is every pair's reference. With `why`: those
    pairs only, one bulk download each with the servers' logs on, to read what held a slow
    one's server back (analyses/matrix/limits.py), counted for nothing else."""
    from ..analyses.matrix.perf import TCP_ARM

    workloads = [f"bulk:{perf_size(rate_mbit)}"] + ([PERF_PAGE] if page and why is None else [])
    lines = _scenario_head(
        f"quic-matrix-perf-{rate_mbit:g}" + ("-why" if why is not None else ""),
        f"QUIC matrix performance at {rate_mbit:g} Mbit/s: "
        + ("what held the slow pairs' servers back." if why is not None else "every client against every server."),
        rounds=rounds,
        links=_link(rate_mbit, rtt_ms),
        lines=[
            "timeout_s = 60",
            "retries = 1",
            f"server_logs = {'true' if why is not None else 'false'}",
            f"client_logs = {'true' if why is not None else 'false'}",
            "workloads = [" + ", ".join(f'"{w}"' for w in workloads) + "]",
            "",
            "[options]",
            "zero_rtt = false",
            *(["", "[fidelity]", "retry_flagged = false"] if rate_mbit >= NO_RETRY_FROM_MBIT else []),
        ],
    )
    # (with `why` too: a scenario compares at least two arms)
    tcp = ["", "[[arms]]", f'label = "{TCP_ARM}"', 'protocol = "h2"']
    return "\n".join(lines + pair_arms(stacks, clients, why) + tcp) + "\n"


def _run(
    scenario: Path,
    experiment: Path,
    link_check: bool,
    allow_version_change: bool = False,
    executor: str = "local",
    address: str | None = None,
) -> None:
    from .run import run_scenario

    try:
        run_scenario(
            scenario,
            experiment,
            resume=experiment.exists(),
            link_check=link_check,
            command="longlook matrix",
            allow_version_change=allow_version_change,
            executor=executor,
            address=address,
            # the matrix writes its scenarios again and resumes each experiment by itself
            resume_hint=f"longlook matrix --out {experiment.parent} ... with the same options",
        )
    except typer.Exit as e:
        # 1: pairs that never completed a run, which is the matrix's finding, not an error; an
        # interrupt (128 + signal) stops here, every finished run kept
        if e.exit_code != 1:
            raise


def check_spec_or_exit(spec: str) -> str:
    """A release named on the command line in its one spelling (`quic-go@0.64.1` ->
    `quic-go@v0.64.1`), or one clear error naming what is wrong."""
    from ..stacks.builds.specs import check_spec

    try:
        return check_spec(spec)
    except ValueError as e:
        raise LonglookError(
            f"--release {spec}: {e}", hint="`longlook stacks list` names each stack's releases"
        ) from None


def installed_stacks() -> list[str]:
    """Ours and every stack installed in the stacks cache, in registry order: one built here
    whose adapter changed since counts (the run builds it again first), or a change to an
    adapter would drop its stack from the grid without a word."""
    from ..stacks.registry import STACKS, resolve

    def built(name: str) -> bool:
        stack = resolve(name)
        return stack.installed() or stack.build_dir.is_dir()

    return ["ours", *(name for name in STACKS.names() if built(name))]


def chromium_installed() -> bool:
    from ..stacks.clients.chromium import chromium_path

    try:
        chromium_path()
    except LonglookError:
        return False
    return True


def matrix(
    out: Path = typer.Option(..., "--out", "-o", help="folder: matrix.toml, experiment/, matrix.md, matrix.json"),
    stack: list[str] = typer.Option(
        [], "--stack", help="a stack to include, client and server (repeatable); default: ours and every installed one"
    ),
    rounds: int = typer.Option(1, "--rounds", min=1, help="runs per pair"),
    rate: float = typer.Option(20.0, "--rate", help="the link's rate in Mbit/s (a one-BDP buffer)"),
    rtt: float = typer.Option(20.0, "--rtt", help="the link's round-trip time in ms"),
    no_run: bool = typer.Option(False, "--no-run", help="measure nothing: judge what --out holds"),
    perf: list[float] = typer.Option(
        [], "--perf", help="also the performance grid at this rate in Mbit/s (repeatable: 10, 100, 1000)"
    ),
    perf_rounds: int = typer.Option(
        3,
        "--perf-rounds",
        min=2,
        help="runs per pair and workload in the performance grid (two at least: a verdict needs them)",
    ),
    link_check: bool = typer.Option(True, "--link-check/--no-link-check", help="self-check the link first"),
    chromium: bool = typer.Option(
        True, "--chromium/--no-chromium", help="Chromium as a client of every server too (when it is installed)"
    ),
    allow_version_change: bool = typer.Option(
        False,
        "--allow-version-change",
        help="continue experiments begun before a stack, linkem or the endpoint changed (what changed is recorded)",
    ),
    archive: Optional[Path] = typer.Option(
        None,
        "--archive",
        help="a folder that carries the grids between machines: a grid --out does not hold is "
        "unpacked from ARCHIVE/NAME.tar.xz first (experiment, rebinding, migration, perf-RATE), "
        "and each grid that measured runs is packed there afterwards; commit it to resume a long "
        "matrix on another machine. An interoperability grid's runs are judged before packing, "
        "since their captures stay behind: their verdicts travel",
    ),
    interop: bool = typer.Option(
        True,
        "--interop/--no-interop",
        help="run the interoperability grid and the moving-path cases first; --no-interop runs only "
        "the performance grids (--perf), e.g. to advance grids carried by --archive across machines, "
        "and judges the interoperability grid only if --out already holds one",
    ),
    moves: bool = typer.Option(
        True,
        "--moves/--no-moves",
        help="also the cases of a moving path: every pair across a NAT's port and address rebinding, "
        "our client across a handover (rebind-port, rebind-addr, connection-migration)",
    ),
    publish: Optional[Path] = typer.Option(
        None,
        "--publish",
        help="also write the grids into this markdown page, between its two marker lines "
        "(analyses/matrix/publish.py), with when and on what each scenario ran",
    ),
    release: list[str] = typer.Option(
        [],
        "--release",
        help="also this release of a stack, NAME@VERSION, as its own client and server (repeatable): "
        "the page then shows what changed between the stack's releases",
    ),
    executor: str = typer.Option(
        "local",
        "--executor",
        help="local (this machine's testbed) or ray (each cell on a cluster node with the testbed "
        "resource and the same stacks installed; docs/cluster.md): the runs and their captures come "
        "back to --out, where they are judged",
    ),
    address: Optional[str] = typer.Option(
        None, "--address", help="Ray cluster address HOST:PORT (--executor ray; default: RAY_ADDRESS)"
    ),
) -> None:
    """Every QUIC client against every server on one emulated path, interoperability judged
    from each run's decrypted capture (handshake, transfer, multiplexing, HTTP/3, ECN, and
    the cases each client or server can be asked for: resumption, 0-RTT, key update, ChaCha20,
    QUIC v2, Retry), and across a moving path (NAT rebinding, connection migration)."""
    from ..analyses.matrix import judge, markdown
    from ..analyses.matrix.history import history_markdown
    from ..analyses.matrix.limits import pair_regimes
    from ..analyses.matrix.perf import perf_grid, perf_markdown, slow_pairs
    from ..core.store import DB_FILE, Store
    from ..stacks.registry import resolve

    if not no_run:
        from ..core.executors import by_name

        by_name(executor, address)  # one clear error before anything is written
    if not interop and not no_run and not perf:
        raise LonglookError(
            "--no-interop without --perf: there is nothing to run",
            hint="name the performance grids to advance, e.g. --no-interop --perf 100 --perf 1000",
        )
    published = check_output(publish, "--publish", suffixes=(".md",)) if publish is not None else None
    if published is not None:  # before hours of runs: the page has a place for the grids
        from ..analyses.matrix.publish import place

        place(published)
    stacks = list(dict.fromkeys(stack)) or installed_stacks()
    for spec in release:
        if "@" not in spec:
            raise LonglookError(f"--release {spec}: name a release as NAME@VERSION", hint="e.g. quic-go@v0.64.1")
    stacks = list(dict.fromkeys([*stacks, *(check_spec_or_exit(r) for r in release)]))
    for s in stacks:
        resolve(s)  # an unknown name is one clear error before anything is written
    clients = ["chromium"] if chromium and chromium_installed() else []
    out.mkdir(parents=True, exist_ok=True)
    experiment = out / "experiment"
    if archive is not None:
        from ..core.carry import carry_in

        archive = check_output(archive, "--archive", directory=True)
        grids = [*INTEROP_GRIDS, *(f"perf-{r:g}{why}" for r in perf for why in ("", "-why"))]
        for c in carry_in(archive, out, grids):
            print(f"unpacked {c.archive} ({c.bytes / 1e6:.1f} MB) into {out / c.name}", file=sys.stderr)
    if not no_run:
        scenario = out / "matrix.toml"
        scenario.write_text(scenario_toml(stacks, rounds=rounds, rate_mbit=rate, rtt_ms=rtt, clients=clients))

        # every grid of this command runs with the same checks and on the same executor
        def run(scenario_file: Path, into: Path) -> None:
            _run(scenario_file, into, link_check, allow_version_change, executor, address)

        try:
            if interop:
                run(scenario, experiment)
            for name, write in MOVES.items() if moves and interop else ():
                moves_file = out / f"{name}.toml"
                moves_file.write_text(write(stacks, rounds=rounds, clients=clients))
                run(moves_file, out / name)
            for r in perf:
                perf_file = out / f"perf-{r:g}.toml"
                perf_file.write_text(
                    perf_scenario_toml(
                        stacks,
                        rate_mbit=r,
                        rounds=perf_rounds,
                        rtt_ms=rtt,
                        clients=clients,
                        page=r == min(perf),
                    )
                )
                run(perf_file, out / f"perf-{r:g}")
                with Store.open(out / f"perf-{r:g}", read_only=True) as store:
                    slow = slow_pairs(perf_grid(store.runs_frame(), r))
                if slow:  # one more run each, with server logs: what held the server back
                    why_file = out / f"perf-{r:g}-why.toml"
                    why_file.write_text(
                        perf_scenario_toml(stacks, rate_mbit=r, rounds=1, rtt_ms=rtt, clients=clients, why=slow)
                    )
                    run(why_file, out / f"perf-{r:g}-why")
        finally:  # an interrupted grid is carried too: every finished run kept
            if archive is not None:
                from ..core.carry import carry_out

                grids_run = [out / f"perf-{r:g}{why}" for r in perf for why in ("", "-why")]
                # read while the qlogs are whole: a carried one keeps no packet it sent
                for folder in grids_run:
                    pair_regimes(folder)
                if (experiment / DB_FILE).exists():  # judged while the captures are here: they stay behind
                    with Store.open(experiment, read_only=True) as store:
                        judge(experiment, store.runs_frame(), moved=tuple(_moved(out)))
                grids_run = [out / g for g in INTEROP_GRIDS] + grids_run
                for c in carry_out(archive, [g for g in grids_run if g.exists()]):
                    print(f"packed {out / c.name} as {c.archive} ({c.bytes / 1e6:.1f} MB)", file=sys.stderr)
    if not experiment.exists() and not interop:
        # the performance grids advanced (and were carried); the page needs the interop grid
        print(
            f"{out}: no interoperability grid here, so no page: run `longlook matrix` without "
            "--no-interop to measure it and judge every grid",
            file=sys.stderr,
        )
        return
    if not experiment.exists():
        raise LonglookError(f"{out}: no experiment to judge", hint="run `longlook matrix` without --no-run first")
    with Store.open(experiment, read_only=True) as store:
        runs = store.runs_frame()
    m = judge(experiment, runs, moved=tuple(_moved(out)))
    text = "# QUIC matrix: interoperability from the wire\n\n" + markdown(m)
    grids = {}
    perf_dirs = [p for p in out.glob("perf-*") if p.is_dir() and not p.name.endswith("-why")]
    for folder in sorted(perf_dirs, key=lambda p: float(p.name.split("-", 1)[1])):
        r = float(folder.name.split("-", 1)[1])
        with Store.open(folder, read_only=True) as store:
            perf_runs = store.runs_frame()
        grids[r] = perf_grid(perf_runs, r, senders=pair_regimes(folder.with_name(folder.name + "-why")))
    if history := history_markdown(m):
        text += "\n## Across releases\n\n" + history
    if grids:
        text += "\n## Performance\n\n" + perf_markdown(grids, m.clients, m.servers)
    (out / "matrix.md").write_text(text)
    doc = {
        f"{c} -> {s}": {case: vars(v) for (cc, ss, case), v in m.cells.items() if (cc, ss) == (c, s)}
        for c in m.clients
        for s in m.servers
    }
    doc["performance"] = {
        f"{r:g}": {w: {f"{c} -> {sv}": p.as_dict() for (c, sv), p in grid.items()} for w, grid in by_w.items()}
        for r, by_w in grids.items()
    }
    (out / "matrix.json").write_text(json.dumps(doc, indent=1))
    typer.echo(text)
    if published is not None:
        from ..analyses.matrix.publish import generated_part, publish as write_published

        write_published(published, generated_part(out, text, shlex.join(["longlook", *sys.argv[1:]])))
        print(f"published: {published}", file=sys.stderr)


def _moved(out: Path):
    """(experiment, runs, cells) of each moves scenario `out` holds a run of: its runs are
    judged by their cell's move."""
    from ..core.store import DB_FILE, Store

    for name in MOVES:
        folder = out / name
        if (folder / DB_FILE).exists():
            # the scenario the store ran (a carried grid comes without the command's file)
            with Store.open(folder, read_only=True) as store:
                runs, scenario = store.runs_frame(), store.scenario()
            yield folder, runs, scenario.cells()


def register(app: typer.Typer) -> None:
    app.command("matrix")(matrix)
