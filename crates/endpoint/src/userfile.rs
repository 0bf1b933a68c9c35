//! Files the user names (`--ca`, certificates and keys, `--race-state`): read only when they
//! are regular files and at most a limit long, so a FIFO, /dev/zero or /dev/urandom is one
//! clear error instead of a hang or an endless read.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Certificates, keys and the race state are a few KB; this is far beyond any real one.
pub const SMALL_FILE_LIMIT: u64 = 1 << 20;

/// The bytes of `path`; `what` names it in errors. `Err(None)` when it does not exist.
pub fn read_regular(path: &Path, what: &str, limit: u64) -> Result<Vec<u8>, Option<String>> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK) // a FIFO without a writer must not block the open
        .open(path);
    let file = match file {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(None),
        Err(e) => return Err(Some(format!("{what} {}: {e}", path.display()))),
    };
    let meta = file.metadata().map_err(|e| Some(format!("{what} {}: {e}", path.display())))?;
    if !meta.is_file() {
        return Err(Some(format!("{what} {}: not a regular file (a directory, device or FIFO)", path.display())));
    }
    if meta.len() > limit {
        return Err(Some(format!(
            "{what} {}: {} bytes, more than the {limit} a {what} may hold",
            path.display(),
            meta.len()
        )));
    }
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes).map_err(|e| Some(format!("{what} {}: {e}", path.display())))?;
    if bytes.len() as u64 > limit {
        return Err(Some(format!("{what} {}: more than the {limit} bytes a {what} may hold", path.display())));
    }
    Ok(bytes)
}

/// As `read_regular`, with a missing file an error too.
pub fn read_existing(path: &Path, what: &str, limit: u64) -> Result<Vec<u8>, String> {
    read_regular(path, what, limit).map_err(|e| e.unwrap_or_else(|| format!("{what} {}: no such file", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_fifos_directories_and_large_files_are_refused() {
        let dir = std::env::temp_dir().join(format!("userfile-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        for p in [Path::new("/dev/zero"), Path::new("/dev/urandom"), fifo.as_path(), dir.as_path()] {
            let e = read_existing(p, "certificate", SMALL_FILE_LIMIT).unwrap_err();
            assert!(e.contains("not a regular file"), "{e}");
        }
        let big = dir.join("big");
        std::fs::write(&big, vec![b'x'; 2048]).unwrap();
        assert!(read_existing(&big, "race state", 1024).unwrap_err().contains("more than"));
        assert_eq!(read_existing(&big, "race state", 4096).unwrap().len(), 2048);
        assert!(matches!(read_regular(&dir.join("none"), "x", 1), Err(None)));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
