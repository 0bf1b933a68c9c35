"""The released versions of a stack, from its registry: what `NAME@A..B` sweeps, what bisect
searches, and what an error names when a release does not exist.

    releases("quic-go")                      # every release, oldest first (no pre-releases)
    expand("quic-go@v0.50.0..v0.65.0")       # the releases in the range, ends included
    nearest("quic-go", "v0.52.9")            # the registry's closest releases, for errors

Registries: the Go module proxy (`/@v/list`), PyPI's JSON API, crates.io's sparse index (one
JSON line per version, with `yanked`). A listing is cached for a day under
~/.cache/longlook/releases/ (`LONGLOOK_CACHE`), so sweeps plan offline once listed; a
registry that cannot be reached with no cached listing is one clear error.
"""

from __future__ import annotations

import json
import os
import re
import time
import urllib.error
import urllib.request
from pathlib import Path

from packaging.version import InvalidVersion, Version

from ...errors import LonglookError
from ...untrusted import release_token
from ..registry import OWN, STACKS, stack_class
from ..release_registry import Registry

CACHE_TTL_S = 24 * 3600
TIMEOUT_S = 20


# Which registry lists a stack's releases is the stack's own (its adapter's
# `release_registry`); libraries a stack is built from are listed here. Ours is this
# checkout; `ours@V` is it built against quinn-proto release V
# (stacks/adapters/ours/quinn_build.py), the crate where quinn's transport behaviour lives.
LIBRARIES = {"quinn": Registry("crates", "quinn")}


def registry_of(stack: str) -> Registry | None:
    """The registry that lists `stack`'s releases (a library's), None when none does."""
    if stack in LIBRARIES:
        return LIBRARIES[stack]
    if stack not in STACKS and stack not in OWN:
        return None
    return stack_class(stack).release_registry


def swept_stacks() -> list[str]:
    """The stacks whose releases can be listed (and so swept and bisected)."""
    return [name for name in [*OWN, *STACKS] if registry_of(name) is not None]


def release_key(v: str) -> Version:
    """A release's place in its stack's order (v0.9 before v0.10)."""
    return Version(v.removeprefix("v"))


def _is_pre(v: str) -> bool:
    try:
        return release_key(v).is_prerelease or release_key(v).is_devrelease
    except InvalidVersion:
        return True


def _cache_file(stack: str) -> Path:
    root = Path(os.environ.get("LONGLOOK_CACHE", Path.home() / ".cache" / "longlook"))
    return root / "releases" / f"{stack}.json"


def registry(stack: str) -> Registry:
    found = registry_of(stack)
    if found is None:
        raise LonglookError(
            f"{stack}: no registry lists its releases", hint=f"releases can be swept for {', '.join(swept_stacks())}"
        )
    return found


def releases(stack: str, *, pre: bool = False, fetch=None) -> list[str]:
    """The stack's releases, oldest first; `pre` keeps pre-releases. `fetch(url) -> text`
    replaces the network (tests)."""
    versions = []
    for v in registry(stack).parse(_listing(stack, fetch)):
        try:
            release_key(release_token(v, f"{stack}'s registry listing"))
        except (InvalidVersion, LonglookError):
            continue  # a tag that is no version (a pseudo-version), or no name we would build
        if pre or not _is_pre(v):
            versions.append(v)
    return sorted(set(versions), key=release_key)


def index_entries(stack: str, *, fetch=None) -> list[dict]:
    """A crates.io stack's index lines (one per version: `vers`, `deps` with their `req`,
    `features`, `yanked`), for what a release requires of its dependencies."""
    reg = registry(stack)
    if reg.kind != "crates":
        raise LonglookError(f"{stack}: its registry is {reg.where}, not crates.io")
    return [json.loads(line) for line in _listing(stack, fetch).splitlines() if line.strip()]


