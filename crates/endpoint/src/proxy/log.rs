//! proxy.jsonl: one JSON line per proxied connection, appended when it ends.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};

#[derive(Clone)]
pub struct ProxyLog(Arc<Mutex<File>>);

impl ProxyLog {
    pub fn open(path: &Path) -> Result<Self> {
        let f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("opening {}", path.display()))?;
        Ok(ProxyLog(Arc::new(Mutex::new(f))))
    }

    pub fn write(&self, line: serde_json::Value) {
        let mut f = self.0.lock().unwrap();
        let _ = writeln!(f, "{line}");
        let _ = f.flush();
    }
}

pub fn ms(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}
