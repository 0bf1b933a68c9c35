"""Whose row an ECN run counts in: its arm, or, where the cells are the stacks (a
conformance run), the stack of an `alone` run and the kernel's algorithm of a `kernel` run;
never a shared run, whose two senders both go toward the client."""

from __future__ import annotations

from longlook.report.sections.ecn import _row_of


class Cell:
    def __init__(self, **dims):
        self._dims = dims

    def dims(self):
        return self._dims


def test_a_page_load_run_counts_in_its_arm():
    assert _row_of(Cell(rate_mbit=20, workload="bulk:4m"), "quic-go") == "quic-go"
    assert _row_of(None, "quinn") == "quinn"


def test_a_conformance_run_counts_in_its_stack_or_the_kernel():
    cell = Cell(stack="ngtcp2", cc="cubic", kernel_cc="cubic")
    assert _row_of(cell, "alone") == "ngtcp2"
    assert _row_of(cell, "kernel") == "kernel TCP (cubic)"
    assert _row_of(cell, "shared") is None and _row_of(cell, "fingerprint") is None
