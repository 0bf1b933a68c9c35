//! longlook-quiche: quiche's HTTP/3 as a longlook stack (docs/interfaces.md, "Other QUIC stacks").
//!
//!   longlook-quiche serve --listen 0.0.0.0:4433 --cert C --key K --root DIR --qlog-dir D --cc cubic
//!                         [--retry always]
//!   longlook-quiche fetch --url URL --ca PEM --mode page|bulk --run-id ID --out FILE
//!                         --timeout-s S --qlog-dir D --cc cubic [--keylog FILE]
//!                         [--migrate-at-ms MS --migrate-to ADDR]
//!
//! quiche is a sans-I/O library: this is the smallest event loop around it (one UDP socket,
//! blocking reads with the connection's timer as the read timeout). The server serves the
//! files under --root; the client writes the fetch JSON of `endpoint fetch`. Packets are sent
//! when quiche hands them over (no pacing by SendInfo.at, as quiche's own example apps).
//! Each connection writes its qlog (JSON-SEQ) into --qlog-dir.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, ErrorKind};
use std::net::{IpAddr, SocketAddr, ToSocketAddrs, UdpSocket};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use quiche::h3::NameValue;
use serde_json::{json, Value};

const MAX_DATAGRAM: usize = 1350;
const STREAM_WINDOW: u64 = 6 * 1024 * 1024; // our endpoint's and Chromium's windows
const CONN_WINDOW: u64 = 15 * 1024 * 1024;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let code = match args.get(1).map(String::as_str) {
        Some("serve") => serve(&flags(&args[2..])),
        Some("fetch") => fetch(&flags(&args[2..])),
        _ => {
            eprintln!("usage: longlook-quiche serve|fetch --flag value ...");
            2
        }
    };
    std::process::exit(code);
}

fn flags(args: &[String]) -> HashMap<String, String> {
    args.chunks(2).filter_map(|kv| Some((kv[0].trim_start_matches("--").to_string(), kv.get(1)?.clone()))).collect()
}

fn flag<'a>(f: &'a HashMap<String, String>, name: &str, default: &'a str) -> &'a str {
    f.get(name).map(String::as_str).unwrap_or(default)
}

fn config(f: &HashMap<String, String>, server: bool) -> Result<quiche::Config, String> {
    let mut c = quiche::Config::new(quiche::PROTOCOL_VERSION).map_err(|e| e.to_string())?;
    c.set_application_protos(quiche::h3::APPLICATION_PROTOCOL).map_err(|e| e.to_string())?;
    c.set_cc_algorithm_name(flag(f, "cc", "cubic")).map_err(|_| format!("unknown --cc {}", flag(f, "cc", "")))?;
    c.set_max_idle_timeout(30_000);
    c.set_max_recv_udp_payload_size(MAX_DATAGRAM);
    c.set_max_send_udp_payload_size(MAX_DATAGRAM);
    c.set_initial_max_data(CONN_WINDOW);
    c.set_initial_max_stream_data_bidi_local(STREAM_WINDOW);
    c.set_initial_max_stream_data_bidi_remote(STREAM_WINDOW);
    c.set_initial_max_stream_data_uni(STREAM_WINDOW);
    c.set_initial_max_streams_bidi(100);
    c.set_initial_max_streams_uni(100);
    c.set_max_connection_window(CONN_WINDOW);
    c.set_max_stream_window(STREAM_WINDOW);
    c.set_disable_active_migration(true);
    if f.contains_key("keylog") {
        c.log_keys();
    }
    if server {
        // take 0-RTT requests from a resumed client, as deployed quiche servers do (its
        // serving loop answers them in early data)
        c.enable_early_data();
        c.load_cert_chain_from_pem_file(flag(f, "cert", "")).map_err(|e| format!("--cert: {e}"))?;
        c.load_priv_key_from_pem_file(flag(f, "key", "")).map_err(|e| format!("--key: {e}"))?;
    } else {
        // BoringSSL refuses a self-signed certificate that is not a CA as its own trust anchor,
        // and rustls (our endpoint) refuses a CA certificate as a server's: the testbed's one
        // certificate cannot satisfy both, so this client does not verify (as tquic's).
        c.verify_peer(false);
    }
    Ok(c)
}

