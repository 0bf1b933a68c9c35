//! What the server serves: synthetic pages, objects and bulk bodies (no files needed), and
//! optionally files under `--root`. Paths are defined in docs/interfaces.md.

use std::path::{Component, Path, PathBuf};

use bytes::Bytes;
use tokio::io::AsyncReadExt;

/// Largest synthetic body we accept (10 GB): bodies are streamed, never held in memory.
pub const MAX_SIZE: u64 = 10_000_000_000;
pub const MAX_OBJECTS: u64 = 1000;
/// Chunk size of streamed bodies.
pub const CHUNK: usize = 64 * 1024;

/// `10000`, `10k` (10,000), `10m` (10,000,000); decimal multiples as in interfaces.md.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    let (digits, mult) = match t.strip_suffix('k') {
        Some(d) => (d, 1_000),
        None => match t.strip_suffix('m') {
            Some(d) => (d, 1_000_000),
            None => (t.as_str(), 1),
        },
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("bad size '{s}' (expected digits with optional k/m suffix)"));
    }
    let n: u64 = digits.parse().map_err(|_| format!("bad size '{s}'"))?;
    let v = n.checked_mul(mult).ok_or_else(|| format!("size '{s}' too large"))?;
    if v > MAX_SIZE {
        return Err(format!("size '{s}' above the {MAX_SIZE}-byte limit"));
    }
    Ok(v)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `/`: a tiny index (also used by the client's 0-RTT warm-up connection).
    Index,
    /// `/page/<N>x<S>.html`: HTML referencing N objects `/obj/<S>/<i>.jpg`.
    Page { count: u64, size_token: String },
    /// `/obj/<S>/<i>.jpg` and `/bulk/<S>`: S bytes.
    Synthetic { size: u64, content_type: &'static str },
    File(PathBuf),
    NotFound,
}

pub fn route(path: &str, root: Option<&Path>) -> Route {
    let path = path.split('?').next().unwrap_or("");
    if path == "/" {
        return Route::Index;
    }
    if let Some(rest) = path.strip_prefix("/page/") {
        if let Some(spec) = rest.strip_suffix(".html") {
            if let Some((n, s)) = spec.split_once('x') {
                if let (Ok(count), Ok(_)) = (n.parse::<u64>(), parse_size(s)) {
                    if (1..=MAX_OBJECTS).contains(&count) {
                        return Route::Page { count, size_token: s.to_string() };
                    }
                }
            }
        }
    }
    if let Some(rest) = path.strip_prefix("/obj/") {
        if let Some((s, file)) = rest.split_once('/') {
            if let (Ok(size), Some(i)) = (parse_size(s), file.strip_suffix(".jpg")) {
                if i.parse::<u64>().is_ok() {
                    return Route::Synthetic { size, content_type: "image/jpeg" };
                }
            }
        }
    }
    if let Some(s) = path.strip_prefix("/bulk/") {
        if let Ok(size) = parse_size(s) {
            return Route::Synthetic { size, content_type: "application/octet-stream" };
        }
    }
    if let Some(root) = root {
        if let Some(p) = safe_join(root, path) {
            if p.is_file() {
                return Route::File(p);
            }
        }
    }
    Route::NotFound
}

/// Join a URL path under `root`, refusing `..` and anything that is not a plain name.
fn safe_join(root: &Path, url_path: &str) -> Option<PathBuf> {
    let rel = Path::new(url_path.trim_start_matches('/'));
    let mut out = root.to_path_buf();
    for c in rel.components() {
        match c {
            Component::Normal(x) => out.push(x),
            _ => return None,
        }
    }
    Some(out)
}

pub fn page_html(count: u64, size_token: &str) -> String {
    let mut s = String::with_capacity(100 + count as usize * 48);
    s.push_str("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>longlook page</title></head><body>\n");
    for i in 0..count {
        s.push_str(&format!("<img src=\"/obj/{size_token}/{i}.jpg\">\n"));
    }
    s.push_str("</body></html>\n");
    s
}

/// `src="..."` values in document order (enough for our synthetic pages and simple files).
pub fn extract_srcs(html: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find("src=\"") {
        rest = &rest[i + 5..];
        match rest.find('"') {
            Some(j) => {
                out.push(rest[..j].to_string());
                rest = &rest[j + 1..];
            }
            None => break,
        }
    }
    out
}

fn pattern() -> Bytes {
    use std::sync::OnceLock;
    static P: OnceLock<Bytes> = OnceLock::new();
    P.get_or_init(|| Bytes::from((0..CHUNK).map(|i| (i % 251) as u8).collect::<Vec<u8>>()))
        .clone()
}

/// A response body produced chunk by chunk (synthetic bodies are slices of one shared buffer).
pub enum BodySource {
    Full(Option<Bytes>),
    Synthetic { remaining: u64 },
    File { file: tokio::fs::File, remaining: u64 },
}

impl BodySource {
    pub async fn next_chunk(&mut self) -> std::io::Result<Option<Bytes>> {
        match self {
            BodySource::Full(b) => Ok(b.take()),
            BodySource::Synthetic { remaining } => {
                if *remaining == 0 {
                    return Ok(None);
                }
                let n = (*remaining).min(CHUNK as u64) as usize;
                *remaining -= n as u64;
                Ok(Some(pattern().slice(..n)))
            }
            BodySource::File { file, remaining } => {
                if *remaining == 0 {
                    return Ok(None);
                }
                let mut buf = vec![0u8; (*remaining).min(CHUNK as u64) as usize];
                let n = file.read(&mut buf).await?;
                if n == 0 {
                    return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "file shrank"));
                }
                buf.truncate(n);
                *remaining -= n as u64;
                Ok(Some(Bytes::from(buf)))
            }
        }
    }
}

pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub length: u64,
    pub body: BodySource,
}

impl Reply {
    fn text(status: u16, content_type: &'static str, s: String) -> Reply {
        Reply { status, content_type, length: s.len() as u64, body: BodySource::Full(Some(Bytes::from(s))) }
    }
}

/// Resolve a request path to a reply (status, headers we need, body source).
pub async fn reply_for(path: &str, root: Option<&Path>) -> Reply {
    match route(path, root) {
        Route::Index => Reply::text(200, "text/plain", "longlook endpoint\n".into()),
        Route::Page { count, size_token } => Reply::text(200, "text/html", page_html(count, &size_token)),
        Route::Synthetic { size, content_type } => {
            Reply { status: 200, content_type, length: size, body: BodySource::Synthetic { remaining: size } }
        }
        Route::File(p) => match tokio::fs::File::open(&p).await {
            Ok(file) => {
                let length = file.metadata().await.map(|m| m.len()).unwrap_or(0);
                Reply { status: 200, content_type: guess_type(&p), length, body: BodySource::File { file, remaining: length } }
            }
            Err(_) => Reply::text(404, "text/plain", format!("not found: {path}\n")),
        },
        Route::NotFound => Reply::text(404, "text/plain", format!("not found: {path}\n")),
    }
}

fn guess_type(p: &Path) -> &'static str {
    match p.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" | "htm" => "text/html",
        "js" => "application/javascript",
        "css" => "text/css",
        "jpg" | "jpeg" => "image/jpeg",
        "png" => "image/png",
        "mpd" => "application/dash+xml",
        "m4s" | "mp4" => "video/mp4",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("10k"), Ok(10_000));
        assert_eq!(parse_size("10K"), Ok(10_000));
        assert_eq!(parse_size("210m"), Ok(210_000_000));
        assert_eq!(parse_size("5000"), Ok(5000));
        assert!(parse_size("").is_err());
        assert!(parse_size("k").is_err());
        assert!(parse_size("1.5m").is_err());
        assert!(parse_size("-3").is_err());
        assert!(parse_size("99999999999m").is_err());
    }

    #[test]
    fn routes() {
        assert_eq!(route("/page/10x10k.html", None), Route::Page { count: 10, size_token: "10k".into() });
        assert_eq!(route("/page/0x10k.html", None), Route::NotFound);
        assert_eq!(route("/page/1001x10k.html", None), Route::NotFound);
        assert_eq!(route("/obj/10k/3.jpg", None), Route::Synthetic { size: 10_000, content_type: "image/jpeg" });
        assert_eq!(route("/obj/10k/x.jpg", None), Route::NotFound);
        assert_eq!(route("/bulk/210m", None), Route::Synthetic { size: 210_000_000, content_type: "application/octet-stream" });
        assert_eq!(route("/bulk/10m?x=1", None), Route::Synthetic { size: 10_000_000, content_type: "application/octet-stream" });
        assert_eq!(route("/nope", None), Route::NotFound);
        assert_eq!(route("/", None), Route::Index);
    }

    #[test]
    fn root_files_cannot_escape() {
        let dir = std::env::temp_dir().join(format!("ll-content-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.html"), "x").unwrap();
        assert_eq!(route("/a.html", Some(&dir)), Route::File(dir.join("a.html")));
        assert_eq!(route("/../a.html", Some(&dir)), Route::NotFound);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn page_references_its_objects() {
        let html = page_html(3, "5k");
        assert_eq!(extract_srcs(&html), vec!["/obj/5k/0.jpg", "/obj/5k/1.jpg", "/obj/5k/2.jpg"]);
    }

    #[tokio::test]
    async fn synthetic_bodies_stream_exact_lengths() {
        for size in [0u64, 1, 65_536, 65_537, 1_000_000] {
            let mut b = BodySource::Synthetic { remaining: size };
            let mut total = 0u64;
            while let Some(c) = b.next_chunk().await.unwrap() {
                assert!(c.len() <= CHUNK);
                total += c.len() as u64;
            }
            assert_eq!(total, size);
        }
    }
}
