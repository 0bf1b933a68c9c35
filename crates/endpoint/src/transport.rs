//! What server, client and proxy configure alike: the flow-control flags (QUIC and HTTP/2
//! receive windows, concurrent streams, the ECN switch) and the QUIC transport parameters
//! built from them.

use std::time::Duration;

use clap::Args;

#[derive(Args, Debug, Clone)]
pub struct FlowControl {
    /// Per-stream receive window in bytes (QUIC stream / HTTP/2 stream). Default 6 MiB as
    /// Chromium; 100 Mbit/s x 200 ms = 2.5 MB fits.
    #[arg(long, default_value_t = 6 * 1024 * 1024)]
    pub stream_window: u64,
    /// Per-connection receive window in bytes (QUIC connection / HTTP/2 connection).
    /// Default 15 MiB as Chromium.
    #[arg(long, default_value_t = 15 * 1024 * 1024)]
    pub conn_window: u64,
    /// Maximum concurrent request streams a peer may open (QUIC bidi streams / HTTP/2
    /// SETTINGS_MAX_CONCURRENT_STREAMS), the same for both protocols.
    #[arg(long, default_value_t = 100)]
    pub max_streams: u32,
    /// UDP socket receive and send buffer in bytes (0 = the kernel's default, ~208 KB): at a
    /// gigabit the default holds under 2 ms of datagrams, so a reader descheduled longer drops
    /// what the path delivered. Asked with SO_RCVBUFFORCE (root), since net.core.rmem_max is
    /// read-only inside a network namespace; the size granted is logged.
    #[arg(long, default_value_t = 0)]
    pub udp_buffer: usize,
    /// Send every QUIC datagram as not-ECT (quinn marks ECT(0) by default; `ecn_switch`).
    #[arg(long)]
    pub no_ecn: bool,
}

/// A UDP socket bound to `addr` with the flow's buffer sizes (FlowControl::udp_buffer).
pub fn udp_socket(addr: std::net::SocketAddr, flow: &FlowControl) -> std::io::Result<std::net::UdpSocket> {
    let sock = std::net::UdpSocket::bind(addr)?;
    if flow.udp_buffer > 0 {
        size_udp_buffers(&sock, flow.udp_buffer)?;
    }
    Ok(sock)
}

fn size_udp_buffers(sock: &std::net::UdpSocket, bytes: usize) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let val = bytes.min(i32::MAX as usize / 2) as libc::c_int; // the kernel doubles it
    for (force, plain) in [(libc::SO_RCVBUFFORCE, libc::SO_RCVBUF), (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF)] {
        // FORCE passes rmem_max/wmem_max with CAP_NET_ADMIN; without it, the capped request
        let set = |opt| unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                &val as *const _ as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if set(force) != 0 && set(plain) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    let s2 = socket2::SockRef::from(sock);
    eprintln!("udp buffers: asked {bytes}, granted recv {} send {}", s2.recv_buffer_size()?, s2.send_buffer_size()?);
    Ok(())
}

const IDLE_TIMEOUT_S: u64 = 30;

/// Transport parameters shared by server and client: receive windows from the flags, and
/// a send window as large as the connection window so the sender is never the limit.
pub fn transport_config(flow: &FlowControl) -> quinn::TransportConfig {
    let mut t = quinn::TransportConfig::default();
    t.stream_receive_window(quinn::VarInt::from_u64(flow.stream_window).unwrap_or(quinn::VarInt::MAX));
    t.receive_window(quinn::VarInt::from_u64(flow.conn_window).unwrap_or(quinn::VarInt::MAX));
    t.send_window(flow.conn_window);
    t.max_concurrent_bidi_streams(quinn::VarInt::from_u32(flow.max_streams));
    t.max_idle_timeout(Some(quinn::IdleTimeout::try_from(Duration::from_secs(IDLE_TIMEOUT_S)).unwrap()));
    t
}

/// quinn 0.11 sends these two at the RFC 9000 §18.2 defaults and has no setting for them
/// (TransportParameters' defaults); logged beside the configured ones for the fingerprint.
const ACK_DELAY_EXPONENT: u64 = 3;
const MAX_ACK_DELAY_MS: u64 = 25;

/// The `transport:parameters_set` event (owner "local") for the transport parameters that
/// `transport_config(flow)` makes quinn announce: quinn copies the receive windows into
/// initial_max_data and every initial_max_stream_data_*, and the endpoint config's
/// max_udp_payload_size. quinn exposes no peer parameters: "remote" is the peer's own log.
pub fn local_parameters_json(flow: &FlowControl, endpoint: &quinn::EndpointConfig) -> String {
    format!(
        "{{\"owner\":\"local\",\"initial_max_data\":{c},\"initial_max_stream_data_bidi_local\":{s},\
         \"initial_max_stream_data_bidi_remote\":{s},\"initial_max_stream_data_uni\":{s},\
         \"initial_max_streams_bidi\":{b},\"max_idle_timeout\":{i},\"max_udp_payload_size\":{u},\
         \"ack_delay_exponent\":{ACK_DELAY_EXPONENT},\"max_ack_delay\":{MAX_ACK_DELAY_MS}}}",
        c = flow.conn_window.min(quinn::VarInt::MAX.into_inner()),
        s = flow.stream_window.min(quinn::VarInt::MAX.into_inner()),
        b = flow.max_streams,
        i = IDLE_TIMEOUT_S * 1000,
        u = endpoint.get_max_udp_payload_size(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_parameters_are_the_configured_windows_as_json() {
        let flow = FlowControl { stream_window: 1000, conn_window: 5000, max_streams: 7, udp_buffer: 0, no_ecn: false };
        let v: serde_json::Value =
            serde_json::from_str(&local_parameters_json(&flow, &quinn::EndpointConfig::default())).unwrap();
        assert_eq!(v["owner"], "local");
        assert_eq!(v["initial_max_data"], 5000);
        assert_eq!(v["initial_max_stream_data_bidi_local"], 1000);
        assert_eq!(v["initial_max_streams_bidi"], 7);
        assert_eq!(v["max_udp_payload_size"], 1472); // quinn's default: 1500 - IP - UDP headers
        assert_eq!(v["max_idle_timeout"], 30000);
    }
}
