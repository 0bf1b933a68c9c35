"""The registry of verdict producers: every function or class of longlook that turns numbers
into a verdict (a comparison's "faster", the gate's "regression", a states diff's "appears",
a claim's "holds", Granger's "causes", conformance's "deviates", bisect's "same") registers
here under a name.

The null-calibration suite (tests/calibration/) holds one entry per name: data where the
truth is known, the producer's false-verdict rate within its stated alpha. A producer
registered without an entry fails that suite, so a new verdict cannot slip in uncalibrated.
"""

from __future__ import annotations

from typing import Callable, TypeVar

T = TypeVar("T")

_PRODUCERS: dict[str, str] = {}


def verdict_producer(name: str, what: str = "") -> Callable[[T], T]:
    """Register the decorated function or class as the verdict producer `name`; `what` says
    in a few words which verdict it draws (shown by the calibration suite)."""

    def register(obj: T) -> T:
        where = f"{obj.__module__}:{getattr(obj, '__qualname__', repr(obj))}"
        known = _PRODUCERS.get(name)
        if known is not None and known.split(" | ")[0] != where:
            raise ValueError(f"verdict producer {name!r} registered twice: {known} and {where}")
        _PRODUCERS[name] = f"{where} | {what}" if what else where
        setattr(obj, "verdict_producer", name)
        return obj

    return register


def registered() -> dict[str, str]:
    """name -> "module:qualname | what" of every producer imported so far."""
    return dict(_PRODUCERS)
