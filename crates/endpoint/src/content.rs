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
    Page {
        count: u64,
        size_token: String,
    },
    /// `/obj/<S>/<i>.jpg` and `/bulk/<S>`: S bytes.
    Synthetic {
        size: u64,
        content_type: &'static str,
    },
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
    P.get_or_init(|| Bytes::from((0..CHUNK).map(|i| (i % 251) as u8).collect::<Vec<u8>>())).clone()
}

/// An 8x8 grey baseline JPEG (159 bytes) that every decoder accepts.
const TINY_JPEG: [u8; 159] = [
    0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00,
    0x00, 0xff, 0xdb, 0x00, 0x43, 0x00, 0x10, 0x0b, 0x0c, 0x0e, 0x0c, 0x0a, 0x10, 0x0e, 0x0d, 0x0e, 0x12, 0x11, 0x10,
    0x13, 0x18, 0x28, 0x1a, 0x18, 0x16, 0x16, 0x18, 0x31, 0x23, 0x25, 0x1d, 0x28, 0x3a, 0x33, 0x3d, 0x3c, 0x39, 0x33,
    0x38, 0x37, 0x40, 0x48, 0x5c, 0x4e, 0x40, 0x44, 0x57, 0x45, 0x37, 0x38, 0x50, 0x6d, 0x51, 0x57, 0x5f, 0x62, 0x67,
    0x68, 0x67, 0x3e, 0x4d, 0x71, 0x79, 0x70, 0x64, 0x78, 0x5c, 0x65, 0x67, 0x63, 0xff, 0xc0, 0x00, 0x0b, 0x08, 0x00,
    0x08, 0x00, 0x08, 0x01, 0x01, 0x11, 0x00, 0xff, 0xc4, 0x00, 0x14, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xc4, 0x00, 0x14, 0x10, 0x01, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xda, 0x00, 0x08, 0x01, 0x01,
    0x00, 0x00, 0x3f, 0x00, 0x3f, 0xff, 0xd9,
];
/// A JPEG comment (COM) segment: FF FE, a 2-byte length counting itself, up to 65533 bytes.
const COM_MAX: u64 = 4 + 65533;

/// `/obj/<S>/<i>.jpg` bodies: a valid JPEG of exactly S bytes, the tiny picture padded with
/// comment segments after its SOI marker. A browser stops downloading an image it cannot
/// decode (Chromium cancels after the first 16 KB), so the objects must be real images for
/// browser page loads to transfer them whole. Under 159 bytes: plain filler.
pub struct JpegBody {
    pieces: std::collections::VecDeque<Piece>,
}

enum Piece {
    Bytes(Bytes),
    Filler(u64),
}

/// Lengths of the comment segments that pad `pad` bytes; each 4..=COM_MAX. A remainder of
/// 1-3 bytes with no room to rebalance goes after EOI, where decoders ignore it.
fn com_segments(pad: u64) -> Vec<u64> {
    let (full, r) = (pad / COM_MAX, pad % COM_MAX);
    let mut v = vec![COM_MAX; full as usize];
    match r {
        0 => {}
        4.. => v.push(r),
        _ if full > 0 => {
            v.pop();
            v.push(COM_MAX - 4);
            v.push(4 + r);
        }
        _ => {}
    }
    v
}

impl JpegBody {
    pub fn new(size: u64) -> JpegBody {
        let mut pieces = std::collections::VecDeque::new();
        let tiny = TINY_JPEG.len() as u64;
        if size < tiny {
            pieces.push_back(Piece::Filler(size));
            return JpegBody { pieces };
        }
        let pad = size - tiny;
        pieces.push_back(Piece::Bytes(Bytes::from_static(&TINY_JPEG[..2])));
        let segments = com_segments(pad);
        let used: u64 = segments.iter().sum();
        for len in segments {
            let l = (len - 2) as u16;
            pieces.push_back(Piece::Bytes(Bytes::copy_from_slice(&[0xff, 0xfe, (l >> 8) as u8, l as u8])));
            pieces.push_back(Piece::Filler(len - 4));
        }
        pieces.push_back(Piece::Bytes(Bytes::from_static(&TINY_JPEG[2..])));
        if pad > used {
            pieces.push_back(Piece::Filler(pad - used));
        }
        JpegBody { pieces }
    }

