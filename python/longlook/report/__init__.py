"""The HTML report of an experiment directory: one self-contained file (inline CSS and SVG,
no scripts, nothing fetched), built from the store alone (page.py: the shell; sections/: one
module per section, found by name).

    build_report(DIR) -> DIR/report.html
    core.experiment_stats.analyse(store) -> Analysis   (the numbers without the HTML, for notebooks)
"""

from .page import build_report, render_report

__all__ = ["build_report", "render_report"]