fn random_cid() -> Vec<u8> {
    use ring::rand::SecureRandom;
    let mut id = vec![0u8; quiche::MAX_CONN_ID_LEN];
    ring::rand::SystemRandom::new().fill(&mut id).expect("random");
    id
}

fn random_token() -> u128 {
    use ring::rand::SecureRandom;
    let mut b = [0u8; 16];
    ring::rand::SystemRandom::new().fill(&mut b).expect("random");
    u128::from_be_bytes(b)
}

/// `--migrate-at-ms MS --migrate-to ADDR`: when (after the fetch started) and where to move.
fn planned_move(f: &HashMap<String, String>) -> Result<Option<(Duration, IpAddr)>, String> {
    let (Some(at), Some(to)) = (f.get("migrate-at-ms"), f.get("migrate-to")) else {
        return Ok(None);
    };
    let at: f64 = at.parse().map_err(|e| format!("--migrate-at-ms {at}: {e}"))?;
    let to: IpAddr = to.parse().map_err(|e| format!("--migrate-to {to}: {e}"))?;
    Ok(Some((Duration::from_secs_f64(at / 1e3), to)))
}

/// Connection migration: a socket on `to`, and quiche's migrate_source to it (a new path with a
/// new connection ID, validated by PATH_CHALLENGE). The old socket is left: its path is gone.
fn move_to(conn: &mut quiche::Connection, to: IpAddr, peer: SocketAddr) -> Result<(UdpSocket, SocketAddr), String> {
    let sock = UdpSocket::bind(SocketAddr::new(to, 0)).map_err(|e| format!("binding {to}: {e}"))?;
    sock.connect(peer).map_err(|e| e.to_string())?;
    let local = sock.local_addr().map_err(|e| e.to_string())?;
    conn.migrate_source(local).map_err(|e| format!("quiche's migrate_source: {e}"))?;
    Ok((sock, local))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn set_qlog(conn: &mut quiche::Connection, dir: Option<&String>, id: &[u8], side: &str) {
    if let Some(dir) = dir {
        let path = Path::new(dir).join(format!("{}_{side}.sqlog", hex(id)));
        if let Ok(file) = File::create(&path) {
            conn.set_qlog(Box::new(BufWriter::new(file)), format!("longlook-quiche {side}"), String::new());
        }
    }
}

/// Send every packet quiche has ready, at once: SendInfo.at (the pacer's time) is not
/// honoured. Sleeping per packet in this one loop measured worse (a 10 MB download at
/// 100 Mbit/s went from 60% to 34% of the physical limit): see the stack's notes.
fn flush(sock: &UdpSocket, conn: &mut quiche::Connection, out: &mut [u8]) {
    loop {
        match conn.send(out) {
            Ok((n, info)) => {
                let _ = sock.send_to(&out[..n], info.to);
            }
            Err(quiche::Error::Done) => break,
            Err(_) => {
                let _ = conn.close(false, 0x1, b"send failed");
                break;
            }
        }
    }
}

/// Wait for a datagram until `timeout` (None: block). Returns None on timeout.
fn recv(sock: &UdpSocket, buf: &mut [u8], timeout: Option<Duration>) -> Option<(usize, SocketAddr)> {
    let _ = sock.set_read_timeout(timeout.map(|t| t.max(Duration::from_micros(100))));
    match sock.recv_from(buf) {
        Ok(r) => Some(r),
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => None,
        Err(e) => {
            eprintln!("recv: {e}");
            None
        }
    }
}

// ---------------------------------------------------------------------------------- server

/// A response not yet sent whole: its headers go out when the stream has room for them
/// (quiche says StreamBlocked until then), then the body as flow and congestion control allow.
struct Response {
    status: String,
    body: Vec<u8>,
    headers_sent: bool,
    sent: usize,
}

struct Served {
    conn: quiche::Connection,
    h3: Option<quiche::h3::Connection>,
    pending: HashMap<u64, Response>,
}

fn serve(f: &HashMap<String, String>) -> i32 {
    let mut cfg = match config(f, true) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("serve: {e}");
            return 2;
        }
    };
    let h3_cfg = quiche::h3::Config::new().expect("h3 config");
    let root = PathBuf::from(flag(f, "root", "."));
    let sock = match UdpSocket::bind(flag(f, "listen", "0.0.0.0:4433")) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("serve: {e}");
            return 1;
        }
    };
    let local = sock.local_addr().expect("local addr");
    println!("ready");
    let (mut buf, mut out) = (vec![0u8; 65535], vec![0u8; MAX_DATAGRAM]);
    let mut conns: HashMap<Vec<u8>, Served> = HashMap::new();
    let mut aliases: HashMap<Vec<u8>, Vec<u8>> = HashMap::new(); // client's first DCID -> ours
    loop {
        let timeout = conns.values().filter_map(|s| s.conn.timeout()).min();
        match recv(&sock, &mut buf, timeout) {
            None => conns.values_mut().for_each(|s| s.conn.on_timeout()),
            Some((len, from)) => {
                let hdr = match quiche::Header::from_slice(&mut buf[..len], quiche::MAX_CONN_ID_LEN) {
                    Ok(h) => h,
                    Err(_) => continue,
                };
                let dcid = hdr.dcid.to_vec();
                let key = if conns.contains_key(&dcid) { Some(dcid.clone()) } else { aliases.get(&dcid).cloned() };
                let key = match key {
                    Some(k) => k,
                    None => {
                        if hdr.ty != quiche::Type::Initial {
                            continue;
                        }
                        if !quiche::version_is_supported(hdr.version) {
                            if let Ok(n) = quiche::negotiate_version(&hdr.scid, &hdr.dcid, &mut out) {
                                let _ = sock.send_to(&out[..n], from);
                            }
                            continue;
                        }
                        // with --retry always: a Retry to an Initial without our token, and the
                        // connection under the Retry's id once the client echoes the token
                        let (scid, odcid) = if flag(f, "retry", "never") == "always" {
                            match hdr.token.as_deref().filter(|t| !t.is_empty()) {
                                None => {
                                    send_retry(&sock, &hdr, from, &mut out);
                                    continue;
                                }
                                Some(token) => match original_dcid(token, from) {
                                    Some(odcid) => (dcid.clone(), Some(odcid)),
                                    None => continue, // not our token, or another address's
                                },
                            }
                        } else {
                            (random_cid(), None)
                        };
                        let cid = quiche::ConnectionId::from_ref(&scid);
                        let odcid = odcid.as_deref().map(quiche::ConnectionId::from_ref);
                        let mut conn = match quiche::accept(&cid, odcid.as_ref(), local, from, &mut cfg) {
                            Ok(c) => c,
                            Err(_) => continue,
                        };
                        set_qlog(&mut conn, f.get("qlog-dir"), &scid, "server");
                        aliases.insert(dcid.clone(), scid.clone());
                        conns.insert(scid.clone(), Served { conn, h3: None, pending: HashMap::new() });
                        scid
                    }
                };
                let s = conns.get_mut(&key).expect("connection");
                let _ = s.conn.recv(&mut buf[..len], quiche::RecvInfo { from, to: local });
                if s.h3.is_none() && (s.conn.is_established() || s.conn.is_in_early_data()) {
                    s.h3 = quiche::h3::Connection::with_transport(&mut s.conn, &h3_cfg).ok();
                }
                answer(s, &root);
            }
        }
        for s in conns.values_mut() {
            answer(s, &root);
            flush(&sock, &mut s.conn, &mut out);
        }
        conns.retain(|_, s| !s.conn.is_closed());
        aliases.retain(|_, v| conns.contains_key(v));
    }
}

