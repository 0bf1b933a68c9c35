"""The HTML side of every page longlook writes (the report, a comparison, a reproduction):
`Section`, one titled part of a page, and the jinja environment over `templates/` with the
filters the templates use (fmt, ms, p, name)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd

from .names import display_name

TEMPLATES = Path(__file__).parent / "templates"


@dataclass
class Section:
    id: str  # HTML id of the <section>
    title: str
    html: str  # trusted HTML built by the module (escape anything from data yourself)


def fmt(v: Any) -> str:
    """Any value as table text: 4 significant digits, times to the second, "-" for none."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, (datetime, pd.Timestamp)):
        return f"{v:%Y-%m-%d %H:%M:%S}"
    return str(v)


def ms(v: Any) -> str:
    """Milliseconds: one decimal, thousands separated."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:,.1f}"


def p(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return "<0.0001" if v < 0.0001 else f"{v:.4f}"


def numbers_table(head: list[str], rows: list[list[str]]) -> str:
    """A table of figures (class `numbers`): `head` and `rows` are trusted HTML, escaped by
    the caller."""
    return (
        "<table class='numbers'><thead><tr>"
        + "".join(f"<th>{h}</th>" for h in head)
        + "</tr></thead><tbody>"
        + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
        + "</tbody></table>"
    )


def environment() -> jinja2.Environment:
    """Templates from `templates/`, autoescaped, undefined names an error."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(fmt=fmt, ms=ms, p=p, name=display_name)
    return env
