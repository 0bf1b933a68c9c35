//! `linkem-probe serve`: one UDP socket (echo for RTT probes and load, sink for rate probes)
//! and one TCP listener (bulk sink, and the control channel of UDP rate probes), same port.

use super::wire::{self, UDP_IP_OVERHEAD};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the receiver saw of one stream, counted per interval from its first byte.
pub struct Received {
    interval: Duration,
    first: Option<Instant>,
    last: Option<Instant>,
    pub packets: u64,
    pub bytes_ip: u64,
    pub bytes_payload: u64,
    pub reordered: u64,
    pub duplicates: u64,
    max_seq: Option<u64>,
    seen: Vec<u64>,           // bitmap of sequence numbers, for duplicates
    buckets: Vec<(u64, u64)>, // (bytes, packets) per interval
}

impl Received {
    pub fn new(interval_ms: u64) -> Self {
        Received {
            interval: Duration::from_millis(interval_ms.max(1)),
            first: None,
            last: None,
            packets: 0,
            bytes_ip: 0,
            bytes_payload: 0,
            reordered: 0,
            duplicates: 0,
            max_seq: None,
            seen: Vec::new(),
            buckets: Vec::new(),
        }
    }

    /// Count intervals from `t` rather than from the first byte (TCP: the connection's
    /// accept, so bytes held back behind a lost first segment are not counted at time zero).
    pub fn start_at(&mut self, t: Instant) {
        self.first = Some(t);
        self.last = Some(t);
    }

    pub fn add(&mut self, now: Instant, payload: usize, ip_bytes: usize, seq: Option<u64>) {
        if let Some(seq) = seq {
            let (word, bit) = ((seq / 64) as usize, seq % 64);
            if word >= self.seen.len() {
                self.seen.resize(word + 1, 0);
            }
            if self.seen[word] & (1 << bit) != 0 {
                self.duplicates += 1;
                return;
            }
            self.seen[word] |= 1 << bit;
            match self.max_seq {
                Some(m) if seq < m => self.reordered += 1,
                _ => self.max_seq = Some(seq),
            }
        }
        let first = *self.first.get_or_insert(now);
        self.last = Some(now);
        let idx = ((now - first).as_nanos() / self.interval.as_nanos()) as usize;
        if idx >= self.buckets.len() {
            self.buckets.resize(idx + 1, (0, 0));
        }
        self.buckets[idx].0 += ip_bytes as u64;
        self.buckets[idx].1 += 1;
        self.packets += 1;
        self.bytes_ip += ip_bytes as u64;
        self.bytes_payload += payload as u64;
    }

    /// The report sent back to the client (see wire.rs).
    pub fn report(&self) -> String {
        let span = match (self.first, self.last) {
            (Some(f), Some(l)) => (l - f).as_secs_f64(),
            _ => 0.0,
        };
        let mut out = format!(
            "packets {}\nbytes_ip {}\nbytes_payload {}\nreordered {}\nduplicates {}\nspan_s {}\ninterval_ms {}\n",
            self.packets,
            self.bytes_ip,
            self.bytes_payload,
            self.reordered,
            self.duplicates,
            span,
            self.interval.as_millis()
        );
        for (i, (bytes, packets)) in self.buckets.iter().enumerate() {
            out.push_str(&format!("interval {} {} {}\n", i as u128 * self.interval.as_millis(), bytes, packets));
        }
        out
    }
}

type Sessions = Arc<Mutex<HashMap<u32, Received>>>;

pub fn run(bind: SocketAddr, duration: Option<Duration>) -> Result<(), String> {
    let udp = UdpSocket::bind(bind).map_err(|e| format!("bind udp {bind}: {e}"))?;
    super::sockbuf::enlarge(&udp);
    let tcp = TcpListener::bind(bind).map_err(|e| format!("bind tcp {bind}: {e}"))?;
    let sessions: Sessions = Arc::new(Mutex::new(HashMap::new()));
    {
        let sessions = sessions.clone();
        std::thread::spawn(move || udp_loop(udp, sessions));
    }
    {
        let sessions = sessions.clone();
        std::thread::spawn(move || {
            for stream in tcp.incoming().flatten() {
                let accepted = Instant::now();
                let sessions = sessions.clone();
                std::thread::spawn(move || {
                    if let Err(e) = control(stream, sessions, accepted) {
                        eprintln!("linkem-probe serve: connection: {e}");
                    }
                });
            }
        });
    }
    println!("ready");
    std::io::stdout().flush().ok();
    match duration {
        Some(d) => std::thread::sleep(d),
        None => loop {
            std::thread::park();
        },
    }
    Ok(())
}

