//! Kernel TCP instrumentation: TCP_CONGESTION per socket and TCP_INFO sampling into a qlog
//! file in the QUIC vocabulary (`recovery:congestion_state_updated` with Linux ca_state
//! names, `recovery:metrics_updated`).
//!
//! Transitions are exact when the `tcp:tcp_cong_state_set` tracepoint is read (`--tcp-tracefs`);
//! sampling alone, every few ms, can miss a Disorder/Recovery episode shorter than the interval.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use crate::qlog::{QlogWriter, VantagePoint};

/// `struct tcp_info` from linux/tcp.h, up to the fields we read (the kernel copies
/// min(sizeof, optlen) bytes, so a prefix of a newer layout is fine).
#[repr(C)]
#[derive(Default, Clone, Copy, Debug)]
pub struct TcpInfo {
    pub state: u8,
    pub ca_state: u8,
    pub retransmits: u8,
    pub probes: u8,
    pub backoff: u8,
    pub options: u8,
    pub wscale: u8,
    pub flags: u8,
    pub rto: u32,
    pub ato: u32,
    pub snd_mss: u32,
    pub rcv_mss: u32,
    pub unacked: u32,
    pub sacked: u32,
    pub lost: u32,
    pub retrans: u32,
    pub fackets: u32,
    pub last_data_sent: u32,
    pub last_ack_sent: u32,
    pub last_data_recv: u32,
    pub last_ack_recv: u32,
    pub pmtu: u32,
    pub rcv_ssthresh: u32,
    pub rtt: u32,
    pub rttvar: u32,
    pub snd_ssthresh: u32,
    pub snd_cwnd: u32,
    pub advmss: u32,
    pub reordering: u32,
    pub rcv_rtt: u32,
    pub rcv_space: u32,
    pub total_retrans: u32,
    pub pacing_rate: u64,
    pub max_pacing_rate: u64,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub segs_out: u32,
    pub segs_in: u32,
    pub notsent_bytes: u32,
    pub min_rtt: u32,
    pub data_segs_in: u32,
    pub data_segs_out: u32,
    pub delivery_rate: u64,
    pub busy_time: u64,
    pub rwnd_limited: u64,
    pub sndbuf_limited: u64,
    pub delivered: u32,
    pub delivered_ce: u32,
    pub bytes_sent: u64,
    pub bytes_retrans: u64,
    /// DSACKs received (Linux >= 5.0): each one reports a spurious retransmission.
    pub dsack_dups: u32,
    /// Reordering events seen (Linux >= 5.0).
    pub reord_seen: u32,
    pub rcv_ooopack: u32,
    pub snd_wnd: u32,
}

/// Linux `enum tcp_ca_state` names (the TCP half of our congestion-state vocabulary).
pub fn ca_state_name(s: u8) -> &'static str {
    match s {
        0 => "Open",
        1 => "Disorder",
        2 => "CWR",
        3 => "Recovery",
        4 => "Loss",
        _ => "Unknown",
    }
}

/// The kernel's "no threshold yet" ssthresh (TCP_INFINITE_SSTHRESH).
const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

pub fn tcp_info(fd: RawFd) -> io::Result<TcpInfo> {
    let mut info = TcpInfo::default();
    let mut len = std::mem::size_of::<TcpInfo>() as libc::socklen_t;
    let rc = unsafe {
        libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_INFO, &mut info as *mut _ as *mut libc::c_void, &mut len)
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(info)
}

pub fn available_congestion_controls() -> Vec<String> {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .map(|s| s.split_whitespace().map(String::from).collect())
        .unwrap_or_default()
}

/// Check a TCP congestion control exists in this kernel (loading its module if needed).
pub fn check_congestion_control(name: &str) -> Result<(), String> {
    if available_congestion_controls().iter().any(|a| a == name) {
        return Ok(());
    }
    // Setting it on a scratch socket makes the kernel autoload tcp_<name> when permitted.
    let probe = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    if set_congestion_control(probe.as_raw_fd(), name).is_ok() {
        return Ok(());
    }
    Err(format!(
        "TCP congestion control '{name}' is not available in this kernel (tcp_available_congestion_control: {})",
        available_congestion_controls().join(" ")
    ))
}

