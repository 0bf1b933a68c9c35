"""A Chromium started with `--remote-debugging-pipe`, driven over the DevTools protocol (CDP).

Why a hand-rolled session and not playwright or a CDP library: the page-load measurement
uses six commands and a handful of events, and the pipe transport (the one Playwright and
Puppeteer use themselves: NUL-terminated JSON on fds 3 and 4) needs nothing but the standard
library. That keeps the measured path free of a Node driver process competing for the
testbed's two cores, keeps no open port in the client namespace, cannot trigger a browser
download, and does not tie us to a library's supported Chromium range (Debian ships 156).

    with DevToolsBrowser.launch(["/usr/bin/chromium", "--headless", ...]) as browser:
        session = browser.attach_to_first_page()
        browser.send("Network.enable", session=session)
        for event in browser.events(deadline): ...
"""

from __future__ import annotations

import ctypes
import fcntl
import json
import os
import select
import signal
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any, Iterator


class DevToolsError(Exception):
    pass


PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True)


def _above_4(fd: int) -> int:
    if fd > 4:
        return fd
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 5)
    os.close(fd)
    return moved


@dataclass
class DevToolsBrowser:
    process: subprocess.Popen
    _to_browser: int  # our end of the browser's fd 3
    _from_browser: int  # our end of the browser's fd 4
    _buffer: bytes = b""
    _next_id: int = 0
    _pending_events: list[dict] = field(default_factory=list)

    @classmethod
    def launch(cls, argv: list[str], *, stderr=None) -> "DevToolsBrowser":
        """Start the browser with `--remote-debugging-pipe`: it reads commands on fd 3 and
        writes replies and events on fd 4."""
        cmd_read, cmd_write = os.pipe()
        ev_read, ev_write = os.pipe()

        def wire_fds() -> None:  # in the child, before exec: put the pipe ends at fds 3 and 4
            _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # never outlive the driver
            os.dup2(cmd_read, 3)
            os.dup2(ev_write, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        # Both pipe ends must be above 4, or dup2 could clobber one with the other.
        cmd_read, cmd_write, ev_read, ev_write = (_above_4(fd) for fd in (cmd_read, cmd_write, ev_read, ev_write))
        proc = subprocess.Popen(
            [*argv, "--remote-debugging-pipe"],
            preexec_fn=wire_fds,
            # dup2 leaves 3 and 4 inheritable; every other fd of ours is
            # close-on-exec (PEP 446), so nothing else leaks into Chromium
            close_fds=False,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
        )
        os.close(cmd_read)
        os.close(ev_write)
        return cls(proc, cmd_write, ev_read)

    # ---- protocol -------------------------------------------------------------------

    def send(
        self, method: str, params: dict | None = None, *, session: str | None = None, timeout_s: float = 10.0
    ) -> dict:
        """Send a command and wait for its reply; events arriving meanwhile are kept for
        `events()`."""
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_browser, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout_s
        while True:
            reply = self._read_message(deadline)
            if reply is None:
                raise DevToolsError(f"{method}: no reply within {timeout_s:.0f} s")
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise DevToolsError(f"{method}: {reply['error'].get('message')}")
                return reply.get("result", {})
            if "method" in reply:
                self._pending_events.append(reply)

    def events(self, deadline: float) -> Iterator[dict]:
        """Events ({"method", "params", "sessionId"}) until `deadline` (time.monotonic)."""
        while True:
            while self._pending_events:
                yield self._pending_events.pop(0)
            msg = self._read_message(deadline)
            if msg is None:
                return
            if "method" in msg:
                yield msg

    def attach_to_first_page(self) -> str:
        """A flat session on the page the browser opened at start (about:blank)."""
        targets = self.send("Target.getTargets")["targetInfos"]
        page = next((t for t in targets if t["type"] == "page"), None)
        if page is None:
            page = {"targetId": self.send("Target.createTarget", {"url": "about:blank"})["targetId"]}
        return self.send("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True})["sessionId"]

    def _read_message(self, deadline: float) -> dict | None:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self._from_browser], [], [], left)
            if not ready:
                return None
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise DevToolsError(f"the browser closed the DevTools pipe (exit code {self.process.poll()})")
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(raw)

    # ---- lifecycle ------------------------------------------------------------------

    def close(self, grace_s: float = 3.0) -> None:
        """Browser.close, then SIGTERM/SIGKILL the whole process group if it lingers (the
        renderer, GPU and network-service children must not outlive the run)."""
        if self.process.poll() is None:
            try:
                self.send("Browser.close", timeout_s=grace_s)
            except (DevToolsError, OSError):
                pass
            try:
                self.process.wait(grace_s)
            except subprocess.TimeoutExpired:
                pass
        for sig in (15, 9):
            try:
                os.killpg(self.process.pid, sig)  # its own session (start_new_session)
            except ProcessLookupError:
                break
            time.sleep(0.2)
        if self.process.poll() is None:
            self.process.wait(2)
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass

    def __enter__(self) -> "DevToolsBrowser":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
