"""`[intervention]` of a video scenario: a randomised experiment on fallback (the
test Chaudhary et al. §7 could not run on observational sessions).

In each cell, the QUIC-enabled arm's rounds are split at random into treated and control
(complete randomisation: a seeded permutation of the rounds, the first `round(share * R)`
treated; a share of 1 treats every round, for a study of the fallback itself with no
control, such as Granger over sessions whose break time is random). A treated session's
link gets the QUIC-breaking `middlebox`, switched on at an onset drawn uniformly from
`onset_s` (seconds on linkem's clock, which restarts just before each session); a control
session runs the cell's link as it is. The TCP-only arm is never
treated. Everything is drawn from (seed, cell, round): a resumed or re-run experiment
assigns the same, and each run records its assignment (details `intervention`).
"""

from __future__ import annotations

import math

import hashlib
import random
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ...linkprofile import LinkProfile, Middlebox


class Intervention(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    # what breaks QUIC once on (default: every UDP datagram dropped, both ways)
    middlebox: Middlebox = Field(default_factory=lambda: Middlebox(block_udp=True))
    onset_s: tuple[float, float] = (10.0, 30.0)  # uniform onset window
    treated_share: float = Field(default=0.5, gt=0, le=1)

    @model_validator(mode="after")
    def _window(self) -> "Intervention":
        lo, hi = self.onset_s
        if not (math.isfinite(lo) and math.isfinite(hi) and 0 <= lo <= hi):
            raise ValueError(f"onset_s = [{lo}, {hi}]: want finite seconds, 0 <= low <= high")
        if self.middlebox.active_from_s or self.middlebox.active_until_s is not None:
            raise ValueError("middlebox: leave active_from_s/active_until_s out; the onset is drawn per session")
        return self


@dataclass(frozen=True)
class Assignment:
    treated: bool
    onset_s: float | None  # None: control

    def as_dict(self) -> dict:
        return {"treated": self.treated, "onset_s": self.onset_s}


def _rng(*parts: object) -> random.Random:
    key = "|".join(map(str, parts)).encode()
    return random.Random(int.from_bytes(hashlib.sha256(key).digest()[:8], "big"))


def treated_rounds(seed: int, cell_id: str, rounds: int, share: float) -> frozenset[int]:
    """Complete randomisation: which rounds of the cell are treated (at least one of each
    arm when rounds >= 2 and share < 1; every round when share is 1)."""
    order = list(range(rounds))
    _rng(seed, cell_id, "treated").shuffle(order)
    k = round(share * rounds)
    if share >= 1:
        return frozenset(order)
    if rounds >= 2:
        k = min(max(k, 1), rounds - 1)
    return frozenset(order[:k])


def assign(iv: Intervention, seed: int, cell_id: str, round_index: int, rounds: int) -> Assignment:
    if round_index not in treated_rounds(seed, cell_id, rounds, iv.treated_share):
        return Assignment(False, None)
    lo, hi = iv.onset_s
    onset = round(_rng(seed, cell_id, round_index, "onset").uniform(lo, hi), 3)
    return Assignment(True, onset)


def treated_link(link: LinkProfile, iv: Intervention, a: Assignment) -> LinkProfile:
    """The session's link: the cell's, with the middlebox from the onset when treated."""
    if not a.treated:
        return link
    box = iv.middlebox.model_copy(update={"active_from_s": a.onset_s})
    return link.model_copy(update={"middlebox": box})
