"""mahimahi traces: generation at exact rates, the paper's patterns, validation."""

from pathlib import Path

import numpy as np
import pytest

from longlook.errors import LonglookError
from longlook.traces import PATTERNS, generate, load_mahimahi, opportunities, rate_profile, rate_steps, write_mahimahi


def test_constant_rate_is_exact(tmp_path: Path):
    # 12 Mbit/s = 1 opportunity per ms exactly; 10 Mbit/s = 5/6 per ms.
    assert list(opportunities([(0.005, 12.0)])) == [1, 2, 3, 4, 5]
    ts = np.array(list(opportunities([(6.0, 10.0)])))
    assert len(ts) == 5000  # 10e6 * 6 / 8 / 1500
    assert np.all(np.diff(ts) >= 1)  # spread evenly, never two in one ms at 10 Mbit/s


def test_fractional_rates_accumulate(tmp_path: Path):
    # 0.064 Mbit/s (DVL's floor): one 1500-byte packet every 187.5 ms.
    ts = list(opportunities([(3.0, 0.064)]))
    assert len(ts) == 16
    assert ts[:2] == [188, 375]


def test_rate_profile_steps(tmp_path: Path):
    f = tmp_path / "step.mahi"
    write_mahimahi([(2.0, 10.0), (2.0, 40.0)], f)
    rates = rate_profile(load_mahimahi(f), 1000)
    assert rates == pytest.approx([10, 10, 40, 40], rel=0.01)
    # Wrapping: two periods asked, the pattern repeats.
    assert rate_profile(load_mahimahi(f), 1000, 8000) == pytest.approx([10, 10, 40, 40] * 2, rel=0.01)


def test_paper_patterns_table3():
    assert PATTERNS["incr"].levels()[:3] == [128, 192, 256]
    assert max(PATTERNS["incr"].levels()) == 2048
    assert PATTERNS["decr"].levels()[:2] == [2048, 1984]
    assert PATTERNS["dh"].levels() == [1152, 896]
    assert PATTERNS["dl"].levels() == [640, 384, 128, 384]
    assert PATTERNS["dvl"].levels() == [64, 128, 192, 256, 192, 128]
    assert PATTERNS["dh"].hold_s == 240 and PATTERNS["incr"].hold_s == 60


def test_generate_pattern_with_short_holds(tmp_path: Path):
    f = tmp_path / "dl.mahi"
    generate("dl", f, duration_s=8, hold_s=1)
    rates = rate_profile(load_mahimahi(f), 1000, 8000)
    # DL 640, 384, 128, 384 kbit/s, then again; 1 s granularity of 1500-byte packets.
    assert rates == pytest.approx([0.64, 0.384, 0.128, 0.384] * 2, abs=0.012)
    assert [s for s in rate_steps(PATTERNS["dvl"], 150)][-1] == (30, 0.192)


@pytest.mark.parametrize(
    "text,message",
    [
        ("1\n3\n2\n", ":3: 2 is earlier"),
        ("1\nabc\n", ":2: 'abc' is not"),
        ("5\n-1\n", ":2: '-1' is not"),
        ("", "empty"),
        ("0\n0\n", "lasts 0 ms"),
    ],
)
def test_load_names_the_bad_line(tmp_path: Path, text: str, message: str):
    f = tmp_path / "bad.mahi"
    f.write_text(text)
    with pytest.raises(LonglookError, match=message):
        load_mahimahi(f)


def test_unknown_pattern():
    with pytest.raises(LonglookError, match="unknown bandwidth pattern"):
        generate("sawtooth", Path("/nonexistent"))
