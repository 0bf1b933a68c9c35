"""Kinds by name. `longlook/kinds/__init__.py` holds one registration line per shipped kind
(imported lazily, so the CLI starts fast); a test or plugin may register its own object."""

from __future__ import annotations

from ..errors import LonglookError
from ..lookup import Registry
from .kind import Kind

KINDS: Registry[Kind] = Registry("kind", shipped="longlook.kinds")


def register(name: str, kind: Kind | str) -> None:
    """`kind` is a Kind object or "module:attribute" to import on first use."""
    KINDS.register(name, kind)


def known_kinds() -> list[str]:
    return sorted(KINDS.names())


def get_kind(name: str) -> Kind:
    if name not in KINDS:
        raise LonglookError(f'unknown kind "{name}"', hint=f"known kinds: {', '.join(known_kinds())}")
    return KINDS.get(name)