def _listing(stack: str, fetch=None) -> str:
    """The registry's listing text, from the day's cache when there is one that reads as a
    listing. A listing is untrusted input: a cached one that does not parse (half-written,
    damaged) is fetched again; a fetched one that does not parse is the registry's answer,
    said as such; the cache is written whole or not at all."""
    reg = registry(stack)
    cache = _cache_file(stack)
    text = None
    if fetch is None and cache.is_file() and time.time() - cache.stat().st_mtime < CACHE_TTL_S:
        text = _readable(reg, cache.read_text(errors="replace"))
    if text is None:
        try:
            fetched = (fetch or _get)(reg.url())
        except (OSError, urllib.error.URLError) as e:
            stale = _readable(reg, cache.read_text(errors="replace")) if cache.is_file() else None
            if stale is None:  # a stale listing is better than none offline; a damaged one is not
                raise LonglookError(
                    f"{stack}: cannot list its releases from {reg.where} ({e})",
                    hint=f"check the network to {reg.url()}, or name one release",
                ) from None
            text = stale
        else:
            text = _readable(reg, fetched)
            if text is None:
                raise LonglookError(
                    f"{stack}: {reg.where} answered {reg.url()} with no release listing (it begins {fetched[:60]!r})",
                    hint="try again later, or name one release (NAME@VERSION)",
                )
            if fetch is None:
                cache.parent.mkdir(parents=True, exist_ok=True)
                part = cache.with_name(f".{cache.name}.{os.getpid()}.part")
                part.write_text(text)
                os.replace(part, cache)
    return text


def _readable(reg: Registry, text: str) -> str | None:
    """`text` when it parses as the registry's listing and lists at least one release."""
    try:
        return text if reg.parse(text) else None
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def _get(url: str) -> str:
    req = urllib.request.Request(url, headers={"User-Agent": "longlook (release listing)"})
    with urllib.request.urlopen(req, timeout=TIMEOUT_S) as r:
        return r.read().decode()


def nearest(stack: str, version: str, n: int = 3, *, known: list[str] | None = None) -> list[str]:
    """The registry's releases closest to `version` (by version order), for an error."""
    known = known if known is not None else releases(stack, pre=True)
    if not known:
        return []
    try:
        target = release_key(version)
    except InvalidVersion:
        return known[-n:]
    below = [v for v in known if release_key(v) < target][-((n + 1) // 2) :]
    above = [v for v in known if release_key(v) > target][: n - len(below)]
    return below + above


def check_release(stack: str, version: str, *, fetch=None, known: list[str] | None = None) -> str:
    """`version` as the registry spells it, or one error naming the nearest releases
    (`known`: the listing, when the caller has it)."""
    known = known if known is not None else releases(stack, pre=True, fetch=fetch)
    for v in known:
        if v == version or v.removeprefix("v") == version.removeprefix("v"):
            return v
    close = nearest(stack, version, known=known)
    raise LonglookError(
        f"{stack}@{version}: {registry(stack).where} has no such release",
        hint=("nearest releases: " + ", ".join(close)) if close else "it lists none",
    )


_RANGE = re.compile(r"^(?P<stack>[A-Za-z0-9_-]+)@(?P<lo>[^.][^ ]*?)\.\.(?P<hi>\S+)$")


def expand(spec: str, *, pre: bool = False, fetch=None) -> list[str]:
    """`NAME@A..B` -> `NAME@v` for every release from A to B (bounds included, oldest
    first; a bound need not be a release itself); `NAME@V` or `NAME` -> itself. A range
    holding no release is an error naming the registry's nearest ones."""
    m = _RANGE.match(spec)
    if not m:
        return [spec]
    stack, lo, hi = m["stack"], m["lo"], m["hi"]
    try:
        lo_k, hi_k = release_key(lo), release_key(hi)
    except InvalidVersion as e:
        raise LonglookError(f"{spec}: {e}", hint=f"write a range of versions, e.g. {stack}@A..B") from None
    if lo_k > hi_k:
        raise LonglookError(
            f"{spec}: the range is empty ({lo} is newer than {hi})", hint=f"write it oldest first: {stack}@{hi}..{lo}"
        )
    known = releases(stack, pre=pre, fetch=fetch)
    inside = [v for v in known if lo_k <= release_key(v) <= hi_k]
    if not inside:
        close = nearest(stack, lo, known=known)
        raise LonglookError(
            f"{spec}: {registry(stack).where} has no release in this range",
            hint=("nearest releases: " + ", ".join(close)) if close else "it lists none",
        )
    return [f"{stack}@{v}" for v in inside]
