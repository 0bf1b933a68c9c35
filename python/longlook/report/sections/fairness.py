"""The fairness section of `longlook report DIR`, when DIR also holds fairness results
(DIR/fairness.duckdb, written by `longlook fairness`)."""

from __future__ import annotations

from . import Section

ORDER = 50


def section(store, analysis) -> Section | None:
    from ...fairness.report import fairness_html
    from ...fairness.store import FairnessStore

    if not FairnessStore.exists(store.directory):
        return None
    with FairnessStore.open(store.directory, read_only=True) as fairness:
        html = fairness_html(fairness)
    return Section(id="fairness", title="Fairness (Kakhki Table 4, Fig. 4–5)", html=html) if html else None