    fn next_chunk(&mut self) -> Option<Bytes> {
        let mut out = bytes::BytesMut::with_capacity(CHUNK);
        while out.len() < CHUNK {
            let room = CHUNK - out.len();
            match self.pieces.front_mut() {
                None => break,
                Some(Piece::Bytes(b)) => {
                    let n = b.len().min(room);
                    out.extend_from_slice(&b.split_to(n));
                    if b.is_empty() {
                        self.pieces.pop_front();
                    }
                }
                Some(Piece::Filler(left)) => {
                    let n = (*left).min(room as u64) as usize;
                    out.extend_from_slice(&pattern()[..n]);
                    *left -= n as u64;
                    if *left == 0 {
                        self.pieces.pop_front();
                    }
                }
            }
        }
        (!out.is_empty()).then(|| out.freeze())
    }
}

/// A response body produced chunk by chunk (synthetic bodies are slices of one shared buffer).
pub enum BodySource {
    Full(Option<Bytes>),
    Synthetic {
        remaining: u64,
    },
    Jpeg(JpegBody),
    File {
        file: tokio::fs::File,
        remaining: u64,
    },
    /// Another body without its first `skip` bytes (a range request's rest).
    From {
        skip: u64,
        inner: Box<BodySource>,
    },
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
            BodySource::Jpeg(body) => Ok(body.next_chunk()),
            BodySource::From { skip, inner } => loop {
                // the skipped bytes are made and dropped: synthetic bodies cost a copy each
                let Some(mut chunk) = Box::pin(inner.next_chunk()).await? else { return Ok(None) };
                if *skip == 0 {
                    return Ok(Some(chunk));
                }
                let n = (*skip).min(chunk.len() as u64) as usize;
                *skip -= n as u64;
                let rest = chunk.split_off(n);
                if !rest.is_empty() {
                    return Ok(Some(rest));
                }
            },
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
    /// A range request's answer (206): "bytes FIRST-LAST/LENGTH".
    pub content_range: Option<String>,
}

/// The first byte a `Range` header asks for: only `bytes=N-`, the one form a client resuming
/// a download sends (RFC 9110 §14.1.2). None: no usable range (the whole body is sent, as a
/// server that ignores ranges does).
pub fn range_start(header: Option<&str>) -> Option<u64> {
    let spec = header?.trim().strip_prefix("bytes=")?;
    let (first, last) = spec.split_once('-')?;
    if !last.trim().is_empty() || spec.contains(',') {
        return None;
    }
    first.trim().parse().ok()
}

impl Reply {
    /// This reply from byte `start` on: 206 with its Content-Range, or 416 past its end.
    /// A reply that is not a 200 is left as it is.
    pub fn starting_at(self, start: Option<u64>) -> Reply {
        let Some(start) = start.filter(|_| self.status == 200) else { return self };
        if start >= self.length {
            let mut r = Reply::text(416, "text/plain", format!("range starts at {start}, past {}\n", self.length));
            r.content_range = Some(format!("bytes */{}", self.length));
            return r;
        }
        Reply {
            status: 206,
            content_type: self.content_type,
            length: self.length - start,
            content_range: Some(format!("bytes {start}-{}/{}", self.length - 1, self.length)),
            body: BodySource::From { skip: start, inner: Box::new(self.body) },
        }
    }

    fn text(status: u16, content_type: &'static str, s: String) -> Reply {
        Reply {
            status,
            content_type,
            length: s.len() as u64,
            body: BodySource::Full(Some(Bytes::from(s))),
            content_range: None,
        }
    }
}