/// A Retry whose token names the client's address and the connection id it first chose
/// (RFC 9000 §8.1.2). Unsigned: the token proves an address on a testbed, not against an
/// attacker who can forge one.
fn send_retry(sock: &UdpSocket, hdr: &quiche::Header, from: SocketAddr, out: &mut [u8]) {
    let mut token = address_bytes(from);
    token.extend_from_slice(&hdr.dcid);
    let new_scid = random_cid();
    let new_scid = quiche::ConnectionId::from_ref(&new_scid);
    match quiche::retry(&hdr.scid, &hdr.dcid, &new_scid, &token, hdr.version, out) {
        Ok(n) => {
            let _ = sock.send_to(&out[..n], from);
        }
        Err(e) => eprintln!("serve: retry to {from}: {e}"),
    }
}

/// The original destination connection id in `token` when it is a Retry token for `from`.
fn original_dcid(token: &[u8], from: SocketAddr) -> Option<Vec<u8>> {
    token.strip_prefix(address_bytes(from).as_slice()).map(<[u8]>::to_vec)
}

fn address_bytes(a: SocketAddr) -> Vec<u8> {
    let mut b = match a.ip() {
        std::net::IpAddr::V4(ip) => ip.octets().to_vec(),
        std::net::IpAddr::V6(ip) => ip.octets().to_vec(),
    };
    b.extend_from_slice(&a.port().to_be_bytes());
    b
}

