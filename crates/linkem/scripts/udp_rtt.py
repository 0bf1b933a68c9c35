#!/usr/bin/env python3
"""UDP RTT probe for the linkem smoke test (stdlib only).

  udp_rtt.py echo --bind 198.18.2.2:7001
  udp_rtt.py probe --target 198.18.2.2:7001 --count 2000 --interval-ms 5 [--size 64] [--spin]

`probe` prints one JSON line: sent, received, rtt_ms {mean, sd, min, p25, p50, p75, p99, max}.
"""
import argparse, json, select, socket, statistics, struct, time


def addr(s):
    host, port = s.rsplit(":", 1)
    return host, int(port)


def echo(args):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(addr(args.bind))
    while True:
        data, peer = s.recvfrom(65535)
        s.sendto(data, peer)


def probe(args):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect(addr(args.target))
    s.setblocking(False)
    pad = b"\0" * max(0, args.size - 12)
    sent_at = {}
    rtts = []
    interval = args.interval_ms / 1000.0
    next_send = time.perf_counter()
    seq = 0
    deadline = None
    while True:
        now = time.perf_counter()
        if seq < args.count and now >= next_send:
            sent_at[seq] = time.perf_counter_ns()
            s.send(struct.pack("!IQ", seq, sent_at[seq]) + pad)
            seq += 1
            next_send += interval
            if seq == args.count:
                deadline = now + 2.0
        try:
            while True:
                data = s.recv(65535)
                t = time.perf_counter_ns()
                k, t0 = struct.unpack("!IQ", data[:12])
                rtts.append((t - t0) / 1e6)
        except BlockingIOError:
            pass
        if deadline is not None and (time.perf_counter() > deadline or len(rtts) == args.count):
            break
        if args.spin:
            continue  # never sleep: no idle-CPU wake-up latency in the measurement (costs a core)
        # block until a reply comes or the next probe is due
        until = next_send if seq < args.count else deadline
        select.select([s], [], [], max(0.0, until - time.perf_counter()))
    rtts.sort()
    q = lambda p: rtts[min(len(rtts) - 1, int(p * len(rtts)))] if rtts else None
    out = {
        "sent": args.count,
        "received": len(rtts),
        "rtt_ms": {
            "mean": round(statistics.fmean(rtts), 4) if rtts else None,
            "sd": round(statistics.pstdev(rtts), 4) if rtts else None,
            "min": round(rtts[0], 4) if rtts else None,
            "p25": round(q(0.25), 4) if rtts else None,
            "p50": round(q(0.5), 4) if rtts else None,
            "p75": round(q(0.75), 4) if rtts else None,
            "p99": round(q(0.99), 4) if rtts else None,
            "max": round(rtts[-1], 4) if rtts else None,
        },
    }
    print(json.dumps(out))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("echo")
    e.add_argument("--bind", required=True)
    c = sub.add_parser("probe")
    c.add_argument("--target", required=True)
    c.add_argument("--count", type=int, default=2000)
    c.add_argument("--interval-ms", type=float, default=5.0)
    c.add_argument("--size", type=int, default=64)
    c.add_argument("--spin", action="store_true", help="busy-wait instead of sleeping")
    a = p.parse_args()
    echo(a) if a.cmd == "echo" else probe(a)


if __name__ == "__main__":
    main()