/// Resolve a request path to a reply (status, headers we need, body source).
pub async fn reply_for(path: &str, root: Option<&Path>) -> Reply {
    match route(path, root) {
        Route::Index => Reply::text(200, "text/plain", "longlook endpoint\n".into()),
        Route::Page { count, size_token } => Reply::text(200, "text/html", page_html(count, &size_token)),
        Route::Synthetic { size, content_type } => {
            let body = if content_type == "image/jpeg" {
                BodySource::Jpeg(JpegBody::new(size))
            } else {
                BodySource::Synthetic { remaining: size }
            };
            Reply { status: 200, content_type, length: size, body, content_range: None }
        }
        Route::File(p) => match tokio::fs::File::open(&p).await {
            Ok(file) => {
                let length = file.metadata().await.map(|m| m.len()).unwrap_or(0);
                Reply {
                    status: 200,
                    content_type: guess_type(&p),
                    length,
                    body: BodySource::File { file, remaining: length },
                    content_range: None,
                }
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

    fn jpeg_bytes(size: u64) -> Vec<u8> {
        let mut body = JpegBody::new(size);
        let mut out = Vec::new();
        while let Some(chunk) = body.next_chunk() {
            out.extend_from_slice(&chunk);
        }
        out
    }

    #[test]
    fn synthetic_jpegs_are_valid_and_exactly_sized() {
        for size in [
            159,
            160,
            162,
            163,
            10_000,
            COM_MAX + 159,
            COM_MAX + 160,
            COM_MAX + 161,
            COM_MAX + 163,
            2 * COM_MAX + 159 + 2,
            100_000,
            1_000_000,
        ] {
            let b = jpeg_bytes(size);
            assert_eq!(b.len() as u64, size, "size {size}");
            assert_eq!(&b[..2], &[0xff, 0xd8]);
            // SOI, comment segments only, then the tiny picture's own segments to EOI
            let mut p = 2;
            while b[p] == 0xff && b[p + 1] == 0xfe {
                p += 2 + ((b[p + 2] as usize) << 8 | b[p + 3] as usize);
            }
            assert_eq!(&b[p..p + TINY_JPEG.len() - 2], &TINY_JPEG[2..], "size {size}");
            assert!(b.len() - (p + TINY_JPEG.len() - 2) < 4, "at most 3 bytes after EOI");
        }
        assert_eq!(jpeg_bytes(100).len(), 100);
    }

    #[test]
    fn routes() {
        assert_eq!(route("/page/10x10k.html", None), Route::Page { count: 10, size_token: "10k".into() });
        assert_eq!(route("/page/0x10k.html", None), Route::NotFound);
        assert_eq!(route("/page/1001x10k.html", None), Route::NotFound);
        assert_eq!(route("/obj/10k/3.jpg", None), Route::Synthetic { size: 10_000, content_type: "image/jpeg" });
        assert_eq!(route("/obj/10k/x.jpg", None), Route::NotFound);
        assert_eq!(
            route("/bulk/210m", None),
            Route::Synthetic { size: 210_000_000, content_type: "application/octet-stream" }
        );
        assert_eq!(
            route("/bulk/10m?x=1", None),
            Route::Synthetic { size: 10_000_000, content_type: "application/octet-stream" }
        );
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
    async fn a_range_request_gets_the_rest_of_the_same_bytes() {
        async fn all(mut b: BodySource) -> Vec<u8> {
            let mut out = Vec::new();
            while let Some(c) = b.next_chunk().await.unwrap() {
                out.extend_from_slice(&c);
            }
            out
        }
        for (path, start) in [("/obj/1m/0.jpg", 70_000u64), ("/bulk/200k", 65_536), ("/bulk/200k", 1)] {
            let whole = all(reply_for(path, None).await.body).await;
            let part = reply_for(path, None).await.starting_at(Some(start));
            assert_eq!(part.status, 206);
            assert_eq!(part.length, whole.len() as u64 - start);
            let last = whole.len() - 1;
            assert_eq!(part.content_range.as_deref(), Some(format!("bytes {start}-{last}/{}", whole.len()).as_str()));
            assert_eq!(all(part.body).await, whole[start as usize..]);
        }
        let past = reply_for("/bulk/10k", None).await.starting_at(Some(10_000));
        assert_eq!((past.status, past.content_range.as_deref()), (416, Some("bytes */10000")));
        assert_eq!(reply_for("/bulk/10k", None).await.starting_at(None).status, 200);
        assert_eq!(reply_for("/nope", None).await.starting_at(Some(5)).status, 404);
        assert_eq!(range_start(Some("bytes=500-")), Some(500));
        for bad in ["bytes=5-9", "bytes=-5", "items=5-", "bytes=a-", "bytes=1-,5-"] {
            assert_eq!(range_start(Some(bad)), None, "{bad}");
        }
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