fn answer(s: &mut Served, root: &Path) {
    let Some(h3) = s.h3.as_mut() else { return };
    loop {
        match h3.poll(&mut s.conn) {
            Ok((sid, quiche::h3::Event::Headers { list, .. })) => {
                let path = list
                    .iter()
                    .find(|h| h.name() == b":path")
                    .map(|h| String::from_utf8_lossy(h.value()).into_owned())
                    .unwrap_or_default();
                let (status, body) = read_file(root, &path);
                s.pending.insert(sid, Response { status, body, headers_sent: false, sent: 0 });
            }
            Ok(_) => {}
            Err(quiche::h3::Error::Done) => break,
            Err(_) => break,
        }
    }
    let mut finished = vec![];
    for (sid, r) in s.pending.iter_mut() {
        if !r.headers_sent {
            let headers = [
                quiche::h3::Header::new(b":status", r.status.as_bytes()),
                quiche::h3::Header::new(b"content-length", r.body.len().to_string().as_bytes()),
            ];
            match h3.send_response(&mut s.conn, *sid, &headers, false) {
                Ok(()) => r.headers_sent = true,
                Err(quiche::h3::Error::StreamBlocked) | Err(quiche::h3::Error::Done) => continue,
                Err(_) => {
                    finished.push(*sid); // the stream is gone
                    continue;
                }
            }
        }
        loop {
            match h3.send_body(&mut s.conn, *sid, &r.body[r.sent..], true) {
                Ok(n) => {
                    r.sent += n;
                    if r.sent == r.body.len() {
                        finished.push(*sid);
                        break;
                    }
                    if n == 0 {
                        break;
                    }
                }
                Err(quiche::h3::Error::Done) => break, // no room now: again after the next ACKs
                Err(_) => {
                    finished.push(*sid);
                    break;
                }
            }
        }
    }
    finished.iter().for_each(|sid| {
        s.pending.remove(sid);
    });
}

fn read_file(root: &Path, url_path: &str) -> (String, Vec<u8>) {
    let rel = url_path.split('?').next().unwrap_or("").trim_start_matches('/');
    let rel = if rel.is_empty() { "index.html" } else { rel };
    if rel.split('/').any(|c| c == ".." || c.is_empty()) {
        return ("404".into(), b"not found\n".to_vec());
    }
    match std::fs::read(root.join(rel)) {
        Ok(b) => ("200".into(), b),
        Err(_) => ("404".into(), b"not found\n".to_vec()),
    }
}

// ---------------------------------------------------------------------------------- client

struct Transfer {
    path: String,
    status: Option<u16>,
    bytes: u64,
    start_ms: f64,
    first_byte_ms: Option<f64>,
    end_ms: Option<f64>,
    body: Vec<u8>,
    keep: bool,
}