pub fn set_congestion_control(fd: RawFd, name: &str) -> io::Result<()> {
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr() as *const libc::c_void,
            name.len() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

pub fn get_congestion_control(fd: RawFd) -> io::Result<String> {
    let mut buf = [0u8; 16];
    let mut len = buf.len() as libc::socklen_t;
    let rc = unsafe {
        libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION, buf.as_mut_ptr() as *mut libc::c_void, &mut len)
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(String::from_utf8_lossy(&buf[..len as usize]).trim_end_matches('\0').to_string())
}

/// What one sample contributes to `recovery:metrics_updated` (bytes and ms, as for QUIC).
#[derive(PartialEq, Clone, Copy, Debug)]
struct Metrics {
    cwnd: u64,
    ssthresh: Option<u64>,
    in_flight: u64,
    srtt_us: u32,
    rttvar_us: u32,
    min_rtt_us: u32,
    retransmits: u8,
    total_retrans: u32,
    delivery_rate: u64,
    bytes_acked: u64,
}

fn metrics_of(i: &TcpInfo) -> Metrics {
    let mss = i.snd_mss as u64;
    // Linux tcp_packets_in_flight(): packets_out - (sacked_out + lost_out) + retrans_out.
    let pkts = (i.unacked as i64 - i.sacked as i64 - i.lost as i64 + i.retrans as i64).max(0) as u64;
    Metrics {
        cwnd: i.snd_cwnd as u64 * mss,
        ssthresh: (i.snd_ssthresh < INFINITE_SSTHRESH).then(|| i.snd_ssthresh as u64 * mss),
        in_flight: pkts * mss,
        srtt_us: i.rtt,
        rttvar_us: i.rttvar,
        min_rtt_us: i.min_rtt,
        retransmits: i.retransmits,
        total_retrans: i.total_retrans,
        delivery_rate: i.delivery_rate,
        bytes_acked: i.bytes_acked,
    }
}

pub struct SamplerConfig {
    pub interval: Duration,
    pub qlog_path: std::path::PathBuf,
    pub title: String,
    pub congestion_control: String,
}

/// Sample TCP_INFO of `fd` (duplicated, so a closed socket's number is never reused under
/// us) until `stop` fires, then take a final sample and flush the file.
/// With `trace`, ca_state transitions come from the tracepoint (exact, trigger
/// `tracepoint`); samples then only give the initial state.
pub fn spawn_sampler(
    fd: RawFd,
    cfg: SamplerConfig,
    mut stop: tokio::sync::oneshot::Receiver<()>,
    mut trace: Option<tokio::sync::mpsc::UnboundedReceiver<crate::tcp_trace::CongStateEvent>>,
) -> io::Result<tokio::task::JoinHandle<()>> {
    let dup = unsafe { libc::dup(fd) };
    if dup < 0 {
        return Err(io::Error::last_os_error());
    }
    let owned = unsafe { OwnedFd::from_raw_fd(dup) };
    let t0 = Instant::now();
    let t0_mono = crate::tcp_trace::mono_now_s();
    let mut q = QlogWriter::create(&cfg.qlog_path, &cfg.title, "TCP", VantagePoint::Server, t0)?;
    q.event(
        t0,
        "longlook:congestion_control",
        &format!(
            "{{\"algorithm\":\"{}\",\"source\":\"{}\",\"interval_ms\":{:.3}}}",
            cfg.congestion_control,
            if trace.is_some() { "TCP_INFO+tracepoint" } else { "TCP_INFO" },
            cfg.interval.as_secs_f64() * 1000.0
        ),
    );
    Ok(tokio::spawn(async move {
        let mut tick = tokio::time::interval(cfg.interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut last_state: Option<u8> = None;
        let mut last_metrics: Option<Metrics> = None;
        let mut samples = 0u64;
        let mut last_info: Option<TcpInfo> = None;
        // the largest window the peer advertised: whether its receive buffer reached its cap
        let mut snd_wnd_max = 0u32;
        loop {
            let done = tokio::select! {
                _ = tick.tick() => false,
                _ = &mut stop => true,
                Some(ev) = async { match trace.as_mut() { Some(rx) => rx.recv().await, None => std::future::pending().await } } => {
                    let old = last_state.map(ca_state_name).unwrap_or("Init");
                    q.event_at_ms((ev.mono_s - t0_mono) * 1000.0, "recovery:congestion_state_updated", &format!(
                        "{{\"old\":\"{}\",\"new\":\"{}\",\"trigger\":\"tracepoint\",\"ca_state\":{}}}",
                        old, ca_state_name(ev.ca_state), ev.ca_state));
                    last_state = Some(ev.ca_state);
                    continue;
                }
            };
            let now = Instant::now();
            if let Ok(info) = tcp_info(owned.as_raw_fd()) {
                samples += 1;
                snd_wnd_max = snd_wnd_max.max(info.snd_wnd);
                last_info = Some(info);
                if last_state.is_none() || (trace.is_none() && last_state != Some(info.ca_state)) {
                    let old = last_state.map(ca_state_name).unwrap_or("Init");
                    q.event(
                        now,
                        "recovery:congestion_state_updated",
                        &format!(
                            "{{\"old\":\"{}\",\"new\":\"{}\",\"trigger\":\"tcp_info_sample\",\"ca_state\":{}}}",
                            old,
                            ca_state_name(info.ca_state),
                            info.ca_state
                        ),
                    );
                    last_state = Some(info.ca_state);
                }
                let m = metrics_of(&info);
                if last_metrics != Some(m) {
                    q.event(now, "recovery:metrics_updated", &format!(
                        "{{\"congestion_window\":{},\"ssthresh\":{},\"bytes_in_flight\":{},\"smoothed_rtt\":{:.3},\"latest_rtt\":{:.3},\"rtt_variance\":{:.3},\"min_rtt\":{:.3},\"retransmits\":{},\"total_retrans\":{},\"delivery_rate\":{},\"bytes_acked\":{},\"ca_state\":\"{}\"}}",
                        m.cwnd, crate::qlog::opt_num(m.ssthresh), m.in_flight,
                        m.srtt_us as f64 / 1000.0,
                        // TCP_INFO has no latest-RTT sample; tcpi_rtt (the smoothed RTT) stands in.
                        m.srtt_us as f64 / 1000.0,
                        m.rttvar_us as f64 / 1000.0, m.min_rtt_us as f64 / 1000.0,
                        m.retransmits, m.total_retrans, m.delivery_rate, m.bytes_acked, ca_state_name(info.ca_state)));
                    last_metrics = Some(m);
                }
            }
            if done {
                q.event(now, "longlook:tcp_info_summary", &summary_json(samples, snd_wnd_max, last_info.as_ref()));
                q.flush();
                break;
            }
        }
        drop(owned);
    }))
}

/// tcpi_options: the connection negotiated ECN (include/uapi/linux/tcp.h).
const TCPI_OPT_ECN: u8 = 8;

/// `longlook:tcp_info_summary`: the final sample's loss accounting and ECN. Fields a kernel does not
/// fill (older than 5.0 for dsack_dups / reord_seen) read 0.
fn summary_json(samples: u64, snd_wnd_max: u32, last: Option<&TcpInfo>) -> String {
    match last {
        None => format!("{{\"samples\":{samples}}}"),
        Some(i) => format!(
            "{{\"samples\":{samples},\"total_retrans\":{},\"bytes_retrans\":{},\"dsack_dups\":{},\"reord_seen\":{},\"reordering\":{},\"data_segs_out\":{},\"segs_out\":{},\"bytes_sent\":{},\"delivered\":{},\"mss\":{},\"busy_time_us\":{},\"rwnd_limited_us\":{},\"sndbuf_limited_us\":{},\"ecn\":{},\"delivered_ce\":{},\"snd_wnd_max\":{}}}",
            i.total_retrans, i.bytes_retrans, i.dsack_dups, i.reord_seen, i.reordering,
            i.data_segs_out, i.segs_out, i.bytes_sent, i.delivered, i.snd_mss,
            // the kernel's chrono (Linux >= 4.9): time sending, and limited by the peer's
            // window or this socket's send buffer; the audit reads a host buffer cap from them
            i.busy_time, i.rwnd_limited, i.sndbuf_limited,
            // whether the handshake negotiated ECN, and the packets delivered CE-marked
            i.options & TCPI_OPT_ECN != 0, i.delivered_ce,
            // the peer's largest advertised window over the samples (tcpi_snd_wnd, Linux >= 5.4)
            snd_wnd_max),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_tcp_info_of_a_loopback_connection() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let info = tcp_info(c.as_raw_fd()).unwrap();
        assert_eq!(info.state, 1, "TCP_ESTABLISHED");
        assert_eq!(ca_state_name(info.ca_state), "Open");
        assert!(info.snd_cwnd > 0 && info.snd_mss > 0);
        assert!(get_congestion_control(c.as_raw_fd()).is_ok());
        let summary: serde_json::Value = serde_json::from_str(&summary_json(1, info.snd_wnd, Some(&info))).unwrap();
        assert_eq!(summary["dsack_dups"], 0);
        assert!(summary["mss"].as_u64().unwrap() > 0);
        // a fresh loopback connection: no ECN asked (the host's default), the peer's window known
        assert_eq!(summary["ecn"], false);
        assert!(summary["snd_wnd_max"].as_u64().unwrap() > 0);
    }

    #[test]
    fn unknown_congestion_control_is_an_error() {
        assert!(check_congestion_control("no-such-cc").unwrap_err().contains("not available"));
    }
}
