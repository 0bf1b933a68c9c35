"""Names and numbers from outside, a table of inputs and the one clear error each must give
(exit 2, the message, no traceback), before anything is built or measured. A new feature
that takes a name from a scenario, the command line or the environment adds its rows here."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

LONGLOOK = [sys.executable, "-m", "longlook.cli"]

SCENARIO = """name = "hostile-names"
rounds = 2
workloads = ["1x5k"]
{extra}
[[links]]
rate_mbit = 10
rtt_ms = 20
"""

ARM = (
    'arms = [{{ label = "x", protocol = "h3", server = "{server}", server_cc = "{cc}" }}, '
    '{{ label = "h2", protocol = "h2" }}]\n'
    'compare = [["x", "h2"]]'
)

# (case, environment, scenario's extra lines or None for `stacks install`, argv tail, words the error must contain)
CASES = [
    (
        "cache size nan",
        {"LONGLOOK_STACKS_CACHE_GB": "nan"},
        None,
        ["stacks", "install", "aioquic@1.7.2"],
        ["LONGLOOK_STACKS_CACHE_GB", "not a number"],
    ),
    (
        "cache size inf",
        {"LONGLOOK_STACKS_CACHE_GB": "inf"},
        None,
        ["stacks", "install", "aioquic@1.7.2"],
        ["LONGLOOK_STACKS_CACHE_GB"],
    ),
    (
        "cache size negative",
        {"LONGLOOK_STACKS_CACHE_GB": "-3"},
        None,
        ["stacks", "install", "aioquic@1.7.2"],
        ["LONGLOOK_STACKS_CACHE_GB"],
    ),
    (
        "cache size text",
        {"LONGLOOK_STACKS_CACHE_GB": "lots"},
        None,
        ["stacks", "install", "aioquic@1.7.2"],
        ["LONGLOOK_STACKS_CACHE_GB"],
    ),
    (
        "stacks dir is a file",
        {"LONGLOOK_STACKS_DIR": "{file}"},
        None,
        ["stacks", "install", "aioquic@1.7.2"],
        ["LONGLOOK_STACKS_DIR", "not a folder"],
    ),
    (
        "datapath bogus at validate",
        {"LONGLOOK_DATAPATH": "bogus"},
        "",
        ["scenario", "validate"],
        ["LONGLOOK_DATAPATH", "not a datapath"],
    ),
    (
        "a server cc the stack lacks",
        {},
        ARM.format(server="quiche", cc="vegas"),
        ["scenario", "validate"],
        ["vegas", "offers"],
    ),
    (
        "a release that is a path",
        {},
        ARM.format(server="quic-go@../../x", cc="newreno"),
        ["scenario", "validate"],
        ["not a release name"],
    ),
    ("a release that is an option", {}, None, ["stacks", "install", "quic-go@--help"], ["not a release name"]),
    (
        "a release the registry does not list",
        {},
        ARM.format(server="quic-go@v0.99.0", cc="newreno"),
        ["scenario", "validate"],
        ["quic-go@v0.99.0", "has no such release", "nearest releases: v0.64.1, v0.65.0"],
    ),
    (
        "a release that is no version",
        {},
        ARM.format(server="quic-go@banana", cc="newreno"),
        ["scenario", "validate"],
        ["quic-go@banana", "has no such release"],
    ),
    ("a pcap limit without a pcap", {}, "[capture]\nmax_mb = 5", ["scenario", "validate"], ["max_mb", "pcap"]),
    ("a pcap limit of nothing", {}, '[capture]\npcap = "headers"\nmax_mb = 1e-9', ["scenario", "validate"], ["max_mb"]),
    (
        "install a release the registry does not list",
        {},
        None,
        ["stacks", "install", "quic-go@v0.99.0"],
        ["has no such release", "v0.65.0"],
    ),
]

# the registry's listing, fresh in the cache: the cases never reach the network
GO_LISTING = "v0.63.0\nv0.64.0\nv0.64.1\nv0.65.0\n"


CONFORMANCE = """kind = "conformance"
name = "hostile-conformance"
rounds = 2
{extra}
[[links]]
rate_mbit = 10
rtt_ms = 20
"""

CASES += [
    (
        "conformance: pacing off for quinn",
        {},
        'stacks = [{ stack = "ours", ccs = ["cubic"], pacing = false }]',
        ["scenario", "validate"],
        ["pacing = false", "quinn", "pacing_effective"],
    ),
    (
        "conformance: an envelope bin of a nanosecond",
        {},
        'stacks = ["ours"]\nbin_s = 1e-9',
        ["scenario", "validate"],
        ["bin_s", "0.01"],
    ),
]


@pytest.mark.parametrize("case,env,extra,argv,words", CASES, ids=[c[0] for c in CASES])
def test_one_clear_error(tmp_path, case, env, extra, argv, words):
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    (tmp_path / "cache" / "releases").mkdir(parents=True)
    (tmp_path / "cache" / "releases" / "quic-go.json").write_text(GO_LISTING)
    environ = {
        **os.environ,
        "LONGLOOK_CACHE": str(tmp_path / "cache"),
        "LONGLOOK_STACKS_DIR": str(tmp_path / "stacks"),
        **{k: v.format(file=a_file) for k, v in env.items()},
    }
    args = list(argv)
    if extra is not None:
        path = tmp_path / "s.toml"
        path.write_text((CONFORMANCE if case.startswith("conformance:") else SCENARIO).format(extra=extra))
        args.append(str(path))
    r = subprocess.run([*LONGLOOK, *args], env=environ, capture_output=True, text=True, timeout=60)
    out = r.stdout + r.stderr
    assert r.returncode == 2, (r.returncode, out)
    assert "Traceback" not in out, out
    for w in words:
        assert w in out, out
    assert not (tmp_path / "stacks").exists() or not any((tmp_path / "stacks").iterdir()), "built something"


def test_one_release_has_one_identity():
    from longlook.stacks.registry import resolve
    from longlook.stacks.builds.specs import check_spec

    assert resolve("quic-go@0.65.0").spec == resolve("quic-go@v0.65.0").spec == "quic-go@v0.65.0"
    assert resolve("quic-go@0.65.0").build_dir == resolve("quic-go@v0.65.0").build_dir
    assert check_spec("quiche@v0.30.0") == "quiche@0.30.0"
    assert check_spec("ours") == "ours"


def test_a_damaged_release_listing_is_fetched_again_and_a_garbage_one_is_the_registry_s(tmp_path, monkeypatch):
    from longlook.errors import LonglookError
    from longlook.stacks.builds import releases as rel

    monkeypatch.setenv("LONGLOOK_CACHE", str(tmp_path))
    cache = rel._cache_file("quic-go")
    cache.parent.mkdir(parents=True)
    cache.write_text("")  # half-written: an empty listing
    answers = ["v0.64.0\nv0.65.0\n"]
    monkeypatch.setattr(rel, "_get", lambda url: answers[0])
    assert rel.releases("quic-go") == ["v0.64.0", "v0.65.0"]
    assert cache.read_text() == "v0.64.0\nv0.65.0\n"

    crates = rel._cache_file("quiche")
    crates.write_text('{"vers": "0.30.0", "yanked": false}\n{"vers": "0.31')  # cut mid-line
    answers[0] = "<html>rate limited</html>"
    with pytest.raises(LonglookError, match="no release listing"):
        rel.releases("quiche")
    assert not list(crates.parent.glob(".*.part"))


def test_a_listing_entry_that_is_no_release_name_is_never_offered(tmp_path, monkeypatch):
    from longlook.stacks.builds import releases as rel

    monkeypatch.setenv("LONGLOOK_CACHE", str(tmp_path))
    monkeypatch.setattr(rel, "_get", lambda url: "v0.64.0\n../../v0.65.0\nv0.65.0\n")
    assert rel.releases("quic-go") == ["v0.64.0", "v0.65.0"]


@pytest.mark.parametrize("damage", ["truncate", "scribble"])
def test_a_damaged_store_is_one_clear_error(tmp_path, damage):
    from longlook.core.store import DB_FILE
    from unit.core.test_export import _make

    exp = tmp_path / "exp"
    _make(exp)
    db = exp / DB_FILE
    data = bytearray(db.read_bytes())
    if damage == "truncate":
        db.write_bytes(bytes(data[: len(data) // 3]))
    else:  # every block after the header overwritten: checksums fail when a table is read
        for i in range(8192, len(data), 4096):
            data[i : i + 64] = b"\xa5" * 64
        db.write_bytes(bytes(data))
    for argv in (["export", str(exp), "--out", str(tmp_path / "out")], ["report", str(exp)]):
        r = subprocess.run([*LONGLOOK, *argv], capture_output=True, text=True, timeout=120)
        out = r.stdout + r.stderr
        assert r.returncode == 2, (argv, r.returncode, out[-2000:])
        assert "Traceback" not in out and "error" in out, out[-2000:]


FAIRNESS = """kind = "fairness"
name = "f"
rounds = 2
duration_s = 10
bin_s = {bin_s}
matchups = [{{ quic = 1, tcp = 1 }}]
[[links]]
rate_mbit = 10
rtt_ms = 20
"""

VIDEO_IV = """kind = "video"
name = "v"
rounds = 4
protocols = ["race", "h2"]
[video]
duration_s = 20
segment_s = 4
[intervention]
onset_s = {onset}
[[links]]
rate_mbit = 10
rtt_ms = 20
"""

PINNED = SCENARIO.format(extra="") + "[testbed]\ncpus = {cpus}\n"

BOUNDS = [
    ("fairness bin far too fine", FAIRNESS.format(bin_s="1e-9"), "bin_s"),
    ("intervention onset past the clip", VIDEO_IV.format(onset="[30, 40]"), "inside the 20 s clip"),
    ("intervention onset infinite", VIDEO_IV.format(onset="[5, inf]"), "finite"),
    ("a CPU this machine lacks", PINNED.format(cpus="{ router = [99] }"), "this machine's CPUs"),
    ("true is no CPU", PINNED.format(cpus="{ router = [true] }"), "router"),
]


@pytest.mark.parametrize("case,text,words", BOUNDS, ids=[b[0] for b in BOUNDS])
def test_numbers_bounded_on_both_sides(tmp_path, case, text, words):
    path = tmp_path / "s.toml"
    path.write_text(text)
    r = subprocess.run([*LONGLOOK, "scenario", "validate", str(path)], capture_output=True, text=True, timeout=60)
    out = r.stdout + r.stderr
    assert r.returncode == 2 and "Traceback" not in out, out
    assert words in out, out