impl Transfer {
    /// A request just sent; `keep`: its body is kept (the page's HTML, to find its objects).
    fn started(path: String, start_ms: f64, keep: bool) -> Self {
        Transfer { path, status: None, bytes: 0, start_ms, first_byte_ms: None, end_ms: None, body: vec![], keep }
    }
}

fn ms(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64() * 1000.0
}

fn fetch(f: &HashMap<String, String>) -> i32 {
    let url = flag(f, "url", "").to_string();
    let mode = flag(f, "mode", "page").to_string();
    let mut doc = json!({"run_id": flag(f, "run-id", ""), "url": url, "mode": mode, "protocol_requested": "h3",
        "protocol": null, "ok": false, "error": null, "started_unix_ms": null, "plt_ms": null,
        "handshake_ms": null, "ttfb_ms": null, "bytes": 0, "objects": [],
        "zero_rtt": {"attempted": false, "accepted": false}, "local_addr": null, "goodput": [],
        "goodput_mbit": null, "stopped_early": false});
    let code = match run_fetch(f, &url, &mode, &mut doc) {
        Ok(c) => c,
        Err(e) => {
            doc["error"] = json!(e);
            1
        }
    };
    let text = doc.to_string();
    match f.get("out") {
        Some(out) => {
            if let Err(e) = std::fs::write(out, text) {
                eprintln!("fetch: {e}");
                return 1;
            }
        }
        None => println!("{text}"),
    }
    code
}

