"""Set-up installs no other QUIC stack; a scenario that names one has it installed before its
grid starts, once, with progress (stacks/builds/install.py)."""

from pathlib import Path

import pytest

import longlook.kinds.pageload as pageload
import longlook.stacks.builds.install as install
from longlook.kinds.pageload import Scenario
from repo_paths import ROOT


class FakeStack:
    name = "fake"
    spec = "fake@1.0"
    build_dir = Path("/nonexistent/fake-1.0")
    apt_needs = ()

    def __init__(self):
        self.built = 0

    def installed(self) -> bool:
        return self.built > 0

    def install(self) -> None:
        self.built += 1

    def version_info(self) -> str:
        return self.spec


@pytest.fixture
def fake(monkeypatch):
    stack = FakeStack()
    monkeypatch.setattr(install, "is_stack", lambda spec: spec.partition("@")[0] == "fake")
    monkeypatch.setattr(install, "resolve", lambda spec: stack)
    return stack


def test_a_named_stack_is_installed_once_with_progress(fake):
    said: list[str] = []
    install.ensure_stacks(["ours", "native", "fake", "fake@1.0", None], say=said.append)
    assert fake.built == 1
    assert any("fake@1.0: not installed yet: installing" in s for s in said) and any("installed in" in s for s in said)
    said.clear()
    install.ensure_stacks(["fake"], say=said.append)  # cached: nothing to do, nothing said
    assert fake.built == 1 and said == []


def test_a_long_install_says_it_is_still_going(fake, monkeypatch):
    import time

    monkeypatch.setattr(install, "HEARTBEAT_S", 0.05)
    fake.install = lambda: time.sleep(0.3)
    said: list[str] = []
    install.ensure_stacks(["fake"], say=said.append)
    assert any(s.startswith("still installing fake@1.0") for s in said)


def test_the_page_load_kind_installs_the_stacks_its_arms_name(monkeypatch):
    seen: list[list[str]] = []
    monkeypatch.setattr(pageload, "ensure_stacks", lambda specs: seen.append(list(specs)))
    monkeypatch.setattr(pageload, "require_servers", lambda servers: None)
    monkeypatch.setattr(pageload, "client_fetcher", lambda name, **kw: name)
    sc = Scenario.from_toml("""
name = "stacks"
rounds = 2
workloads = ["1x5k"]
[[arms]]
label = "quiche"
protocol = "h3"
server = "quiche"
[[arms]]
label = "tcp"
protocol = "h2"
[[links]]
rate_mbit = 10
rtt_ms = 36
""")
    pageload.KIND.prepare(sc)
    assert seen and "quiche" in seen[0]


def test_the_main_job_names_no_other_stack(monkeypatch):
    """scenarios/quick.toml: set-up builds no stack, and none is installed when it runs."""
    from longlook.core.spec import load_scenario

    monkeypatch.setattr(install, "install_stack", lambda spec, say=None: pytest.fail(f"installed {spec}"))
    sc = load_scenario(ROOT / "scenarios" / "quick.toml")
    specs = [n for a in sc.arms for n in (a.server or sc.server, a.client or sc.client)]
    install.ensure_stacks(specs)
    assert not [s for s in specs if install.is_stack(s)]
