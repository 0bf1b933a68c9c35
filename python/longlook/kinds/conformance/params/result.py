"""What every parameter extractor returns: the value measured, the specification's value
beside it, the unit, the tolerance it was judged with and the verdict."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

CONFORMS, DEVIATES, NOT_MEASURABLE = "conforms", "deviates", "not measurable"
VERDICTS = (CONFORMS, DEVIATES, NOT_MEASURABLE)


@dataclass(frozen=True)
class ParamResult:
    """One parameter of one connection. `measured` is None when not measurable; `tolerance`
    says in words what counts as conforming; `note` what was seen (n events, the trigger)."""

    parameter: str
    measured: float | None
    reference: float | None
    unit: str
    verdict: str
    tolerance: str
    note: str = ""

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r}: one of {', '.join(VERDICTS)}")
        if self.measured is not None and not math.isfinite(self.measured):
            object.__setattr__(self, "measured", None)

    def row(self) -> dict:
        return asdict(self)


def within(x: float, bound: tuple[float, float]) -> bool:
    """Is x inside the bound (low, high), both ends included (an open end is +-inf)?"""
    low, high = bound
    return bool(low <= x <= high)


def not_measurable(
    parameter: str, unit: str, why: str, reference: float | None = None, tolerance: str = ""
) -> ParamResult:
    return ParamResult(parameter, None, reference, unit, NOT_MEASURABLE, tolerance, why)


def judged(
    parameter: str, measured: float, reference: float, unit: str, ok: bool, tolerance: str, note: str = ""
) -> ParamResult:
    return ParamResult(
        parameter, float(measured), float(reference), unit, CONFORMS if ok else DEVIATES, tolerance, note
    )