fn run_fetch(f: &HashMap<String, String>, url: &str, mode: &str, doc: &mut Value) -> Result<i32, String> {
    let rest = url.strip_prefix("https://").ok_or("--url must be https://")?;
    let (authority, first_path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].to_string()),
        None => (rest, "/".to_string()),
    };
    let host = authority.rsplit_once(':').map(|(h, _)| h).unwrap_or(authority);
    let peer = authority.to_socket_addrs().map_err(|e| e.to_string())?.next().ok_or("no address")?;
    let timeout = Duration::from_secs_f64(flag(f, "timeout-s", "60").parse::<f64>().unwrap_or(60.0));
    let run_id = flag(f, "run-id", "").to_string();
    let mut cfg = config(f, false)?;
    // the interop cases it can be asked for: a first connection keeps its TLS session
    // (--session-file), the next resumes it, with its requests as early data (--early-data)
    let early = flag(f, "early-data", "off") == "on";
    if early {
        cfg.enable_early_data();
    }
    let h3_cfg = quiche::h3::Config::new().map_err(|e| e.to_string())?;
    let mut sock = UdpSocket::bind("0.0.0.0:0").map_err(|e| e.to_string())?;
    sock.connect(peer).map_err(|e| e.to_string())?;
    let mut local = sock.local_addr().map_err(|e| e.to_string())?;
    let mut planned = planned_move(f)?;
    if let Some((at, _)) = planned {
        doc["migration"] =
            json!({"planned_at_ms": at.as_secs_f64() * 1e3, "at_ms": null, "to": null, "not_moved": null});
    }
    doc["local_addr"] = json!(local.to_string());
    let scid = random_cid();
    let t0 = Instant::now();
    doc["started_unix_ms"] =
        json!(SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0));
    let mut conn = quiche::connect(Some(host), &quiche::ConnectionId::from_ref(&scid), local, peer, &mut cfg)
        .map_err(|e| e.to_string())?;
    set_qlog(&mut conn, f.get("qlog-dir"), &scid, "client");
    let session_file = f.get("session-file").map(PathBuf::from);
    if let Some(saved) = session_file.as_ref().and_then(|p| std::fs::read(p).ok()) {
        conn.set_session(&saved).map_err(|e| format!("--session-file: {e}"))?;
    }
    if let Some(path) = f.get("keylog") {
        // unbuffered: each secret is on disk once written
        let file =
            std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(|e| format!("--keylog: {e}"))?;
        conn.set_keylog(Box::new(file));
    }
    let (mut buf, mut out) = (vec![0u8; 65535], vec![0u8; MAX_DATAGRAM]);
    let mut h3: Option<quiche::h3::Connection> = None;
    let mut transfers: HashMap<u64, Transfer> = HashMap::new();
    let mut order: Vec<u64> = vec![];
    // the page's objects not yet asked for: a request waits for a stream the server's limit
    // (MAX_STREAMS) allows, as a browser's do, rather than fail the page
    let mut waiting: std::collections::VecDeque<String> = std::collections::VecDeque::new();
    let (mut total, mut page_sent, mut objects_sent) = (0u64, false, false);
    let mut goodput: Vec<(f64, u64)> = vec![];
    let mut body_buf = vec![0u8; 65535];
    let request = |h3: &mut quiche::h3::Connection, conn: &mut quiche::Connection, path: &str| {
        let headers = [
            quiche::h3::Header::new(b":method", b"GET"),
            quiche::h3::Header::new(b":scheme", b"https"),
            quiche::h3::Header::new(b":authority", authority.as_bytes()),
            quiche::h3::Header::new(b":path", path.as_bytes()),
            quiche::h3::Header::new(b"x-longlook-run", run_id.as_bytes()),
        ];
        h3.send_request(conn, &headers, true)
    };
    flush(&sock, &mut conn, &mut out);
    loop {
        if t0.elapsed() > timeout {
            return Err(format!("no result within {:.0} s", timeout.as_secs_f64()));
        }
        if conn.is_closed() {
            return Err(format!("connection closed: {:?}", conn.peer_error().or(conn.local_error())));
        }
        // a planned move is due: no wait for a datagram beyond it
        let until_move = planned.map(|(at, _)| at.saturating_sub(t0.elapsed()));
        let wait = match (conn.timeout(), until_move) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        match recv(&sock, &mut buf, wait) {
            None => conn.on_timeout(), // (nothing when no timer of quiche's expired)
            Some((len, from)) => {
                let _ = conn.recv(&mut buf[..len], quiche::RecvInfo { from, to: local });
            }
        }
        if planned.is_some() && conn.is_established() {
            // spare connection IDs of ours for the server to reach the new path with
            while conn.scids_left() > 0 {
                if conn.new_scid(&quiche::ConnectionId::from_vec(random_cid()), random_token(), false).is_err() {
                    break;
                }
            }
        }
        if let Some((_, to)) = planned.filter(|(at, _)| t0.elapsed() >= *at) {
            planned = None;
            match move_to(&mut conn, to, peer) {
                Ok((s, l)) => {
                    (sock, local) = (s, l);
                    doc["migration"]["at_ms"] = json!(ms(t0));
                    doc["migration"]["to"] = json!(l.to_string());
                }
                Err(e) => doc["migration"]["not_moved"] = json!(e),
            }
        }
        if conn.is_established() && doc["handshake_ms"].is_null() {
            doc["handshake_ms"] = json!(ms(t0));
            let alpn = String::from_utf8_lossy(conn.application_proto()).into_owned();
            doc["protocol"] = json!(alpn);
            if alpn != "h3" {
                doc["error"] = json!(format!("negotiated {alpn}, not h3"));
                return Ok(3);
            }
        }
        // with a resumed session and early data on, the requests go in 0-RTT, before the handshake ends
        let in_early_data = early && conn.is_in_early_data();
        if (conn.is_established() || in_early_data) && h3.is_none() {
            if in_early_data {
                // quiche's API says whether early data was sent, not whether the server took it
                doc["zero_rtt"] = json!({"attempted": true, "accepted": null});
            }
            h3 = Some(quiche::h3::Connection::with_transport(&mut conn, &h3_cfg).map_err(|e| e.to_string())?);
        }
        if let Some(h) = h3.as_mut() {
            if !page_sent {
                let sid = request(h, &mut conn, &first_path).map_err(|e| e.to_string())?;
                transfers.insert(sid, Transfer::started(first_path.clone(), ms(t0), mode == "page"));
                order.push(sid);
                page_sent = true;
            }
            loop {
                match h.poll(&mut conn) {
                    Ok((sid, quiche::h3::Event::Headers { list, .. })) => {
                        if let Some(t) = transfers.get_mut(&sid) {
                            t.first_byte_ms = Some(ms(t0));
                            t.status = list
                                .iter()
                                .find(|x| x.name() == b":status")
                                .and_then(|x| std::str::from_utf8(x.value()).ok()?.parse().ok());
                        }
                    }
                    Ok((sid, quiche::h3::Event::Data)) => {
                        while let Ok(n) = h.recv_body(&mut conn, sid, &mut body_buf) {
                            total += n as u64;
                            if let Some(t) = transfers.get_mut(&sid) {
                                t.bytes += n as u64;
                                if t.keep {
                                    t.body.extend_from_slice(&body_buf[..n]);
                                }
                            }
                            if mode == "bulk" && goodput.last().map_or(true, |(t, _)| ms(t0) - t >= 10.0) {
                                goodput.push((ms(t0), total));
                            }
                        }
                    }
                    Ok((sid, quiche::h3::Event::Finished)) => {
                        if let Some(t) = transfers.get_mut(&sid) {
                            t.end_ms = Some(ms(t0));
                        }
                    }
                    Ok((sid, quiche::h3::Event::Reset(e))) => return Err(format!("stream {sid} reset ({e})")),
                    Ok(_) => {}
                    Err(quiche::h3::Error::Done) => break,
                    Err(e) => return Err(format!("HTTP/3: {e}")),
                }
            }
            let first = &transfers[&order[0]];
            if first.end_ms.is_some() && mode == "page" && !objects_sent {
                let html = String::from_utf8_lossy(&first.body).into_owned();
                waiting.extend(html.split("src=\"").skip(1).filter_map(|s| s.split('"').next()).map(String::from));
                objects_sent = true;
            }
            while let Some(path) = waiting.front() {
                match request(h, &mut conn, path) {
                    Ok(sid) => {
                        transfers.insert(sid, Transfer::started(path.clone(), ms(t0), false));
                        order.push(sid);
                        waiting.pop_front();
                    }
                    // no stream left under the server's limit, or no room on it yet: the
                    // rest wait for its MAX_STREAMS (or MAX_DATA)
                    Err(quiche::h3::Error::TransportError(quiche::Error::StreamLimit))
                    | Err(quiche::h3::Error::StreamBlocked) => break,
                    Err(e) => return Err(format!("request {path}: {e}")),
                }
            }
            let all_ended = waiting.is_empty() && transfers.values().all(|t| t.end_ms.is_some());
            if (objects_sent || mode == "bulk") && all_ended {
                break;
            }
        }
        flush(&sock, &mut conn, &mut out);
    }
    let plt = ms(t0);
    let objects: Vec<Value> = order
        .iter()
        .map(|sid| {
            let t = &transfers[sid];
            json!({"path": t.path, "status": t.status, "bytes": t.bytes, "start_ms": t.start_ms,
               "first_byte_ms": t.first_byte_ms, "end_ms": t.end_ms})
        })
        .collect();
    doc["ttfb_ms"] = json!(transfers[&order[0]].first_byte_ms);
    doc["objects"] = json!(objects);
    doc["plt_ms"] = json!(plt);
    doc["bytes"] = json!(total);
    doc["goodput"] = json!(goodput.iter().map(|(t, b)| json!([t, b])).collect::<Vec<_>>());
    doc["goodput_mbit"] = json!(total as f64 * 8.0 / 1000.0 / plt);
    if let (Some(path), Some(session)) = (session_file.as_ref(), conn.session()) {
        std::fs::write(path, session).map_err(|e| format!("--session-file: {e}"))?;
    }
    // close, and let the close go out and the qlog be written
    let _ = conn.close(true, 0x100, b"done");
    flush(&sock, &mut conn, &mut out);
    drop(conn);
    let bad: Vec<&str> = transfers.values().filter(|t| t.status != Some(200)).map(|t| t.path.as_str()).collect();
    if !bad.is_empty() {
        doc["error"] = json!(format!("status other than 200 for {}", bad.join(", ")));
        return Ok(1);
    }
    doc["ok"] = json!(true);
    Ok(0)
}
