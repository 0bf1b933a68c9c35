"""A stack named from outside (a scenario, the command line): the name and version exist,
a named release is one its registry lists, and the spec in its one spelling. Apart from the
registry (which names stacks and builds their adapters), since it asks the release listings."""

from __future__ import annotations

from ...errors import LonglookError
from ..registry import resolve, split
from .releases import check_release, registry_of, releases


def check_spec(spec: str) -> str:
    """For scenario validation: the name and version exist (ValueError otherwise), a named
    release where its registry lists it (unlisted_release); the spec in its one spelling
    (`quic-go@0.65.0` -> `quic-go@v0.65.0`: one arm, one build)."""
    try:
        stack = resolve(spec)
        name, version = split(spec)
        canonical = spec if version is None else f"{name}@{stack.version}"
        if (unlisted := unlisted_release(canonical)) is not None:
            raise unlisted
    except LonglookError as e:
        raise ValueError(f"{e.message}; {e.hint}" if e.hint else e.message) from None
    return canonical


# stacks whose registry could not be reached by this process: asked once, not per field
_UNREACHABLE: set[str] = set()


def unlisted_release(spec: str) -> LonglookError | None:
    """The error for `NAME@VERSION` whose registry does not list the release (naming the
    nearest ones), else None. Unchecked (None) when the stack has no registry, or no listing
    can be had (offline with none cached: the build then fails on the release itself)."""
    name, version = split(spec)
    if not version or name in _UNREACHABLE or registry_of(name) is None:
        return None
    try:
        known = releases(name, pre=True)
    except LonglookError:
        _UNREACHABLE.add(name)
        return None
    try:
        check_release(name, version, known=known)
    except LonglookError as e:
        return e
    return None
