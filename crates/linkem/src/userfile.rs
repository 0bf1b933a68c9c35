//! Files the user names (the link config, traces): read only when they are regular files
//! and at most a limit long, so a FIFO, /dev/zero or /dev/urandom is one clear error
//! instead of a hang or an endless read.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// A link config: a few hundred bytes in practice.
pub const CONFIG_LIMIT: u64 = 4 << 20;
/// A mahimahi trace: one line per 1500-byte opportunity; hours at 1 Gbit/s fit.
pub const TRACE_LIMIT: u64 = 256 << 20;

/// The UTF-8 text of `path`; errors say what is wrong, without the path (callers name it).
pub fn read_text(path: &Path, limit: u64) -> Result<String, String> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK) // a FIFO without a writer must not block the open
        .open(path)
        .map_err(|e| format!("cannot read: {e}"))?;
    let meta = file.metadata().map_err(|e| format!("cannot read: {e}"))?;
    if !meta.is_file() {
        return Err("not a regular file (a directory, device or FIFO)".into());
    }
    if meta.len() > limit {
        return Err(format!("{} bytes, more than the {limit} allowed", meta.len()));
    }
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes).map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() as u64 > limit {
        return Err(format!("more than the {limit} bytes allowed"));
    }
    String::from_utf8(bytes).map_err(|e| format!("not UTF-8 text (at byte {})", e.utf8_error().valid_up_to()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_fifos_and_large_files_are_refused() {
        let dir = std::env::temp_dir().join(format!("linkem-userfile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        for p in [Path::new("/dev/zero"), Path::new("/dev/urandom"), fifo.as_path(), dir.as_path()] {
            assert!(read_text(p, CONFIG_LIMIT).unwrap_err().contains("not a regular file"));
        }
        let f = dir.join("f");
        std::fs::write(&f, b"12\n\xff\n").unwrap();
        assert!(read_text(&f, CONFIG_LIMIT).unwrap_err().contains("not UTF-8"));
        assert!(read_text(&f, 2).unwrap_err().contains("more than"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
