//! The server's side: files under `--root` over one h3 connection, one task per request
//! (`page/<N>x<S>.html`, `obj/<S>/<i>.jpg`, `bulk/<S>`, as `endpoint serve`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

// a body goes out in pieces this large (one DATA frame each; the file is read once)
const CHUNK: usize = 256 * 1024;

/// Serve the requests of one connection until the peer closes it.
pub async fn connection<C>(conn: C, root: Arc<PathBuf>) -> Result<(), String>
where
    C: h3::quic::Connection<Bytes> + Send + 'static,
    C::BidiStream: Send + 'static,
{
    let mut h3 = h3::server::Connection::<C, Bytes>::new(conn).await.map_err(|e| e.to_string())?;
    loop {
        match h3.accept().await {
            Ok(Some(resolver)) => {
                let root = root.clone();
                tokio::spawn(async move {
                    let Ok((req, mut stream)) = resolver.resolve_request().await else { return };
                    let (status, body) = read_file(&root, req.uri().path());
                    let resp = http::Response::builder()
                        .status(status)
                        .header("content-length", body.len())
                        .body(())
                        .expect("response");
                    if stream.send_response(resp).await.is_err() {
                        return;
                    }
                    let mut at = 0;
                    while at < body.len() {
                        let end = (at + CHUNK).min(body.len());
                        if stream.send_data(body.slice(at..end)).await.is_err() {
                            return;
                        }
                        at = end;
                    }
                    let _ = stream.finish().await;
                });
            }
            Ok(None) => return Ok(()),
            Err(e) if e.is_h3_no_error() => return Ok(()),
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// The file at the URL's path under `root` (`index.html` for `/`); 404 for a path that
/// climbs out of it or names nothing.
pub fn read_file(root: &Path, url_path: &str) -> (u16, Bytes) {
    let rel = url_path.trim_start_matches('/');
    let rel = if rel.is_empty() { "index.html" } else { rel };
    if rel.split('/').any(|c| c == ".." || c.is_empty()) {
        return (404, Bytes::from_static(b"not found\n"));
    }
    match std::fs::read(root.join(rel)) {
        Ok(b) => (200, Bytes::from(b)),
        Err(_) => (404, Bytes::from_static(b"not found\n")),
    }
}

#[cfg(test)]
mod tests {
    use super::read_file;

    #[test]
    fn files_under_the_root_only() {
        let root = std::env::temp_dir().join(format!("h3-harness-{}", std::process::id()));
        std::fs::create_dir_all(root.join("obj")).unwrap();
        std::fs::write(root.join("obj/a.jpg"), b"abc").unwrap();
        assert_eq!(read_file(&root, "/obj/a.jpg"), (200, bytes::Bytes::from_static(b"abc")));
        assert_eq!(read_file(&root, "/../etc/passwd").0, 404);
        assert_eq!(read_file(&root, "/obj//a.jpg").0, 404);
        assert_eq!(read_file(&root, "/missing").0, 404);
        std::fs::remove_dir_all(root).unwrap();
    }
}
