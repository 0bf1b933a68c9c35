//! Exact TCP congestion-state transitions from the `tcp:tcp_cong_state_set` tracepoint.
//!
//! A private tracefs instance (`<tracefs>/instances/ll-endpoint-<pid>`) with the monotonic
//! trace clock is read by one thread; each event is routed to the sampler of the connection
//! it belongs to (local port, peer address, peer port). The instance is removed on drop.
//! Tracing is host-wide: a namespace's events are seen too, the 4-tuple keeps them apart.

use std::collections::HashMap;
use std::io::Read;
use std::net::{IpAddr, SocketAddr};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;

/// One transition: CLOCK_MONOTONIC seconds and the new `ca_state`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CongStateEvent {
    pub mono_s: f64,
    pub ca_state: u8,
}

type Key = (u16, SocketAddr);
type Routes = Arc<Mutex<HashMap<Key, mpsc::UnboundedSender<CongStateEvent>>>>;

pub struct CongStateTracer {
    instance: PathBuf,
    routes: Routes,
    stop: Arc<AtomicBool>,
    reader: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl CongStateTracer {
    pub fn start(tracefs: &Path) -> std::io::Result<CongStateTracer> {
        let instance = tracefs.join("instances").join(format!("ll-endpoint-{}", std::process::id()));
        std::fs::create_dir(&instance)?;
        let setup = || -> std::io::Result<std::fs::File> {
            std::fs::write(instance.join("trace_clock"), "mono")?;
            std::fs::write(instance.join("events/tcp/tcp_cong_state_set/enable"), "1")?;
            std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(instance.join("trace_pipe"))
        };
        let pipe = match setup() {
            Ok(p) => p,
            Err(e) => {
                let _ = std::fs::remove_dir(&instance);
                return Err(e);
            }
        };
        let routes: Routes = Arc::new(Mutex::new(HashMap::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let reader = {
            let (routes, stop) = (routes.clone(), stop.clone());
            std::thread::Builder::new().name("tcp-tracepoint".into()).spawn(move || read_loop(pipe, routes, stop))?
        };
        Ok(CongStateTracer { instance, routes, stop, reader: Mutex::new(Some(reader)) })
    }

    /// Events of the connection from `peer` to our `local_port`.
    pub fn subscribe(&self, local_port: u16, peer: SocketAddr) -> mpsc::UnboundedReceiver<CongStateEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.routes.lock().unwrap().insert((local_port, canonical(peer)), tx);
        rx
    }

    pub fn unsubscribe(&self, local_port: u16, peer: SocketAddr) {
        self.routes.lock().unwrap().remove(&(local_port, canonical(peer)));
    }
}

impl CongStateTracer {
    /// Stop reading and remove the tracefs instance (idempotent).
    pub fn shutdown(&self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(r) = self.reader.lock().unwrap().take() {
            let _ = r.join();
            let _ = std::fs::write(self.instance.join("events/tcp/tcp_cong_state_set/enable"), "0");
            let _ = std::fs::remove_dir(&self.instance);
        }
    }
}

impl Drop for CongStateTracer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn canonical(a: SocketAddr) -> SocketAddr {
    match a.ip() {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(IpAddr::V4(v4), a.port()),
            None => a,
        },
        _ => a,
    }
}

fn read_loop(mut pipe: std::fs::File, routes: Routes, stop: Arc<AtomicBool>) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut pending = String::new();
    while !stop.load(Ordering::Relaxed) {
        match pipe.read(&mut buf) {
            Ok(0) => std::thread::sleep(Duration::from_millis(2)),
            Ok(n) => {
                pending.push_str(&String::from_utf8_lossy(&buf[..n]));
                while let Some(i) = pending.find('\n') {
                    let line: String = pending.drain(..=i).collect();
                    if let Some((key, ev)) = parse_line(&line) {
                        if let Some(tx) = routes.lock().unwrap().get(&key) {
                            let _ = tx.send(ev);
                        }
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(2)),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                eprintln!("endpoint: tracefs read failed, exact TCP states off: {e}");
                return;
            }
        }
    }
}

/// Parse one trace_pipe line:
/// `<idle>-0 [001] ..s1. 1234.567890: tcp_cong_state_set: family=AF_INET sport=4433 dport=51000
///  saddr=198.18.2.2 daddr=198.18.1.2 saddrv6=... daddrv6=... cong_state=3`
pub fn parse_line(line: &str) -> Option<(Key, CongStateEvent)> {
    let (head, fields) = line.split_once(" tcp_cong_state_set: ")?;
    let mono_s: f64 = head.trim_end().strip_suffix(':')?.rsplit(' ').next()?.parse().ok()?;
    let mut kv = HashMap::new();
    for f in fields.split_whitespace() {
        if let Some((k, v)) = f.split_once('=') {
            kv.insert(k, v);
        }
    }
    let sport: u16 = kv.get("sport")?.parse().ok()?;
    let dport: u16 = kv.get("dport")?.parse().ok()?;
    let daddr: IpAddr = match *kv.get("family")? {
        "AF_INET" => kv.get("daddr")?.parse().ok()?,
        _ => kv.get("daddrv6")?.parse().ok()?,
    };
    let ca_state: u8 = kv.get("cong_state")?.parse().ok()?;
    Some(((sport, canonical(SocketAddr::new(daddr, dport))), CongStateEvent { mono_s, ca_state }))
}

/// CLOCK_MONOTONIC now, in seconds (the trace clock `mono`, and what `Instant` uses on Linux).
pub fn mono_now_s() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_trace_pipe_lines() {
        let line = "          <idle>-0       [001] ..s1.  1234.567890: tcp_cong_state_set: family=AF_INET sport=4433 dport=51000 saddr=198.18.2.2 daddr=198.18.1.2 saddrv6=::ffff:198.18.2.2 daddrv6=::ffff:198.18.1.2 cong_state=3\n";
        let ((port, peer), ev) = parse_line(line).unwrap();
        assert_eq!(port, 4433);
        assert_eq!(peer, "198.18.1.2:51000".parse().unwrap());
        assert_eq!(ev, CongStateEvent { mono_s: 1234.56789, ca_state: 3 });
        assert!(parse_line("garbage").is_none());
    }
}
