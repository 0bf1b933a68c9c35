"""Calibration (Kakhki §4.1): is our QUIC server configured like the one it stands
for? `fig2` measures what an untuned maximum congestion window costs (Fig. 2); `search`
turns our server's knobs until its page load times match a reference experiment's."""

from .split import PHASES, Ratio, phase_means, ratio_of_means, time_split

__all__ = ["PHASES", "Ratio", "phase_means", "ratio_of_means", "time_split"]
