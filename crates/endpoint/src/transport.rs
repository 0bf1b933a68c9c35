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
