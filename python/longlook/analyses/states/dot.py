"""Render a TransitionGraph as Graphviz DOT (always) and SVG (when `dot` is installed).

Like Kakhki Fig. 3: one node per state, labelled with its entries and share of time; one
edge per observed transition, labelled with its probability and count, thicker when more
likely.
"""

from __future__ import annotations

import re
import shutil
import subprocess

from ...render.palette import LOSS_STATE_FILL
from .machine import TransitionGraph

# Loss-handling states stand out, as the paper's discussion is about them.
LOSS_STATES = {"Recovery", "RetransmissionTimeout", "TailLossProbe", "Loss", "Disorder", "CWR"}


def _q(s: str) -> str:
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(graph: TransitionGraph, title: str | None = None) -> str:
    title = title or f"{graph.protocol} {graph.group}".strip()
    lines = [
        "digraph states {",
        f"  label={_q(f'{title} ({graph.n_traces} runs)')}; labelloc=t; rankdir=LR;",
        '  node [shape=ellipse, fontname="Helvetica", fontsize=11];',
        '  edge [fontname="Helvetica", fontsize=9];',
    ]
    for s in graph.states.itertuples():
        style = f', style=filled, fillcolor="{LOSS_STATE_FILL}"' if s.state in LOSS_STATES else ""
        if s.state == "Init":
            style = ", shape=box"
        label = f"{s.state}\\n{s.entries} entries, {s.dwell_share * 100:.0f}% time"
        lines.append(f'  {_q(s.state)} [label="{label}"{style}];')
    for t in graph.transitions.itertuples():
        width = 0.6 + 3.0 * t.probability
        lines.append(f'  {_q(t.src)} -> {_q(t.dst)} [label="{t.probability:.2f} ({t.count})", penwidth={width:.2f}];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def dot_available() -> bool:
    return shutil.which("dot") is not None


def to_svg(dot_text: str, timeout_s: float = 20) -> str | None:
    """SVG from Graphviz, or None when it is not installed (the DOT is still written)."""
    exe = shutil.which("dot")
    if exe is None:
        return None
    out = subprocess.run([exe, "-Tsvg"], input=dot_text, capture_output=True, text=True, timeout=timeout_s)
    if out.returncode != 0:
        return None
    svg = out.stdout
    start = svg.find("<svg")  # drop the XML prolog and DOCTYPE for inline HTML use
    svg = svg[start:] if start >= 0 else svg
    # Scale to the page: keep the viewBox, drop the fixed size in points.
    return re.sub(r'<svg width="[^"]*" height="[^"]*"', '<svg style="max-width:100%;height:auto"', svg, count=1)
