//! What server and client share: flags, transport parameters, the congestion control check,
//! the qlog writer.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use dquic::prelude::handy::{LegacySeqLogger, NoopLogger};
use dquic::qbase::param::{ClientParameters, ParameterId, ServerParameters};
use dquic::qevent::telemetry::QLog;

// the windows of our endpoint, Chromium and the other stacks' adapters: flow control is not
// what differs
const STREAM_WINDOW: u32 = 6 * 1024 * 1024;
const CONN_WINDOW: u32 = 15 * 1024 * 1024;
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
const MAX_STREAMS_BIDI: u32 = 100;
const MAX_STREAMS_UNI: u32 = 100; // HTTP/3's control and QPACK streams
const ACTIVE_CID_LIMIT: u32 = 10; // gm-quic's own default (handy::*_parameters)

/// gm-quic's only congestion controller: every path gets `Algorithm::NewReno`
/// (qconnection's path.rs); its BBR is `todo!()` in qcongestion.
pub const CCS: &[&str] = &["newreno"];

pub struct Flags(HashMap<String, String>);

impl Flags {
    pub fn parse(args: &[String]) -> Flags {
        Flags(
            args.chunks(2)
                .filter_map(|kv| Some((kv[0].trim_start_matches("--").to_string(), kv.get(1)?.clone())))
                .collect(),
        )
    }

    pub fn get(&self, name: &str) -> Result<&str, String> {
        self.0.get(name).map(String::as_str).ok_or(format!("--{name} is required"))
    }

    pub fn get_or<'a>(&'a self, name: &str, default: &'a str) -> &'a str {
        self.0.get(name).map(String::as_str).unwrap_or(default)
    }

    pub fn has(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }
}

/// `--cc`, checked: gm-quic has no switch, so only its one controller is accepted.
pub fn check_cc(f: &Flags) -> Result<(), String> {
    let cc = f.get_or("cc", CCS[0]);
    if CCS.contains(&cc) {
        Ok(())
    } else {
        Err(format!("unknown --cc {cc} (gm-quic offers {})", CCS.join(", ")))
    }
}

pub fn client_parameters() -> Result<ClientParameters, String> {
    let mut p = ClientParameters::default();
    for (id, value) in windows() {
        p.set(id, value).map_err(|e| format!("parameter {id:?}: {e}"))?;
    }
    p.set(ParameterId::MaxIdleTimeout, IDLE_TIMEOUT).map_err(|e| e.to_string())?;
    Ok(p)
}

pub fn server_parameters() -> Result<ServerParameters, String> {
    let mut p = ServerParameters::default();
    for (id, value) in windows() {
        p.set(id, value).map_err(|e| format!("parameter {id:?}: {e}"))?;
    }
    p.set(ParameterId::MaxIdleTimeout, IDLE_TIMEOUT).map_err(|e| e.to_string())?;
    Ok(p)
}

fn windows() -> [(ParameterId, u32); 7] {
    [
        (ParameterId::InitialMaxData, CONN_WINDOW),
        (ParameterId::InitialMaxStreamDataBidiLocal, STREAM_WINDOW),
        (ParameterId::InitialMaxStreamDataBidiRemote, STREAM_WINDOW),
        (ParameterId::InitialMaxStreamDataUni, STREAM_WINDOW),
        (ParameterId::InitialMaxStreamsBidi, MAX_STREAMS_BIDI),
        (ParameterId::InitialMaxStreamsUni, MAX_STREAMS_UNI),
        (ParameterId::ActiveConnectionIdLimit, ACTIVE_CID_LIMIT),
    ]
}

/// gm-quic's qlog writer (qevent's `LegacySeqLogger`: one JSON-SEQ file per connection,
/// `<odcid>_<client|server>.sqlog`) into --qlog-dir, else none.
pub fn qlog(f: &Flags) -> Arc<dyn QLog + Send + Sync> {
    match f.get("qlog-dir") {
        Ok(dir) if !dir.is_empty() => {
            let dir = PathBuf::from(dir);
            let _ = std::fs::create_dir_all(&dir);
            Arc::new(LegacySeqLogger::new(dir))
        }
        _ => Arc::new(NoopLogger),
    }
}
