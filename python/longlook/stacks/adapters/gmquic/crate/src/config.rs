//! What server and client share: transport parameters, the congestion control check,
//! the qlog writer.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use dquic::prelude::handy::{LegacySeqLogger, NoopLogger};
use dquic::qbase::param::{ClientParameters, ParameterId, ServerParameters};
use dquic::qevent::telemetry::handy::TelemetryStorage;
use dquic::qevent::telemetry::QLog;
use tokio::io::AsyncWrite;

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

pub use longlook_h3_harness::Flags;

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
            Arc::new(LegacySeqLogger::new(QlogDir(dir)))
        }
        _ => Arc::new(NoopLogger),
    }
}

// qlog files whose writer has not finished. The writer is a task holding the file behind a
// buffer; it finishes (flushes and closes) only when the connection's last handle on the trace
// is dropped, which can come after the connection reports itself terminated. A process that
// exits before then leaves a torn file, so the client waits for this count to reach zero.
static OPEN_QLOG_FILES: AtomicUsize = AtomicUsize::new(0);

/// Wait until every qlog file begun has been written out, or `limit` has passed; true when
/// all were.
pub async fn qlog_written(limit: Duration) -> bool {
    let t0 = Instant::now();
    while OPEN_QLOG_FILES.load(Ordering::SeqCst) > 0 {
        if t0.elapsed() >= limit {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    true
}

/// A directory of qlog files, as qevent's own storage for a path, that counts its open files.
struct QlogDir(PathBuf);

/// One qlog file counted open, from its trace's beginning until this drops: when the file's
/// writer drops it, or when the opening is abandoned first.
struct OpenCount;

impl OpenCount {
    fn begin() -> Self {
        OPEN_QLOG_FILES.fetch_add(1, Ordering::SeqCst);
        OpenCount
    }
}

impl Drop for OpenCount {
    fn drop(&mut self) {
        OPEN_QLOG_FILES.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The file, with its count.
struct CountedFile {
    file: tokio::fs::File,
    _open: OpenCount,
}

impl TelemetryStorage for QlogDir {
    fn join(&self, file_name: &str) -> impl Future<Output = impl AsyncWrite + Send + Unpin + 'static> + Send + 'static {
        // counted when the trace begins, not when the file opens: the writer task opens it later
        let open = OpenCount::begin();
        let path = std::path::Path::join(&self.0, file_name);
        async move {
            let file = tokio::fs::OpenOptions::new()
                .create(true)
                .truncate(true)
                .write(true)
                .open(&path)
                .await
                .unwrap_or_else(|e| panic!("cannot create the qlog file {}: {e}", path.display()));
            CountedFile { file, _open: open }
        }
    }
}

impl AsyncWrite for CountedFile {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.file).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.file).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.file).poll_shutdown(cx)
    }
}
