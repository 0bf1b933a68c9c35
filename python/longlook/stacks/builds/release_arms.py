"""Releases as arms, for every kind: `versions = "NAME@A..B"` (every release of
the range on its registry, stacks/builds/releases.py) or a list of `NAME@VERSION`s turns each arm
that runs stack NAME (its server or its client) into one arm per release, labelled
`<label>-<version>`, with that release as its server and/or client.

The releases stay arms of one cell, so the core runs them back to back in a fresh random
order every round (ScenarioBase.round_order): time drift cannot pass for a release effect.
The page-load, fairness and video kinds each call `release_arms` from their scenario's
validation; analyses/releases finds the sweep again by those labels and the arms' server or
client. `recorded_versions` is what a kind records of the stacks its arms run (the exact
version and the binary's digest of each), the same way for every kind.
"""

from __future__ import annotations

from typing import Callable, Iterable, Protocol, Sequence, TypeVar

from ...errors import LonglookError
from ..registry import binary_digests, split, versions_of
from .specs import check_spec
from .releases import expand


class StackArm(Protocol):
    """An arm that names its stacks (pydantic models: `model_copy` makes the release's)."""

    label: str
    server: str | None
    client: str | None

    def model_copy(self, *, update: dict) -> "StackArm": ...


A = TypeVar("A", bound=StackArm)


def chosen_releases(versions: Iterable[str]) -> dict[str, list[str]]:
    """`versions` entries -> stack name -> its releases in the order given (ranges expanded
    oldest first, repeats dropped). A ValueError (the scenario's error) for a range with no
    release, an unknown stack or release, or an entry that names no release."""
    chosen: dict[str, list[str]] = {}
    for entry in versions:
        try:
            specs = expand(entry)
        except LonglookError as e:
            raise ValueError(f"versions: {e.message}" + (f" ({e.hint})" if e.hint else "")) from None
        for spec in specs:
            name, version = split(spec)
            if not version:
                raise ValueError(f'versions: "{entry}" names no release (write NAME@VERSION or NAME@A..B)')
            try:
                check_spec(spec)  # a release named alone: the registry must list it (a range's do)
            except ValueError as e:
                raise ValueError(f"versions: {e}") from None
            chosen.setdefault(name, []).append(version)
    return {name: list(dict.fromkeys(vs)) for name, vs in chosen.items()}


def our_build(spec: str, role: str, accepted: tuple[str, ...], why: str) -> str:
    """A kind's `server` or `client` field that only a build of our endpoint can fill
    (`accepted` names, e.g. "ours" or "native", with or without @VERSION): another stack's
    name is one ValueError saying `why` not; a release must be listed by its registry."""
    name = split(spec)[0]
    if name not in accepted:
        said = " or ".join(f'"{a}"' for a in accepted)
        raise ValueError(
            f'{role} "{spec}": {why}; write {said}, or "{accepted[-1]}@VERSION" (a quinn-proto release); {name} cannot'
        )
    return spec if "@" not in spec else check_spec(spec)  # a release its registry must list


def release_arms(
    arms: Sequence[A],
    versions: Iterable[str],
    *,
    server: str,
    client: str,
    sweeps: Callable[[A], bool] = lambda a: True,
) -> list[A]:
    """Each arm that `sweeps` and runs a swept stack (its server, else the scenario's
    `server`; its client, else `client`), once per release, in place; the others as they
    are. ValueError: an arm whose server and client are two swept stacks, or a swept stack
    no arm runs."""
    chosen = chosen_releases(versions)
    out: list[A] = []
    used: set[str] = set()
    for a in arms:
        arm_server, arm_client = a.server or server, a.client or client
        names = {n for n in (split(arm_server)[0], split(arm_client)[0]) if n in chosen} if sweeps(a) else set()
        if not names:
            out.append(a)
            continue
        if len(names) > 1:
            raise ValueError(f'arm "{a.label}": its server and client are two swept stacks; sweep one')
        name = names.pop()
        used.add(name)
        for v in chosen[name]:
            spec = f"{name}@{v}"
            out.append(
                a.model_copy(
                    update={
                        "label": f"{a.label}-{v}",
                        "server": spec if split(arm_server)[0] == name else a.server,
                        "client": spec if split(arm_client)[0] == name else a.client,
                    }
                )
            )
    unused = set(chosen) - used
    if unused:
        raise ValueError(f"versions: no arm runs {', '.join(sorted(unused))} (set an arm's server or client to it)")
    return out


def recorded_versions(specs: Iterable[str]) -> dict[str, dict[str, str]]:
    """What an experiment records of the stacks its arms run beyond the workspace's endpoint
    (which the core records): `stacks` (spec -> exact version) and `stack_binaries` (spec ->
    SHA-256 of its binary); {} when it runs none."""
    names = list(specs)
    stacks = versions_of(names)
    return {"stacks": stacks, "stack_binaries": binary_digests(names)} if stacks else {}
