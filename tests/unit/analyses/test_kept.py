"""Results kept beside a run (analyses.kept): read back only by the code version that kept
them; the version is a digest of the reading package's source."""

from __future__ import annotations

import json

from longlook import qlog, wire
from longlook.analyses.kept import keep, read_kept, source_version


def test_a_result_is_read_back_only_by_the_version_that_kept_it(tmp_path):
    cache = tmp_path / "x.json"
    assert read_kept(cache, "v1") is None
    keep(cache, {"verdict": "passed"}, "v1")
    assert read_kept(cache, "v1") == {"verdict": "passed"}
    assert read_kept(cache, "v2") is None
    cache.write_text(json.dumps({"verdict": "passed"}))  # kept before results had versions
    assert read_kept(cache, "v1") is None


def test_a_package_s_version_is_its_source():
    assert source_version(wire) == source_version(wire) and len(source_version(wire)) == 12
    assert source_version(wire) != source_version(qlog)
