"""Bad input to the endpoint gets one clear error, never a traceback: a URL whose port is
out of range. The scenarios, link profiles and output directories longlook refuses:
tests/unit/cli/test_bad_input.py."""

from __future__ import annotations

import subprocess

from testbed_helpers import needs_testbed


@needs_testbed("endpoint")
def test_endpoint_refuses_a_port_out_of_range():
    from longlook.binaries import find_binary

    p = subprocess.run(
        [str(find_binary("endpoint")), "fetch", "--url", "https://127.0.0.1:99999/", "--proto", "h2", "--insecure"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert p.returncode == 1 and "port '99999' is not 1-65535" in p.stderr
