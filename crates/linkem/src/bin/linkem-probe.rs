//! linkem-probe: measures an emulated path end to end (rate, RTT, loss, reordering).
//! Run `serve` on one side and a client subcommand on the other; see `--help`.

#[path = "../probe/mod.rs"]
mod probe;

use probe::args::Args;
use probe::client;
use std::net::SocketAddr;
use std::time::Duration;

const USAGE: &str = "\
linkem-probe: measure an emulated path end to end

  linkem-probe serve --bind ADDR [--duration-s N]
      UDP echo (RTT probes, load) + UDP sink (rate probes) + TCP sink, all on ADDR's port.
      Prints `ready` once listening.
  linkem-probe rtt --target ADDR [--count 2000] [--interval-ms 5] [--size 64]
                   [--load-mbit X] [--wait-ms 2000] [--samples]
      Small timestamped UDP probes, echoed. --size is the UDP payload (IP size = size + 28).
      --load-mbit: paced 1200-byte UDP load, echoed, so both directions carry X Mbit/s.
      JSON: sent, received, lost, loss_rate, reordered, duplicates, rtt_ms{n,mean,sd,min,p50,
      p90,p99,max} (+ with --samples: samples_ms, and sent_mono_ms, each probe's send time
      on CLOCK_MONOTONIC, aligned with samples_ms).
  linkem-probe udp --target ADDR --rate-mbit R --duration-s D [--size 1200]
                   [--interval-ms 100] [--drain-ms 1500]
      Paced sequenced datagrams at R Mbit/s of IP bits (size + 28 bytes each). The receiver
      counts them and reports over a TCP control connection on the same port.
      JSON: sent, received, lost, loss_rate, reordered, send_rate_mbit, rate_mbit (delivered,
      IP bits, first..last arrival), intervals [[t_ms, ip_bytes, packets], ...].
  linkem-probe tcp --target ADDR --duration-s D [--interval-ms 100] [--cc NAME]
      Bulk TCP for D seconds; goodput measured at the receiver. --cc: the sender's
      congestion control (TCP_CONGESTION; default: the namespace's).
      JSON: received_bytes, span_s, goodput_mbit (payload bits, accept..last byte), cc,
      intervals [[t_ms, payload_bytes, reads], ...].
  linkem-probe stalls [--period-us 1000] [--threshold-us 300] [--duration-s N] [--stream]
      Machine stall monitor: a pinned SCHED_FIFO 90 thread per CPU wakes every period and
      records wake-ups later than the threshold (the CPU could not run anything: interrupts,
      or the hypervisor not running the vCPU). Prints `ready`, runs until SIGTERM/SIGINT or
      the duration. JSON: cpus, period_ms, threshold_ms, start_mono_ms, end_mono_ms, wakeups,
      stalls [[cpu, due_mono_ms, late_ms], ...] (CLOCK_MONOTONIC).
      --stream: while running, also print each stall as it is recorded (polled every 10 ms,
      flushed), one line {\"stall\": {\"cpu\": N, \"due_mono_ms\": X, \"late_ms\": Y}}; the record
      above is still the last line.

Exit 0 with the JSON on stdout; 2 on a usage error; 1 when the measurement failed.
";

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = argv.first().cloned() else {
        eprint!("{USAGE}");
        std::process::exit(2);
    };
    if cmd == "--help" || cmd == "-h" || cmd == "help" {
        print!("{USAGE}");
        return;
    }
    match run(&cmd, &argv[1..]) {
        Ok(Some(json)) => println!("{json}"),
        Ok(None) => {}
        Err(Failure::Usage(e)) => {
            eprintln!("linkem-probe {cmd}: {e}\n\n{USAGE}");
            std::process::exit(2);
        }
        Err(Failure::Run(e)) => {
            eprintln!("linkem-probe {cmd}: {e}");
            std::process::exit(1);
        }
    }
}

enum Failure {
    Usage(String),
    Run(String),
}

fn run(cmd: &str, rest: &[String]) -> Result<Option<String>, Failure> {
    use Failure::{Run, Usage};
    let a = Args::parse(rest, &["samples", "stream"]).map_err(Usage)?;
    let ms = |k: &str, d: u64| a.get::<u64>(k, Some(d)).map(Duration::from_millis).map_err(Usage);
    let secs = |k: &str| {
        a.get::<f64>(k, None)
            .and_then(|v| {
                Duration::try_from_secs_f64(v).map_err(|_| format!("--{k}: {v} is not a duration in seconds"))
            })
            .map_err(Usage)
    };
    // a paced stream needs a rate above 0: a pacer at 0 Mbit/s would wait forever between packets
    let rate = |k: &str| {
        a.get::<f64>(k, None)
            .and_then(|v| if v.is_finite() && v > 0.0 { Ok(v) } else { Err(format!("--{k} must be above 0, got {v}")) })
            .map_err(Usage)
    };
    let target = || a.get::<SocketAddr>("target", None).map_err(Usage);
    match cmd {
        "serve" => {
            a.only(&["bind", "duration-s"]).map_err(Usage)?;
            let bind = a.get::<SocketAddr>("bind", Some("0.0.0.0:7000".parse().unwrap())).map_err(Usage)?;
            let dur = a.get::<f64>("duration-s", Some(0.0)).map_err(Usage)?;
            probe::serve::run(bind, (dur > 0.0).then(|| Duration::from_secs_f64(dur))).map_err(Run)?;
            Ok(None)
        }
        "rtt" => {
            a.only(&["target", "count", "interval-ms", "size", "load-mbit", "wait-ms", "samples"]).map_err(Usage)?;
            let interval = a.get::<f64>("interval-ms", Some(5.0)).map_err(Usage)?;
            client::rtt(client::RttOptions {
                target: target()?,
                count: a.get("count", Some(2000)).map_err(Usage)?,
                interval: Duration::from_secs_f64(interval / 1e3),
                size: a.get("size", Some(64)).map_err(Usage)?,
                load_mbit: a.get("load-mbit", Some(0.0)).map_err(Usage)?,
                wait: ms("wait-ms", 2000)?,
                samples: a.flag("samples"),
            })
            .map(Some)
            .map_err(Run)
        }
        "udp" => {
            a.only(&["target", "rate-mbit", "duration-s", "size", "interval-ms", "drain-ms"]).map_err(Usage)?;
            client::udp(client::UdpOptions {
                target: target()?,
                rate_mbit: rate("rate-mbit")?,
                duration: secs("duration-s")?,
                size: a.get("size", Some(1200)).map_err(Usage)?,
                interval_ms: a.get("interval-ms", Some(100)).map_err(Usage)?,
                drain: ms("drain-ms", 1500)?,
            })
            .map(Some)
            .map_err(Run)
        }
        "tcp" => {
            a.only(&["target", "duration-s", "interval-ms", "cc"]).map_err(Usage)?;
            client::tcp(client::TcpOptions {
                target: target()?,
                duration: secs("duration-s")?,
                interval_ms: a.get("interval-ms", Some(100)).map_err(Usage)?,
                cc: a.get::<String>("cc", None).ok(),
            })
            .map(Some)
            .map_err(Run)
        }
        "stalls" => {
            a.only(&["period-us", "threshold-us", "duration-s", "stream"]).map_err(Usage)?;
            let us = |k: &str, d: u64| a.get::<u64>(k, Some(d)).map(Duration::from_micros).map_err(Usage);
            let dur = a.get::<f64>("duration-s", Some(0.0)).map_err(Usage)?;
            probe::stalls::run(probe::stalls::StallOptions {
                period: us("period-us", 1000)?,
                threshold: us("threshold-us", 300)?,
                duration: (dur > 0.0).then(|| Duration::from_secs_f64(dur)),
                stream: a.flag("stream"),
            })
            .map(Some)
            .map_err(Run)
        }
        other => Err(Usage(format!("unknown subcommand '{other}'"))),
    }
}
