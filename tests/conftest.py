"""Each test starts with the signal handlers the session started with. A test that leaves
SIGINT ignored (SIG_IGN is inherited across exec) would make every later child process
deaf to Ctrl-C, which is what tests of signal handling then measure."""

from __future__ import annotations

import signal
import warnings

import pytest

_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@pytest.fixture(autouse=True)
def _signal_handlers_restored():
    before = {s: signal.getsignal(s) for s in _SIGNALS}
    yield
    for s, handler in before.items():
        if signal.getsignal(s) is not handler:
            warnings.warn(f"a test left {signal.Signals(s).name} handled by {signal.getsignal(s)!r}; restored")
            signal.signal(s, handler)
