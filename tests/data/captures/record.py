"""Records the wire checker's test captures on loopback (SOURCE.md says what each shows).

    sudo LONGLOOK_BIN_DIR=/path/to/target/release .venv/bin/python \
        tests/data/captures/record.py [NAME ...]

Each capture is one dumpcap of `udp port 44433` on lo while a server and one or more client
runs talk over 127.0.0.1, and the TLS secrets both sides logged (deduplicated) beside it as
NAME.keylog. Our endpoint is the workspace's build (longlook.binaries finds it); aioquic is
the stacks cache's (`longlook stacks install aioquic`), running the two scripts beside this
file. Every process runs under `nice -n 19`; dumpcap needs root."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from longlook.binaries import find_binary
from longlook.stacks.adapters.aioquic import Aioquic

HERE = Path(__file__).resolve().parent
PORT = 44433
ENDPOINT = find_binary("endpoint")
AIOQUIC = Aioquic("1.7.2").python
PAGE = "/page/4x5k.html"


class Work:
    """Paths of one recording: certificates, the key log, scratch files."""

    def __init__(self, root: Path, name: str):
        self.root = root
        self.keylog = root / f"{name}.keylog"
        self.cert_dir = root / "cert"
        self.cert = self.cert_dir / "cert.pem"
        self.key = self.cert_dir / "key.pem"


def ours_server(w: Work, *extra: str) -> list[str]:
    return [str(ENDPOINT), "serve", "--listen", f"127.0.0.1:{PORT}", "--cert-dir", str(w.cert_dir)] + [
        "--keylog", str(w.keylog), "--no-qlog", "--log-dir", str(w.root), *extra,
    ]  # fmt: skip


def ours_client(w: Work, *extra: str, ca: Path | None = None) -> list[str]:
    return [str(ENDPOINT), "fetch", "--url", f"https://127.0.0.1:{PORT}{PAGE}", "--proto", "h3"] + [
        "--ca", str(ca or w.cert), "--keylog", str(w.keylog), "--out", str(w.root / "fetch.json"),
        "--timeout-s", "5", *extra,
    ]  # fmt: skip


def aioquic_client(w: Work, *extra: str) -> list[str]:
    return [str(AIOQUIC), str(HERE / "aioquic_client.py"), "--server", f"127.0.0.1:{PORT}"] + [
        "--ca", str(w.cert), "--keylog", str(w.keylog), *extra,
    ]  # fmt: skip


def aioquic_server(w: Work, *extra: str) -> list[str]:
    return [str(AIOQUIC), str(HERE / "aioquic_server.py"), "--listen", f"127.0.0.1:{PORT}"] + [
        "--cert", str(w.cert), "--key", str(w.key), "--keylog", str(w.keylog), *extra,
    ]  # fmt: skip


RESTART = "restart the server"  # a step: stop the server and start it anew (new ticket keys)


def ticket(w: Work) -> str:
    return str(w.root / "ticket.pickle")


# name -> (server argv, client steps); each step an argv or RESTART
RECIPES = {
    "handshake-pass": (ours_server, [lambda w: ours_client(w)]),
    "handshake-fail": (ours_server, [lambda w: ours_client(w, ca=w.root / "other" / "cert.pem")]),
    "transfer-pass": (ours_server, [lambda w: ours_client(w)]),
    "transfer-fail": (ours_server, [lambda w: aioquic_client(w, "--paths", f"{PAGE},/obj/200k/0.jpg",
                                                              "--abort-after", "30000")]),
    "multiplexing-pass": (ours_server, [lambda w: ours_client(w)]),
    "multiplexing-fail": (ours_server, [lambda w: aioquic_client(w, "--sequential")]),
    "resumption-pass": (ours_server, [
        lambda w: aioquic_client(w, "--save-ticket", ticket(w)),
        lambda w: aioquic_client(w, "--load-ticket", ticket(w)),
    ]),
    "resumption-fail": (ours_server, [
        lambda w: aioquic_client(w, "--save-ticket", ticket(w)),
        RESTART,
        lambda w: aioquic_client(w, "--load-ticket", ticket(w)),
    ]),
    "zerortt-pass": (ours_server, [lambda w: ours_client(w, "--zero-rtt")]),
    "zerortt-fail": (ours_server, [
        lambda w: aioquic_client(w, "--save-ticket", ticket(w)),
        RESTART,
        lambda w: aioquic_client(w, "--load-ticket", ticket(w), "--zero-rtt"),
    ]),
    "retry-pass": (lambda w: aioquic_server(w, "--retry"), [lambda w: ours_client(w)]),
    "retry-fail": (aioquic_server, [lambda w: ours_client(w)]),
    "keyupdate-pass": (ours_server, [lambda w: aioquic_client(w, "--key-update")]),
    "keyupdate-fail": (ours_server, [lambda w: aioquic_client(w)]),
    "chacha20-pass": (ours_server, [lambda w: aioquic_client(w, "--chacha20")]),
    "chacha20-fail": (ours_server, [lambda w: aioquic_client(w)]),
    "http3-pass": (ours_server, [lambda w: ours_client(w)]),
    "http3-fail": (ours_server, [lambda w: aioquic_client(w, "--no-http")]),
    "v2-pass": (lambda w: aioquic_server(w, "--versions", "v2,v1"), [lambda w: aioquic_client(w, "--v2")]),
    "v2-fail": (lambda w: aioquic_server(w, "--versions", "v1"), [lambda w: aioquic_client(w, "--v2")]),
    "ecn-pass": (ours_server, [lambda w: ours_client(w)]),
    "ecn-fail": (lambda w: ours_server(w, "--no-ecn"), [lambda w: ours_client(w, "--no-ecn")]),
    "rebind-port-pass": (ours_server, [lambda w: aioquic_client(w, "--rebind", "port")]),
    "rebind-port-fail": (ours_server, [lambda w: aioquic_client(w)]),
    "rebind-addr-pass": (ours_server, [lambda w: aioquic_client(w, "--rebind", "addr")]),
    "rebind-addr-fail": (ours_server, [lambda w: aioquic_client(w, "--rebind", "port")]),
    "connection-migration-pass": (ours_server, [lambda w: aioquic_client(w, "--rebind", "migrate")]),
    "connection-migration-fail": (ours_server, [lambda w: aioquic_client(w, "--rebind", "port")]),
}  # fmt: skip


def niced(argv: list[str]) -> list[str]:
    return ["nice", "-n", "19", *argv]


def start_server(argv: list[str], log: Path) -> subprocess.Popen:
    p = subprocess.Popen(niced(argv), stdout=log.open("a"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 10
    while "ready" not in log.read_text():
        if p.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"server did not start: {log.read_text()[-500:]}")
        time.sleep(0.05)
    return p


def stop(p: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    if p.poll() is None:
        p.send_signal(sig)
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def make_certs(w: Work) -> None:
    """Our endpoint writes a self-signed certificate into an empty --cert-dir: one for the
    servers, and another one (`other`) that the handshake-fail client trusts instead."""
    for d in (w.cert_dir, w.root / "other"):
        p = subprocess.Popen(niced([str(ENDPOINT), "serve", "--listen", f"127.0.0.1:{PORT}", "--cert-dir", str(d),
                                    "--no-qlog", "--log-dir", str(w.root)]),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        while not (d / "key.pem").exists():
            time.sleep(0.05)
        time.sleep(0.2)
        stop(p)


def record(name: str, root: Path) -> None:
    w = Work(root, name)
    make_certs(w)
    server, steps = RECIPES[name]
    pcap = HERE / f"{name}.pcapng"
    dump = subprocess.Popen(
        ["dumpcap", "-q", "-i", "lo", "-f", f"udp port {PORT}", "-w", str(pcap)], stderr=subprocess.DEVNULL
    )
    srv = None
    try:
        time.sleep(1.0)  # dumpcap is capturing
        srv = start_server(server(w), root / "server.log")
        for step in steps:
            if step == RESTART:
                stop(srv)
                srv = start_server(server(w), root / "server.log")
                continue
            subprocess.run(niced(step(w)), timeout=30, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.3)
    finally:
        if srv is not None:
            stop(srv)
        time.sleep(0.3)
        stop(dump, signal.SIGINT)
    lines = dict.fromkeys(w.keylog.read_text().splitlines())  # both sides log the same secrets
    (HERE / f"{name}.keylog").write_text("".join(f"{x}\n" for x in lines if x and not x.startswith("#")))
    print(f"{name}: {pcap.stat().st_size:,} bytes")


def main() -> None:
    names = sys.argv[1:] or list(RECIPES)
    for name in names:
        root = Path(tempfile.mkdtemp(prefix="longlook-wire-"))
        try:
            record(name, root)
        finally:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
