"""Releases as a dimension (issue 30): the history of a release sweep, per cell."""

from .history import ReleaseHistory, ReleasePoint, ReleaseSeries, release_history, swept_arms

__all__ = ["ReleaseHistory", "ReleasePoint", "ReleaseSeries", "release_history", "swept_arms"]
