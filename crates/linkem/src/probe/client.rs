//! The measuring side: `rtt`, `udp` and `tcp`. Each prints one JSON document on stdout.

use super::json::{self, Obj};
use super::pacing::Pacer;
use super::stats::summarize;
use super::wire::{self, UDP_IP_OVERHEAD};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const LOAD_PAYLOAD: usize = 1200;

fn udp_to(target: SocketAddr) -> Result<UdpSocket, String> {
    let sock = UdpSocket::bind("0.0.0.0:0").map_err(|e| e.to_string())?;
    sock.connect(target).map_err(|e| format!("udp connect {target}: {e}"))?;
    super::sockbuf::enlarge(&sock);
    Ok(sock)
}

fn tcp_to(target: SocketAddr) -> Result<TcpStream, String> {
    TcpStream::connect_timeout(&target, Duration::from_secs(5)).map_err(|e| {
        format!("tcp connect {target}: {e} (is `linkem-probe serve` running there, and linkem forwarding?)")
    })
}

pub struct RttOptions {
    pub target: SocketAddr,
    pub count: u64,
    pub interval: Duration,
    pub size: usize,
    pub load_mbit: f64,
    pub wait: Duration,
    pub samples: bool,
}

/// Paced load, echoed by the server so both directions carry it; runs until `stop`.
fn start_load(target: SocketAddr, mbit: f64, stop: Arc<AtomicBool>) -> Result<std::thread::JoinHandle<u64>, String> {
    let sock = udp_to(target)?;
    Ok(std::thread::spawn(move || {
        let mut buf = vec![0u8; LOAD_PAYLOAD];
        let mut pacer = Pacer::for_rate(mbit, LOAD_PAYLOAD + UDP_IP_OVERHEAD);
        let mut seq = 0u64;
        while !stop.load(Ordering::Relaxed) {
            pacer.wait();
            wire::encode(&mut buf, wire::KIND_LOAD, 0, seq, 0);
            let _ = sock.send(&buf);
            seq += 1;
        }
        seq
    }))
}

pub fn rtt(o: RttOptions) -> Result<String, String> {
    let size = o.size.max(wire::HEADER);
    let sock = udp_to(o.target)?;
    sock.set_read_timeout(Some(Duration::from_millis(20))).map_err(|e| e.to_string())?;
    let stop_load = Arc::new(AtomicBool::new(false));
    let load = if o.load_mbit > 0.0 {
        let h = start_load(o.target, o.load_mbit, stop_load.clone())?;
        std::thread::sleep(Duration::from_millis(300)); // let the load reach its steady state
        Some(h)
    } else {
        None
    };

    let epoch = Instant::now();
    let epoch_mono_ns = super::stalls::monotonic_ns();
    let sent = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let sender = {
        let sock = sock.try_clone().map_err(|e| e.to_string())?;
        let (sent, done) = (sent.clone(), done.clone());
        let (count, interval) = (o.count, o.interval);
        std::thread::spawn(move || {
            let mut buf = vec![0u8; size];
            let mut pacer = Pacer::new(interval);
            for seq in 0..count {
                pacer.wait();
                wire::encode(&mut buf, wire::KIND_ECHO, 0, seq, epoch.elapsed().as_nanos() as u64);
                if sock.send(&buf).is_ok() {
                    sent.fetch_add(1, Ordering::Relaxed);
                }
            }
            done.store(true, Ordering::Relaxed);
        })
    };

    // (send time since epoch in ns, RTT in ms) per sequence number
    let mut rtts: Vec<Option<(u64, f64)>> = vec![None; o.count as usize];
    let (mut received, mut reordered, mut duplicates) = (0u64, 0u64, 0u64);
    let mut max_seq: Option<u64> = None;
    let mut buf = vec![0u8; 65536];
    let mut sender_done_at: Option<Instant> = None;
    loop {
        if sender_done_at.is_none() && done.load(Ordering::Relaxed) {
            sender_done_at = Some(Instant::now());
        }
        if let Some(t) = sender_done_at {
            if received >= sent.load(Ordering::Relaxed) || t.elapsed() > o.wait {
                break;
            }
        }
        let n = match sock.recv(&mut buf) {
            Ok(n) => n,
            Err(_) => continue, // timeout, or ICMP refused before the server is up
        };
        let now_ns = epoch.elapsed().as_nanos() as u64;
        let Some(h) = wire::decode(&buf[..n]) else { continue };
        if h.kind != wire::KIND_ECHO || h.seq >= o.count {
            continue;
        }
        let slot = &mut rtts[h.seq as usize];
        if slot.is_some() {
            duplicates += 1;
            continue;
        }
        *slot = Some((h.sent_ns, now_ns.saturating_sub(h.sent_ns) as f64 / 1e6));
        received += 1;
        match max_seq {
            Some(m) if h.seq < m => reordered += 1,
            _ => max_seq = Some(h.seq),
        }
    }
    sender.join().ok();
    stop_load.store(true, Ordering::Relaxed);
    let load_sent = load.map(|h| h.join().unwrap_or(0)).unwrap_or(0);

    let sent = sent.load(Ordering::Relaxed);
    let samples: Vec<f64> = rtts.iter().flatten().map(|s| s.1).collect();
    let lost = sent - received;
    let mut doc = Obj::new()
        .str("kind", "rtt")
        .str("target", &o.target.to_string())
        .int("count", o.count)
        .float("interval_ms", o.interval.as_secs_f64() * 1e3)
        .int("size", size as u64)
        .int("ip_bytes", (size + UDP_IP_OVERHEAD) as u64)
        .float("load_mbit", o.load_mbit)
        .int("load_packets", load_sent)
        .int("sent", sent)
        .int("received", received)
        .int("lost", lost)
        .float("loss_rate", if sent > 0 { lost as f64 / sent as f64 } else { f64::NAN })
        .int("reordered", reordered)
        .int("duplicates", duplicates)
        .summary("rtt_ms", &summarize(&samples));
    if o.samples {
        let list: Vec<String> = samples.iter().map(|x| json::num(*x)).collect();
        doc = doc.raw("samples_ms", format!("[{}]", list.join(", ")));
        let sent: Vec<String> = rtts.iter().flatten().map(|s| json::num((epoch_mono_ns + s.0) as f64 / 1e6)).collect();
        doc = doc.raw("sent_mono_ms", format!("[{}]", sent.join(", ")));
    }
    Ok(doc.build())
}

