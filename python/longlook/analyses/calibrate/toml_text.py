"""Scenarios made in code are stored as TOML, like the ones users write, so a calibration's
experiment directories can be resumed, compared and re-run like any other. Only what
tomllib reads back is needed: scalars, lists and tables, written inline."""

from __future__ import annotations

import json
from typing import Any


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a JSON string is a valid TOML basic string
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(f"cannot write {type(v).__name__} as TOML")


def dumps(data: dict[str, Any]) -> str:
    """One `key = value` line per top-level field (tables inline); None values are left out."""
    return "".join(f"{json.dumps(k)} = {_value(v)}\n" for k, v in data.items() if v is not None)
