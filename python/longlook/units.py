"""Sizes and numbers as scenario files write them and reports print them."""

from __future__ import annotations

import re
from typing import Any

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMgG]?)\s*[bB]?\s*$")
_SIZE_UNITS = {"": 1, "k": 1000, "m": 1000**2, "g": 1000**3}
SIZE_HINT = "must be a size like 10k, 1m (k = 1,000 bytes, m = 1,000,000) or a number of bytes"


def parse_size(value: Any) -> int:
    """'10k' -> 10000 (decimal units, as the endpoint's /obj/<S> paths use)."""
    if isinstance(value, bool):
        raise ValueError(f"{SIZE_HINT}, got {value!r}")
    if isinstance(value, int):
        if value <= 0:
            raise ValueError(f"{SIZE_HINT}, got {value}")
        return value
    m = _SIZE_RE.match(str(value))
    if not m:
        raise ValueError(f'{SIZE_HINT}, got "{value}"')
    n = float(m.group(1)) * _SIZE_UNITS[m.group(2).lower()]
    if n <= 0 or n != int(n):
        raise ValueError(f'{SIZE_HINT} (a positive whole number of bytes), got "{value}"')
    return int(n)


def format_size(n: int) -> str:
    """10000 -> '10k', 1000000 -> '1m'; the endpoint accepts these forms (k and m only)."""
    for suffix, unit in (("m", 1000**2), ("k", 1000)):
        if n >= unit and n % unit == 0:
            return f"{n // unit}{suffix}"
    return str(n)


def short_number(x: float) -> str:
    """Short, stable text for a number: 10.0 -> '10', 0.01 -> '0.01'."""
    return str(int(x)) if float(x).is_integer() else f"{x:g}"
