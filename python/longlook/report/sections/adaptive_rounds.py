"""Adaptive rounds: the stopping rule and each cell's rounds (analyses.compare)."""

from ...analyses.compare.adaptive_section import adaptive_section as section  # noqa: F401

ORDER = 20
