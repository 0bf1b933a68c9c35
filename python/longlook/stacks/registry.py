"""The QUIC stacks longlook can run, by name: one line each. A stack is named `NAME` (its
default version) or `NAME@VERSION` (e.g. `quic-go@v0.64.1`, built beside the default).
`ours` is the project's own endpoint (crates/endpoint), the default server and client."""

from __future__ import annotations

from pathlib import Path

from ..errors import LonglookError
from ..lookup import Registry
from ..versions import file_digest
from .base import OURS, Stack

# One registration line per stack ("module:class", imported when used, so one stack's missing
# pieces never stop another). Our endpoint is a stack too, built by scripts/setup.sh with the
# workspace, not by stacks.install; STACKS are the others (`is_stack`: a stack other than ours).
STACKS: Registry[type[Stack]] = Registry("stack", hint="install one with `longlook stacks install NAME`")
STACKS.register("aioquic", "longlook.stacks.adapters.aioquic:Aioquic")
STACKS.register("quic-go", "longlook.stacks.adapters.quicgo:QuicGo")
STACKS.register("ngtcp2", "longlook.stacks.adapters.ngtcp2:Ngtcp2")
STACKS.register("quiche", "longlook.stacks.adapters.quiche:Quiche")
STACKS.register("tquic", "longlook.stacks.adapters.tquic:Tquic")
STACKS.register("s2n-quic", "longlook.stacks.adapters.s2nquic:S2nQuic")
STACKS.register("kwik", "longlook.stacks.adapters.kwik:Kwik")
STACKS.register("gm-quic", "longlook.stacks.adapters.gmquic:GmQuic")
STACKS.register("msquic", "longlook.stacks.adapters.msquic:Msquic")
STACKS.register("go-x-net", "longlook.stacks.adapters.xnetquic:XNetQuic")
OWN: Registry[type[Stack]] = Registry("stack")  # ours: built with the workspace, never installed
OWN.register(OURS, "longlook.stacks.adapters.ours:Ours")


def split(spec: str) -> tuple[str, str | None]:
    name, _, version = spec.partition("@")
    return name, version or None


def is_stack(spec: str) -> bool:
    """A stack built into the stacks cache: another stack, or our endpoint built against a
    quinn-proto release (`ours@0.11.15`; plain `ours` is the workspace's build)."""
    name, version = split(spec)
    return name in STACKS or (name == OURS and version not in (None, "workspace"))


def stack_class(name: str) -> type[Stack]:
    if name in OWN:
        return OWN.get(name)
    if name not in STACKS:
        raise LonglookError(
            f"unknown stack {name!r}",
            hint=f"known stacks: {', '.join([OURS, *STACKS])}; install one with `longlook stacks install NAME`",
        )
    return STACKS.get(name)


def resolve(spec: str) -> Stack:
    """`NAME` or `NAME@VERSION` -> the stack's adapter (not checked for installation)."""
    name, version = split(spec)
    return stack_class(name)(version)


def client_fetcher(name: str, *, logs: bool = True, **kwargs):
    """The fetch function of client `name`: a stack's, else one of stacks.clients (native,
    chromium, ...); `logs`: its qlog (the scenario's client_logs)."""
    if is_stack(name):
        return resolve(name).fetcher(logs=logs)
    from .clients import fetcher

    return fetcher(name, logs=logs, **kwargs)


def sends_run_header(client: str) -> bool:
    """Whether client `client` names its run in a request header (stacks' example clients
    may not; longlook's own clients do)."""
    return not is_stack(client) or resolve(client).sends_run_header


def migrates_by_route(client: str) -> bool:
    """Whether client `client`, asked for connection migration, moves to the address its OS's
    route names (the route must move under it) rather than to one it is given."""
    return is_stack(client) and resolve(client).migrates_by_route


def require_servers(servers: list[tuple[str, str | None]]) -> None:
    """Before a grid: every (stack, congestion control) a server will run is installed and
    offered, else one clear error naming the stack and its install command."""
    for spec, cc in servers:
        resolve(spec).require(cc)


def versions_of(specs: list[str]) -> dict[str, str]:
    """The exact version of each other stack named (recorded with the experiment; ours is
    recorded by the core with every experiment, as the endpoint binary's)."""
    stacks = [resolve(spec) for spec in dict.fromkeys(specs) if is_stack(spec)]
    return {s.spec: s.version_info() for s in stacks}


def binary_digests(specs: list[str]) -> dict[str, str]:
    """The SHA-256 (first 12 hex) of each named stack's built binary, where it has one: two
    builds of one release from different adapters or toolchains differ here."""
    out = {}
    for spec in dict.fromkeys(specs):
        if not is_stack(spec):
            continue
        binary = getattr(resolve(spec), "binary", None)
        if isinstance(binary, Path) and binary.is_file():
            out[spec] = file_digest(binary)
    return out
