//! What server and client share: msquic's registration, its settings (flow-control
//! limits, congestion control) and the one ALPN offered.

use h3_msquic_async::msquic;

// the windows of our endpoint and the other adapters (6 MiB per stream, 15 MiB per
// connection): msquic takes a stream window only as a power of two, so 8 MiB
const STREAM_WINDOW: u32 = 8 * 1024 * 1024;
const CONN_WINDOW: u32 = 15 * 1024 * 1024;
const IDLE_TIMEOUT_MS: u64 = 30_000;
const MAX_STREAMS_BIDI: u16 = 100;
// HTTP/3's control and QPACK streams, plus room (msquic's default allows the peer none)
const MAX_STREAMS_UNI: u16 = 16;

pub const ALPN: &str = "h3";

// the flags that take no value: present or not (`--chacha20`, fetch.rs; `--retry`, serve.rs)
pub const SWITCHES: &[&str] = &["chacha20", "retry"];

pub use longlook_h3_harness::Flags;

/// msquic's congestion control by our name (stacks/congestion.py): its two algorithms.
pub fn congestion_control(cc: &str) -> Result<u16, String> {
    match cc {
        "cubic" => Ok(msquic::ffi::QUIC_CONGESTION_CONTROL_ALGORITHM_QUIC_CONGESTION_CONTROL_ALGORITHM_CUBIC as u16),
        "bbr" => Ok(msquic::ffi::QUIC_CONGESTION_CONTROL_ALGORITHM_QUIC_CONGESTION_CONTROL_ALGORITHM_BBR as u16),
        other => Err(format!("unknown --cc {other} (cubic, bbr)")),
    }
}

/// The settings both sides use; everything not named here is msquic's default (ECN off,
/// pacing on, HyStart off, key update after msquic's bytes-per-key limit).
pub fn settings(cc: &str) -> Result<msquic::Settings, String> {
    Ok(msquic::Settings::new()
        .set_CongestionControlAlgorithm(congestion_control(cc)?)
        .set_IdleTimeoutMs(IDLE_TIMEOUT_MS)
        .set_PeerBidiStreamCount(MAX_STREAMS_BIDI)
        .set_PeerUnidiStreamCount(MAX_STREAMS_UNI)
        .set_StreamRecvWindowDefault(STREAM_WINDOW)
        .set_ConnFlowControlWindow(CONN_WINDOW))
}

/// The process's one registration (msquic's execution context), never closed (main.rs).
pub fn registration() -> Result<&'static msquic::Registration, String> {
    let config = msquic::RegistrationConfig::new().set_app_name("longlook-msquic".to_string());
    let reg = msquic::Registration::new(&config).map_err(|e| format!("msquic registration: {e:?}"))?;
    Ok(Box::leak(Box::new(reg)))
}
