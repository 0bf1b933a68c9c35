"""A case's verdict on a capture and the evidence for it, in one sentence."""

from __future__ import annotations

from dataclasses import dataclass

PASSED, FAILED, NOT_MEASURABLE = "passed", "failed", "not measurable"


@dataclass(frozen=True)
class CaseResult:
    """`verdict` is passed, failed or not measurable (the capture cannot show it either way:
    no QUIC in it, or the packets that would show it not decrypted). `evidence` says what was
    seen, or which packet or frame was missing, naming datagrams as Wireshark numbers them."""

    verdict: str
    evidence: str

    @property
    def passed(self) -> bool:
        return self.verdict == PASSED


def passed(evidence: str) -> CaseResult:
    return CaseResult(PASSED, evidence)


def failed(evidence: str) -> CaseResult:
    return CaseResult(FAILED, evidence)


def not_measurable(evidence: str) -> CaseResult:
    return CaseResult(NOT_MEASURABLE, evidence)
