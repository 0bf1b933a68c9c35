"""Releases as a dimension: the history of a release sweep, per cell (history.py), and
the search for the release(s) where a metric changed (bisect.py, one step's statistics in sides.py)."""

from .history import ReleaseHistory, ReleasePoint, ReleaseSeries, release_history, swept_arms

__all__ = ["ReleaseHistory", "ReleasePoint", "ReleaseSeries", "release_history", "swept_arms"]