fn udp_loop(sock: UdpSocket, sessions: Sessions) {
    let mut buf = vec![0u8; 65536];
    loop {
        let (n, from) = match sock.recv_from(&mut buf) {
            Ok(x) => x,
            Err(_) => continue,
        };
        let now = Instant::now();
        let Some(h) = wire::decode(&buf[..n]) else { continue };
        match h.kind {
            wire::KIND_ECHO | wire::KIND_LOAD => {
                let _ = sock.send_to(&buf[..n], from);
            }
            wire::KIND_DATA => {
                // Datagrams of unknown sessions (control not yet open, or closed) are ignored.
                if let Some(r) = sessions.lock().unwrap().get_mut(&h.session) {
                    r.add(now, n, n + UDP_IP_OVERHEAD, Some(h.seq));
                }
            }
            _ => {}
        }
    }
}

fn control(stream: TcpStream, sessions: Sessions, accepted: Instant) -> Result<(), String> {
    let mut reader = BufReader::with_capacity(256 * 1024, stream.try_clone().map_err(|e| e.to_string())?);
    let mut line = String::new();
    reader.read_line(&mut line).map_err(|e| e.to_string())?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let mut writer = stream;
    match words.as_slice() {
        ["TCP", interval] => {
            let interval: u64 = interval.parse().map_err(|_| "bad interval")?;
            let mut rx = Received::new(interval);
            rx.start_at(accepted);
            let mut buf = vec![0u8; 256 * 1024];
            // Bytes the BufReader already holds beyond the first line count too.
            let pending = reader.buffer().len();
            if pending > 0 {
                rx.add(Instant::now(), pending, pending, None);
                reader.consume(pending);
            }
            loop {
                let n = reader.get_mut().read(&mut buf).map_err(|e| e.to_string())?;
                if n == 0 {
                    break;
                }
                rx.add(Instant::now(), n, n, None);
            }
            writer.write_all(rx.report().as_bytes()).map_err(|e| e.to_string())?;
        }
        ["UDP", session, interval] => {
            let session: u32 = session.parse().map_err(|_| "bad session")?;
            let interval: u64 = interval.parse().map_err(|_| "bad interval")?;
            sessions.lock().unwrap().insert(session, Received::new(interval));
            writer.write_all(b"ok\n").map_err(|e| e.to_string())?;
            let mut end = String::new();
            reader.read_line(&mut end).map_err(|e| e.to_string())?;
            let rx = sessions.lock().unwrap().remove(&session);
            if let Some(rx) = rx {
                writer.write_all(rx.report().as_bytes()).map_err(|e| e.to_string())?;
            }
        }
        _ => return Err(format!("unknown request {line:?}")),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_late_and_duplicate_packets() {
        let mut r = Received::new(100);
        let t = Instant::now();
        for seq in [0u64, 1, 3, 2, 4, 4, 5] {
            r.add(t, 100, 128, Some(seq));
        }
        assert_eq!(r.packets, 6); // the duplicate is not counted
        assert_eq!(r.duplicates, 1);
        assert_eq!(r.reordered, 1); // 2 arrived after 3
        assert_eq!(r.bytes_ip, 6 * 128);
    }

    #[test]
    fn intervals_are_counted_from_the_start() {
        let mut r = Received::new(100);
        let t = Instant::now();
        r.start_at(t);
        r.add(t + Duration::from_millis(50), 10, 10, None);
        r.add(t + Duration::from_millis(250), 20, 20, None);
        let report = r.report();
        assert!(report.contains("interval 0 10 1\n"));
        assert!(report.contains("interval 100 0 0\n"));
        assert!(report.contains("interval 200 20 1\n"));
    }
}
