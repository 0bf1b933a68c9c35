"""Comparing experiments of one scenario: a regression gate between two (BASE, CAND),
change points over many in time order. (The adaptive-rounds stopping rule is core.adaptive,
its report section report/sections/adaptive_rounds.py.)

    experiments  one experiment directory read for comparison (Side)
    matching     cells of two experiments paired by their parameters
    change       per cell, arm and metric: % change, interval, test, Holm, verdict
    junit        the verdicts as JUnit XML for a stack's CI
    page         the HTML page (render's templates)
    history      per-cell series over many experiments, E-Divisive change points, figure
"""
