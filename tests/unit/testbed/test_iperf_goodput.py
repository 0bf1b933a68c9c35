"""The link check's iperf3 goodput: the median of the receiver's 250 ms intervals after its
first second. A loss recovery that releases data held behind a hole makes the application
read more than the wire carried in one interval (11.3 Mbit/s read in one second of a
10 Mbit/s, 112 ms link, 2026-11-27); many short intervals keep that out of the median."""

from longlook.testbed.probe import IPERF_INTERVAL_S, iperf3_receiver_mbit


def _doc(rates: list[float], step: float) -> dict:
    ivs = [{"sum": {"start": i * step, "seconds": step, "bits_per_second": r * 1e6}} for i, r in enumerate(rates)]
    return {"intervals": ivs, "end": {"sum_received": {"bits_per_second": 1.0}}}


def test_a_burst_after_a_recovery_does_not_move_the_median():
    wire = 9.65
    # slow start in the first second, then one interval reads what a hole held back
    quarter = [1, 2, 4, 8] + [wire] * 3 + [wire + 6.4] + [wire] * 4
    assert iperf3_receiver_mbit(_doc(quarter, IPERF_INTERVAL_S), "down") == wire
    # what two 1 s intervals gave in the same case: the burst is half the sample
    seconds = [4.2, 11.27, wire]
    assert iperf3_receiver_mbit(_doc(seconds, 1.0), "down") > 10  # longer intervals are kept, and show it


def test_up_reads_the_server_side():
    doc = {"server_output_json": _doc([1, 2, 3, 4, 9, 9, 9], IPERF_INTERVAL_S), "intervals": []}
    assert iperf3_receiver_mbit(doc, "up") == 9