/// A receiver's report (see wire.rs) as key -> value and the interval rows.
struct Report {
    values: std::collections::HashMap<String, f64>,
    intervals: Vec<(u64, u64, u64)>,
}

fn read_report(stream: &mut TcpStream, timeout: Duration) -> Result<Report, String> {
    stream.set_read_timeout(Some(timeout)).map_err(|e| e.to_string())?;
    let mut text = String::new();
    stream.read_to_string(&mut text).map_err(|e| format!("reading the receiver's report: {e}"))?;
    let mut values = std::collections::HashMap::new();
    let mut intervals = Vec::new();
    for line in text.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.as_slice() {
            ["interval", t, b, p] => {
                intervals.push((t.parse().unwrap_or(0), b.parse().unwrap_or(0), p.parse().unwrap_or(0)))
            }
            [k, v] => {
                if let Ok(v) = v.parse() {
                    values.insert(k.to_string(), v);
                }
            }
            _ => {}
        }
    }
    if !values.contains_key("packets") {
        return Err("the receiver sent no report".into());
    }
    Ok(Report { values, intervals })
}

impl Report {
    fn get(&self, k: &str) -> f64 {
        self.values.get(k).copied().unwrap_or(f64::NAN)
    }
    fn intervals_json(&self) -> String {
        let rows: Vec<String> = self.intervals.iter().map(|(t, b, p)| format!("[{t}, {b}, {p}]")).collect();
        format!("[{}]", rows.join(", "))
    }
}

pub struct UdpOptions {
    pub target: SocketAddr,
    pub rate_mbit: f64,
    pub duration: Duration,
    pub size: usize,
    pub interval_ms: u64,
    pub drain: Duration,
}

