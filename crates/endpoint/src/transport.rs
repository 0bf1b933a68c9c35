//! What server, client and proxy configure alike: the flow-control flags (QUIC and HTTP/2
//! receive windows, concurrent streams) and the QUIC transport parameters built from them.

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
            libc::setsockopt(sock.as_raw_fd(), libc::SOL_SOCKET, opt, &val as *const _ as *const libc::c_void,
                             std::mem::size_of::<libc::c_int>() as libc::socklen_t)
        };
        if set(force) != 0 && set(plain) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    let s2 = socket2::SockRef::from(sock);
    eprintln!("udp buffers: asked {bytes}, granted recv {} send {}", s2.recv_buffer_size()?, s2.send_buffer_size()?);
    Ok(())
}

/// Transport parameters shared by server and client: receive windows from the flags, and
/// a send window as large as the connection window so the sender is never the limit.
pub fn transport_config(flow: &FlowControl) -> quinn::TransportConfig {
    let mut t = quinn::TransportConfig::default();
    t.stream_receive_window(quinn::VarInt::from_u64(flow.stream_window).unwrap_or(quinn::VarInt::MAX));
    t.receive_window(quinn::VarInt::from_u64(flow.conn_window).unwrap_or(quinn::VarInt::MAX));
    t.send_window(flow.conn_window);
    t.max_concurrent_bidi_streams(quinn::VarInt::from_u32(flow.max_streams));
    t.max_idle_timeout(Some(quinn::IdleTimeout::try_from(Duration::from_secs(30)).unwrap()));
    t
}
