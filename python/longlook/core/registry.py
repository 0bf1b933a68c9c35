"""Kinds by name. `longlook/kinds/__init__.py` holds one registration line per shipped kind
(imported lazily, so the CLI starts fast); a test or plugin may register its own object."""

from __future__ import annotations

import importlib

from ..errors import LonglookError
from .kind import Kind

_REGISTERED: dict[str, Kind | str] = {}


def register(name: str, kind: Kind | str) -> None:
    """`kind` is a Kind object or "module:attribute" to import on first use."""
    _REGISTERED[name] = kind


def known_kinds() -> list[str]:
    _load_shipped()
    return sorted(_REGISTERED)


def get_kind(name: str) -> Kind:
    _load_shipped()
    entry = _REGISTERED.get(name)
    if entry is None:
        raise LonglookError(f'unknown kind "{name}"', hint=f"known kinds: {', '.join(known_kinds())}")
    if isinstance(entry, str):
        module, _, attr = entry.partition(":")
        entry = getattr(importlib.import_module(module), attr)
        _REGISTERED[name] = entry
    return entry


def _load_shipped() -> None:
    importlib.import_module("longlook.kinds")