pub fn udp(o: UdpOptions) -> Result<String, String> {
    let size = o.size.max(wire::HEADER);
    let session = (std::process::id() as u64
        ^ Instant::now().elapsed().as_nanos() as u64
        ^ std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0))
        as u32;
    let mut control = tcp_to(o.target)?;
    control.write_all(format!("UDP {session} {}\n", o.interval_ms).as_bytes()).map_err(|e| e.to_string())?;
    control.set_read_timeout(Some(Duration::from_secs(10))).map_err(|e| e.to_string())?;
    let mut ok = String::new();
    BufReader::new(control.try_clone().map_err(|e| e.to_string())?).read_line(&mut ok).map_err(|e| e.to_string())?;
    if ok.trim() != "ok" {
        return Err(format!("the receiver refused the UDP session: {ok:?}"));
    }

    let sock = udp_to(o.target)?;
    let mut buf = vec![0u8; size];
    let ip_bytes = size + UDP_IP_OVERHEAD;
    let mut pacer = Pacer::for_rate(o.rate_mbit, ip_bytes);
    let start = Instant::now();
    let (mut sent, mut send_errors) = (0u64, 0u64);
    while start.elapsed() < o.duration {
        pacer.wait();
        wire::encode(&mut buf, wire::KIND_DATA, session, sent, 0);
        match sock.send(&buf) {
            Ok(_) => sent += 1,
            Err(_) => send_errors += 1,
        }
    }
    let send_s = start.elapsed().as_secs_f64();
    std::thread::sleep(o.drain); // what is still queued in the link arrives
    control.write_all(format!("END {sent}\n").as_bytes()).map_err(|e| e.to_string())?;
    let r = read_report(&mut control, Duration::from_secs(10))?;

    let received = r.get("packets") as u64;
    let lost = sent.saturating_sub(received);
    let span = r.get("span_s");
    // Delivered rate over first..last arrival: the first packet's bytes arrived at t=0.
    let rate =
        if received > 1 && span > 0.0 { (r.get("bytes_ip") - ip_bytes as f64) * 8.0 / span / 1e6 } else { f64::NAN };
    Ok(Obj::new()
        .str("kind", "udp")
        .str("target", &o.target.to_string())
        .int("size", size as u64)
        .int("ip_bytes", ip_bytes as u64)
        .float("target_rate_mbit", o.rate_mbit)
        .float("duration_s", send_s)
        .int("sent", sent)
        .int("send_errors", send_errors)
        .float("send_rate_mbit", sent as f64 * ip_bytes as f64 * 8.0 / send_s / 1e6)
        .int("received", received)
        .int("lost", lost)
        .float("loss_rate", if sent > 0 { lost as f64 / sent as f64 } else { f64::NAN })
        .int("reordered", r.get("reordered") as u64)
        .int("duplicates", r.get("duplicates") as u64)
        .int("received_bytes_ip", r.get("bytes_ip") as u64)
        .float("span_s", span)
        .float("rate_mbit", rate)
        .int("interval_ms", o.interval_ms)
        .raw("intervals", r.intervals_json())
        .build())
}

pub struct TcpOptions {
    pub target: SocketAddr,
    pub duration: Duration,
    pub interval_ms: u64,
    /// The sender's congestion control (None: the namespace's default).
    pub cc: Option<String>,
}

pub fn tcp(o: TcpOptions) -> Result<String, String> {
    let mut stream = tcp_to(o.target)?;
    // before the first byte: the whole flow runs it
    if let Some(cc) = &o.cc {
        super::congestion::set(&stream, cc)?;
    }
    let cc = super::congestion::get(&stream)?;
    stream.write_all(format!("TCP {}\n", o.interval_ms).as_bytes()).map_err(|e| e.to_string())?;
    let chunk = vec![0u8; 64 * 1024];
    let start = Instant::now();
    let mut sent = 0u64;
    stream.set_write_timeout(Some(Duration::from_millis(200))).map_err(|e| e.to_string())?;
    while start.elapsed() < o.duration {
        match stream.write(&chunk) {
            Ok(n) => sent += n as u64,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(e) => return Err(format!("tcp send: {e}")),
        }
    }
    stream.shutdown(Shutdown::Write).map_err(|e| e.to_string())?;
    let r = read_report(&mut stream, Duration::from_secs(60))?;
    let bytes = r.get("bytes_payload");
    let span = r.get("span_s");
    Ok(Obj::new()
        .str("kind", "tcp")
        .str("target", &o.target.to_string())
        .float("duration_s", o.duration.as_secs_f64())
        .int("sent_bytes", sent)
        .int("received_bytes", bytes as u64)
        .float("span_s", span)
        .float("goodput_mbit", if span > 0.0 { bytes * 8.0 / span / 1e6 } else { f64::NAN })
        .int("interval_ms", o.interval_ms)
        .str("cc", &cc)
        .raw("intervals", r.intervals_json())
        .build())
}
