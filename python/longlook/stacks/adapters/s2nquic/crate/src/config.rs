//! What server and client share: flow-control limits, congestion controllers, the
//! qlog subscriber.

use std::path::PathBuf;
use std::time::Duration;

use s2n_quic::provider::congestion_controller::{Bbr, Cubic};
use s2n_quic::provider::limits::Limits;
use serde_json::json;

use crate::qlog::{LocalParameters, QlogSubscriber};

// the windows of our endpoint, Chromium and the quiche adapter: flow control is not what differs
const STREAM_WINDOW: u64 = 6 * 1024 * 1024;
const CONN_WINDOW: u64 = 15 * 1024 * 1024;
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
const MAX_STREAMS_BIDI: u64 = 100;

// the flags that take no value: present or not (`--chacha20`, fetch.rs; `--retry`, serve.rs)
pub const SWITCHES: &[&str] = &["chacha20", "retry"];

pub use longlook_h3_harness::Flags;

pub fn limits() -> Result<Limits, String> {
    let l = Limits::new()
        .with_data_window(CONN_WINDOW)
        .and_then(|l| l.with_bidirectional_local_data_window(STREAM_WINDOW))
        .and_then(|l| l.with_bidirectional_remote_data_window(STREAM_WINDOW))
        .and_then(|l| l.with_unidirectional_data_window(STREAM_WINDOW))
        .and_then(|l| l.with_max_open_remote_bidirectional_streams(MAX_STREAMS_BIDI))
        .and_then(|l| l.with_max_idle_timeout(IDLE_TIMEOUT))
        .map_err(|e| format!("limits: {e}"))?;
    Ok(l)
}

fn local_parameters() -> LocalParameters {
    LocalParameters(json!({"initial_max_data": CONN_WINDOW,
        "initial_max_stream_data_bidi_local": STREAM_WINDOW,
        "initial_max_stream_data_bidi_remote": STREAM_WINDOW,
        "initial_max_stream_data_uni": STREAM_WINDOW,
        "initial_max_streams_bidi": MAX_STREAMS_BIDI,
        "max_idle_timeout": IDLE_TIMEOUT.as_millis() as u64}))
}

pub fn subscriber(f: &Flags, side: &'static str) -> QlogSubscriber {
    QlogSubscriber {
        dir: f.get("qlog-dir").ok().map(PathBuf::from),
        side,
        cc: f.get_or("cc", "cubic").to_string(),
        local: local_parameters(),
    }
}

pub fn cubic() -> Cubic {
    Cubic::default()
}

pub fn bbr() -> Bbr {
    Bbr::default()
}
