"""Things looked up by name: kinds, stacks, report sections, executors. One idiom for every
plug-in (as Flent looks its runners up by name): a folder or module of its own and one
registration line, `REGISTRY.register(name, "module:attribute")`, imported on first use so
that one plug-in's missing pieces never stop another and the CLI starts fast. A test or a
user's plug-in may register an object directly."""

from __future__ import annotations

import importlib
from typing import Generic, Iterator, TypeVar

from .errors import LonglookError

T = TypeVar("T")


class Registry(Generic[T]):
    """Names in registration order -> objects, or "module:attribute" to import when first
    asked for. `shipped`: a module whose import registers the shipped entries (imported on
    the first lookup, so a registration line never imports what it names)."""

    def __init__(self, what: str, *, shipped: str | None = None, hint: str = ""):
        self.what, self.shipped, self.hint = what, shipped, hint
        self._entries: dict[str, T | str] = {}
        self._loaded = shipped is None

    def register(self, name: str, target: T | str) -> None:
        self._entries[name] = target

    def names(self) -> list[str]:
        self._load_shipped()
        return list(self._entries)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __contains__(self, name: object) -> bool:
        self._load_shipped()
        return name in self._entries

    def get(self, name: str) -> T:
        """The object registered as `name`; one error naming the known ones otherwise."""
        self._load_shipped()
        if name not in self._entries:
            known = ", ".join(self._entries)
            raise LonglookError(
                f"unknown {self.what} {name!r}", hint=f"known: {known}" + (f"; {self.hint}" if self.hint else "")
            )
        entry = self._entries[name]
        if isinstance(entry, str):
            module, _, attr = entry.partition(":")
            entry = getattr(importlib.import_module(module), attr)
            self._entries[name] = entry
        return entry  # type: ignore[return-value]

    def _load_shipped(self) -> None:
        if not self._loaded:
            self._loaded = True
            importlib.import_module(self.shipped)  # type: ignore[arg-type]
