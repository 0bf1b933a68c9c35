"""Testbed lifecycle with real namespaces: built, torn down on every exit path, cleaned; and
linkem's own validation of link profiles. Without namespaces: tests/unit/testbed/test_testbed.py."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from longlook.linkprofile import LinkProfile, load_link_profile
from testbed_helpers import LONGLOOK, REPO, namespaces, needs_testbed

PROFILE = LinkProfile(name="t", rate_mbit=50, delay_ms=5, buffer_bytes=100_000)

# A runner that builds a testbed and waits to be killed.
_RUNNER = textwrap.dedent("""
    import signal, sys, time
    # a process that takes Ctrl-C, whatever its parent ignored (SIG_IGN is inherited)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from longlook.linkprofile import LinkProfile
    from longlook.testbed import Testbed
    emulate = sys.argv[2] == "linkem"
    prof = LinkProfile(rate_mbit=50, delay_ms=5) if emulate else None
    with Testbed(prof, id=sys.argv[1]) as tb:
        print("up", tb.linkem.pid if tb.linkem else 0, flush=True)
        time.sleep(120)
""")


def _start_runner(tb_id: str, mode: str) -> tuple[subprocess.Popen, int]:
    p = subprocess.Popen(
        [sys.executable, "-c", _RUNNER, tb_id, mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    line = p.stdout.readline().split()
    assert line and line[0] == "up", p.stderr.read()
    return p, int(line[1])


def _ours(tb_id: str) -> list[str]:
    return [n for n in namespaces() if n.startswith(f"ll-{tb_id}-")]


# ---- profiles ------------------------------------------------------------------------


@needs_testbed("linkem")
@pytest.mark.parametrize(
    "text,field",
    [
        ("[up]\nrate_mbit = 10.0\ndelay_ms = -1.0\n[down]\nrate_mbit = 10.0\n", "delay_ms"),
        ("[up]\nrate_mbit = 10.0\nloss = 2.0\n[down]\nrate_mbit = 10.0\n", "loss"),
    ],
)
def test_linkem_validate_names_its_field(tmp_path: Path, text: str, field: str):
    from longlook.binaries import find_binary

    f = tmp_path / "bad.toml"
    f.write_text(text)
    p = subprocess.run([find_binary("linkem"), "validate", "--config", f], capture_output=True, text=True)
    assert p.returncode == 2
    assert field in p.stderr + p.stdout


@needs_testbed("linkem")
def test_linkem_accepts_rendered_profiles(tmp_path: Path):
    from longlook.binaries import find_binary

    for f in (REPO / "link-profiles").glob("*.toml"):
        prof = load_link_profile(f)
        if any(prof.resolved(w).trace for w in ("up", "down")):
            continue  # needs its generated trace file
        cfg = tmp_path / f.name
        cfg.write_text(prof.to_linkem_toml(f.parent))
        p = subprocess.run([find_binary("linkem"), "validate", "--config", cfg], capture_output=True, text=True)
        assert p.returncode == 0, f"{f.name}: {p.stderr}"


# ---- lifecycle -----------------------------------------------------------------------


@needs_testbed("linkem-probe")
def test_topology_without_emulation():
    from longlook.testbed import Testbed
    from longlook.testbed.probe import PathProbe

    with Testbed(None) as tb, PathProbe(tb) as probe:
        names = list(tb.ns.values())
        assert set(names) <= set(namespaces())
        r = probe.rtt(count=50, interval_ms=1)
        assert r["received"] == 50
        feats = tb.run("router", ["ethtool", "-k", "r0"]).stdout
        for feat in (
            "tcp-segmentation-offload: off",
            "generic-segmentation-offload: off",
            "generic-receive-offload: off",
            "tx-udp-segmentation: off",
        ):
            assert feat in feats
    assert not set(names) & set(namespaces())


@needs_testbed("linkem", "linkem-probe")
def test_exception_tears_down_and_linkem_death_is_noticed():
    from longlook.testbed import Testbed, TestbedError

    with pytest.raises(TestbedError, match="linkem died"):
        with Testbed(PROFILE) as tb:
            names = list(tb.ns.values())
            pid = tb.linkem.pid
            os.kill(pid, signal.SIGKILL)
            time.sleep(0.2)
            tb.check()
    assert not set(names) & set(namespaces())


@needs_testbed("linkem", "linkem-probe")
def test_reconfigure_changes_the_link():
    from longlook.testbed import Testbed
    from longlook.testbed.probe import PathProbe

    with Testbed(PROFILE) as tb, PathProbe(tb) as probe:
        assert probe.rtt(count=100, interval_ms=2)["rtt_ms"]["mean"] == pytest.approx(10, abs=1)
        tb.reconfigure(LinkProfile(rate_mbit=50, delay_ms=15, buffer_bytes=100_000))
        assert probe.rtt(count=100, interval_ms=2)["rtt_ms"]["mean"] == pytest.approx(30, abs=1)
        assert tb.linkem_stats()["directions"]["up"]["packets"] > 0


def _cpu_latency_target_us() -> int:
    import struct

    with open("/dev/cpu_dma_latency", "rb") as f:  # reads the kernel's current aggregate
        return struct.unpack("i", f.read(4))[0]


@needs_testbed("linkem")
def test_cpu_wakeup_latency_is_held_while_a_testbed_or_linkem_lives(monkeypatch):
    """The testbed and linkem each hold the same CPU wake-up latency request (1 us by
    default: no deep idle state, no 0 us polling that made the host preempt the vCPUs;
    LONGLOOK_CPU_LATENCY_US sets it for both), and both let go."""
    from longlook.testbed import Testbed

    before = _cpu_latency_target_us()
    for wanted, env in ((1, None), (0, "0")):
        if env is None:
            monkeypatch.delenv("LONGLOOK_CPU_LATENCY_US", raising=False)
        else:
            monkeypatch.setenv("LONGLOOK_CPU_LATENCY_US", env)
        with Testbed(PROFILE) as tb:
            assert _cpu_latency_target_us() == wanted
            assert tb.linkem_stats()["cpu_latency_hold_us"] == wanted
            os.close(tb._cpu_latency_fd)  # the testbed's own request gone: linkem's remains
            tb._cpu_latency_fd = None
            assert _cpu_latency_target_us() == wanted
        assert _cpu_latency_target_us() == before > 1


@needs_testbed("linkem")
def test_sigterm_tears_down():
    p, linkem_pid = _start_runner("sigterm", "linkem")
    assert len(_ours("sigterm")) == 3
    p.send_signal(signal.SIGTERM)
    assert p.wait(20) == 128 + signal.SIGTERM
    assert _ours("sigterm") == []
    assert not Path(f"/proc/{linkem_pid}").exists()


@needs_testbed("linkem")
def test_sigint_tears_down():
    p, _ = _start_runner("sigint", "linkem")
    p.send_signal(signal.SIGINT)
    p.wait(20)
    assert _ours("sigint") == []


@needs_testbed("linkem", "linkem-probe")
def test_kill_9_then_clean_then_next_testbed_starts():
    p, linkem_pid = _start_runner("k9", "linkem")
    p.kill()
    p.wait(10)
    assert len(_ours("k9")) == 3  # nothing could clean up after SIGKILL
    # --id: other work on this host may have its own ll- namespaces; touch only ours.
    out = subprocess.run([*LONGLOOK, "clean", "--id", "k9"], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert "removed namespace ll-k9-router" in out.stdout
    assert _ours("k9") == []
    assert (
        not Path(f"/proc/{linkem_pid}").exists()
        or "Z" in Path(f"/proc/{linkem_pid}/stat").read_text().split(")")[-1].split()[0]
    )
    # The same id can be used again straight away.
    from longlook.testbed import Testbed
    from longlook.testbed.probe import PathProbe

    with Testbed(PROFILE, id="k9") as tb, PathProbe(tb) as probe:
        assert probe.rtt(count=50, interval_ms=2)["received"] == 50
    assert _ours("k9") == []


@needs_testbed("linkem")
def test_a_second_testbed_of_the_same_process_leaves_the_first_running():
    # The clean at open removes records whose owner is gone or is this process; a testbed this
    # process still has open is neither a leftover nor to be stopped (it once was: its linkem
    # got SIGTERM when a test opened its own testbed beside a module's shared one).
    from longlook.testbed import Testbed

    with Testbed(PROFILE, id="first") as first:
        with Testbed(PROFILE, id="second"):
            time.sleep(0.3)
            first.check()  # raises "linkem died" if the second one's clean stopped it
        assert first.linkem.proc.poll() is None
    assert _ours("first") == [] and _ours("second") == []


@needs_testbed("linkem")
def test_next_testbed_cleans_recorded_leftovers():
    p, _ = _start_runner("stale", "linkem")
    p.kill()
    p.wait(10)
    from longlook.testbed import Testbed

    with Testbed(PROFILE, id="fresh"):
        assert _ours("stale") == []  # removed when the next testbed opened


@needs_testbed()
def test_clean_removes_unrecorded_namespaces():
    """A namespace of ours with no record (e.g. a crash between `ip netns add` and the
    record) is removed by an explicit clean."""
    subprocess.run(["ip", "netns", "add", "ll-orphan-router"], check=True)
    out = subprocess.run([*LONGLOOK, "clean", "--id", "orphan"], capture_output=True, text=True, cwd=REPO)
    assert "removed namespace ll-orphan-router" in out.stdout, out.stdout + out.stderr
    assert _ours("orphan") == []


@needs_testbed("linkem")
def test_a_link_linkem_refuses_is_named_by_its_profile_not_the_generated_file(tmp_path, monkeypatch):
    """Should the two validators ever disagree, the error names the user's link profile."""
    from longlook.testbed import Testbed, TestbedError

    bad = LinkProfile(rate_mbit=10, delay_ms=5, name="my-link")
    monkeypatch.setattr(LinkProfile, "to_linkem_toml", lambda self, base_dir=None: "rate_mbit = 10.0\nloss = 2.0\n")
    with pytest.raises(TestbedError) as e:
        with Testbed(bad, workdir=tmp_path / "tb"):
            pass
    msg = str(e.value)
    assert "link profile 'my-link'" in msg and "loss" in msg and "link.toml" not in msg, msg
