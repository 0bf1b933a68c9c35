"""Validation errors as one line that names the field: `links[0].rate_mbit[2]: must be > 0`.

Also the sweep expansion every list-valued scenario table shares (links, workloads): a table
whose fields may be lists becomes one model per combination, with errors pointing at the
list element that was wrong.
"""

from __future__ import annotations

import itertools
from typing import Any, Callable, Iterable

from pydantic import BaseModel, ValidationError

from .grid import check_sweep


def misplaced_key(where: str, key: str, top_fields: Iterable[str]) -> str | None:
    """TOML's trap: a top-level key written after a [table] header belongs to that table."""
    if key not in set(top_fields):
        return None
    return (
        f"{where}.{key}: not a field here; in TOML every key after a [table] header belongs "
        f"to that table: move `{key} = ...` above the first [table]"
    )


def at(where: str, loc: str, msg: str) -> str:
    return f"{where}.{loc}: {msg}" if loc else f"{where}: {msg}"


def loc_text(loc: tuple, positions: dict[str, int]) -> str:
    """pydantic loc -> 'field[j].sub'; loc () (a model-level check) names no field."""
    parts: list[str] = []
    for x in loc:
        if isinstance(x, int):
            parts[-1] += f"[{x}]"
        else:
            parts.append(str(x))
            if len(parts) == 1 and x in positions:
                parts[-1] += f"[{positions[x]}]"
    return ".".join(parts)


def message(err: dict) -> str:
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        return "unknown field"
    inp = err.get("input")
    # say what was given, unless the message already does or the input is a whole table
    if err["type"] != "missing" and "got" not in msg and not isinstance(inp, (dict, list)) and str(inp) not in msg:
        shown = repr(inp)
        if len(shown) > 80:  # a 100k-character value is named, not printed
            shown = f"{shown[:60]}... ({len(str(inp)):,} characters)"
        msg += f", got {shown}"
    return msg


def format_errors(
    e: ValidationError, top_fields: Iterable[str] = (), written: dict[str, str] | None = None, data: dict | None = None
) -> str:
    """`field[i].sub: message; ...`, with TOML's misplaced-key trap explained; `written`
    maps a field to the alias the file used for it; `data`, the table as written, names a
    field the file gave as one value without the [0] of the list a validator made of it."""
    parts = []
    for err in e.errors():
        where = tuple(err["loc"])
        if (
            data is not None
            and len(where) > 1
            and where[1] == 0
            and where[0] in data
            and not isinstance(data[where[0]], list)
        ):
            where = (where[0], *where[2:])
        if where and written and where[0] in written:
            where = (written[where[0]], *where[1:])
        loc = loc_text(where, {}) if where else ""
        msg = message(err)
        if err["type"] == "extra_forbidden" and len(err["loc"]) > 1:
            trap = misplaced_key(loc_text(err["loc"][:-1], {}), str(err["loc"][-1]), top_fields)
            if trap:
                parts.append(trap)
                continue
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts)


def expand_sweep(
    raw: Any,
    name: str,
    model: type[BaseModel],
    *,
    top_fields: Iterable[str],
    sweepable: Iterable[str] | None = None,
    prepare: Callable[[Any], Any] | None = None,
    adjust: Callable[[dict, dict[str, int], str], None] | None = None,
) -> list[BaseModel]:
    """`[[name]]` entries (or one `[name]` table) with list-valued fields -> one `model` per
    combination. `sweepable` limits which fields may be lists (None: any). `prepare` turns an
    entry into a dict first (e.g. a "10x100k" string); `adjust(d, positions, where)` edits a
    combination before validation (e.g. the rtt_ms shorthand)."""
    top_fields = set(top_fields)
    entries = raw if isinstance(raw, list) else [raw]
    where = (lambda i: name) if not isinstance(raw, list) else (lambda i: f"{name}[{i}]")
    allowed = None if sweepable is None else tuple(sweepable)
    out: list[BaseModel] = []
    for i, entry in enumerate(entries):
        if prepare is not None:
            try:
                entry = prepare(entry)
            except ValueError as e:
                raise ValueError(f"{where(i)}: {e}") from None
        if not isinstance(entry, dict):
            raise ValueError(f"{where(i)}: must be a table, got {entry!r}")
        for k in entry:
            if k not in model.model_fields and (trap := misplaced_key(where(i), k, top_fields)):
                raise ValueError(trap)
        lists = {k: v for k, v in entry.items() if isinstance(v, list)}
        for k in lists:
            if allowed is not None and k not in allowed:
                raise ValueError(f"{where(i)}.{k}: cannot be a list; fields that sweep: {', '.join(allowed)}")
            if not lists[k]:
                raise ValueError(f"{where(i)}.{k}: empty list")
        check_sweep(where(i), [len(x) for x in lists.values()])
        keys = list(lists)
        for combo in itertools.product(*(list(enumerate(lists[k])) for k in keys)):
            d = dict(entry)
            pos = {}
            for k, (j, v) in zip(keys, combo):
                d[k] = v
                pos[k] = j
            if adjust is not None:
                adjust(d, pos, where(i))
            try:
                out.append(model(**d))
            except ValidationError as e:
                raise ValueError(
                    "; ".join(at(where(i), loc_text(err["loc"], pos), message(err)) for err in e.errors())
                ) from None
    return out
