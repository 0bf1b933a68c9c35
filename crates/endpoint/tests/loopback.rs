//! End-to-end tests on 127.0.0.1: a real `endpoint serve` and `endpoint fetch` processes.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_endpoint");

struct Server {
    child: Child,
    port: u16,
    spki: String,
    dir: tempfile::TempDir,
}

impl Server {
    fn start(extra: &[&str]) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new(BIN)
            .args(["serve", "--listen", "127.0.0.1:0", "--cert-dir"])
            .arg(dir.path().join("certs"))
            .arg("--log-dir")
            .arg(dir.path().join("logs"))
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        err.read_line(&mut line).unwrap();
        let addr = line.split_whitespace().nth(3).unwrap_or_else(|| panic!("no listen line: {line:?}"));
        let port = addr.rsplit(':').next().unwrap().parse().unwrap();
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in err.lines() {});
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut ready = String::new();
        out.read_line(&mut ready).unwrap();
        let spki =
            ready.trim().strip_prefix("ready spki=").unwrap_or_else(|| panic!("bad ready line {ready:?}")).to_string();
        Server { child, port, spki, dir }
    }

    fn certs(&self) -> PathBuf {
        self.dir.path().join("certs")
    }

    fn logs(&self) -> PathBuf {
        self.dir.path().join("logs")
    }

    fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    fn fetch(&self, path: &str, proto: &str, extra: &[&str]) -> (i32, Value, String) {
        let url = self.url(path);
        fetch_url(&url, proto, &self.certs(), extra)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn fetch_url(url: &str, proto: &str, certs: &Path, extra: &[&str]) -> (i32, Value, String) {
    let out = Command::new(BIN)
        .args(["fetch", "--url", url, "--proto", proto, "--cert-dir"])
        .arg(certs)
        .args(extra)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let json: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!("fetch printed no JSON ({e}): {stdout:?} {:?}", String::from_utf8_lossy(&out.stderr))
    });
    (out.status.code().unwrap_or(-1), json, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Wait until the server has flushed a log file containing `needle`.
fn wait_for_log(dir: &Path, suffix: &str, needle: &str) -> String {
    for _ in 0..100 {
        if let Ok(rd) = std::fs::read_dir(dir) {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.ends_with(suffix) && !(suffix == ".sqlog" && name.ends_with(".tcp.sqlog")) {
                    let text = std::fs::read_to_string(e.path()).unwrap_or_default();
                    if text.contains(needle) {
                        return text;
                    }
                }
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("no *{suffix} in {} containing {needle}", dir.display());
}

fn check_page(json: &Value, proto: &str) {
    assert_eq!(json["ok"], true, "{json}");
    assert_eq!(json["protocol_requested"], proto);
    assert_eq!(json["protocol"], proto, "negotiated protocol must be the requested one");
    let objects = json["objects"].as_array().unwrap();
    assert_eq!(objects.len(), 11, "HTML + 10 objects");
    for o in &objects[1..] {
        assert_eq!(o["status"], 200);
        assert_eq!(o["bytes"], 10_000);
        assert!(o["end_ms"].as_f64().unwrap() >= o["first_byte_ms"].as_f64().unwrap());
        assert!(o["first_byte_ms"].as_f64().unwrap() >= o["start_ms"].as_f64().unwrap());
    }
    assert!(json["bytes"].as_u64().unwrap() > 100_000);
    let plt = json["plt_ms"].as_f64().unwrap();
    assert!(plt > 0.0 && plt >= json["handshake_ms"].as_f64().unwrap());
    assert!(json["local_addr"].as_str().unwrap().starts_with("127.0.0.1:"));
}

#[test]
fn h3_page_load_negotiates_h3_and_logs_congestion_states() {
    let s = Server::start(&[]);
    let (code, json, err) = s.fetch("/page/10x10k.html", "h3", &["--run-id", "run-h3"]);
    assert_eq!(code, 0, "{err}");
    check_page(&json, "h3");
    assert_eq!(json["run_id"], "run-h3");
    let qlog = wait_for_log(&s.logs(), ".sqlog", "longlook:loss_summary");
    assert!(qlog.starts_with('\u{1e}'), "JSON-SEQ record separator first");
    let header: Value = serde_json::from_str(qlog[1..].lines().next().unwrap()).unwrap();
    assert_eq!(header["qlog_format"], "JSON-SEQ");
    assert!(qlog.contains("\"name\":\"recovery:congestion_state_updated\""));
    assert!(qlog.contains("\"old\":\"Init\""));
    assert!(qlog.contains("\"name\":\"recovery:metrics_updated\""));
    for rec in qlog.split('\u{1e}').skip(1) {
        serde_json::from_str::<Value>(rec.trim_end()).unwrap_or_else(|e| panic!("bad record {rec:?}: {e}"));
    }
    let conns = wait_for_log(&s.logs(), "connections.jsonl", "run-h3");
    let line: Value = serde_json::from_str(conns.lines().find(|l| l.contains("run-h3")).unwrap()).unwrap();
    assert_eq!(line["protocol"], "h3");
    assert!(s.logs().join(format!("{}.sqlog", line["conn"].as_str().unwrap())).exists());
}

#[test]
fn h2_page_load_negotiates_h2_and_samples_tcp_info() {
    let s = Server::start(&["--tcp-cc", "cubic"]);
    let (code, json, err) = s.fetch("/page/10x10k.html", "h2", &["--run-id", "run-h2"]);
    assert_eq!(code, 0, "{err}");
    check_page(&json, "h2");
    let tcp = wait_for_log(&s.logs(), ".tcp.sqlog", "longlook:tcp_info_summary");
    assert!(tcp.contains("\"algorithm\":\"cubic\""));
    assert!(tcp.contains("\"name\":\"recovery:congestion_state_updated\""));
    assert!(tcp.contains("\"new\":\"Open\""));
    assert!(tcp.contains("\"name\":\"recovery:metrics_updated\""));
    assert!(tcp.contains("\"congestion_window\":"));
    assert!(tcp.contains("\"delivery_rate\":"));
    let conns = wait_for_log(&s.logs(), "connections.jsonl", "run-h2");
    assert!(conns.contains("\"protocol\":\"h2\""));
}

#[test]
fn bulk_mode_reports_goodput_over_time() {
    let s = Server::start(&["--cc", "newreno"]);
    for proto in ["h3", "h2"] {
        let (code, json, err) = s.fetch("/bulk/3m", proto, &["--mode", "bulk", "--goodput-interval-ms", "1"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(json["bytes"], 3_000_000);
        let g = json["goodput"].as_array().unwrap();
        assert!(!g.is_empty());
        assert_eq!(g.last().unwrap()[1], 3_000_000);
        assert!(g.windows(2).all(|w| w[0][1].as_u64() <= w[1][1].as_u64()));
    }
}

#[test]
fn missing_object_names_path_and_status() {
    let s = Server::start(&[]);
    for proto in ["h3", "h2"] {
        let (code, json, _) = s.fetch("/obj/10k/nope.jpg", proto, &[]);
        assert_eq!(code, 1);
        assert_eq!(json["ok"], false);
        let e = json["error"].as_str().unwrap();
        assert!(e.contains("/obj/10k/nope.jpg") && e.contains("404"), "{e}");
    }
}

#[test]
fn page_with_a_missing_object_fails_naming_it() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("p.html"), "<img src=\"/obj/5k/0.jpg\"><img src=\"/missing.png\">").unwrap();
    let s = Server::start(&["--root", root.path().to_str().unwrap()]);
    let (code, json, _) = s.fetch("/p.html", "h3", &[]);
    assert_eq!(code, 1);
    let e = json["error"].as_str().unwrap();
    assert!(e.contains("/missing.png") && e.contains("404"), "{e}");
    assert_eq!(json["objects"].as_array().unwrap().len(), 3);
}

#[test]
fn malformed_url_is_named() {
    let certs = tempfile::tempdir().unwrap();
    let (code, json, _) = fetch_url("https//127.0.0.1:1/x", "h3", certs.path(), &["--insecure"]);
    assert_eq!(code, 1);
    assert!(json["error"].as_str().unwrap().contains("malformed URL 'https//127.0.0.1:1/x'"));
}

#[test]
fn unreachable_peer_is_a_failure_with_its_phase_not_a_mismatch() {
    // Nothing answers on UDP: the QUIC handshake times out. Nothing listens on TCP: the
    // connect fails. Neither is the server choosing another protocol (exit 3).
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("https://127.0.0.1:{}/", l.local_addr().unwrap().port());
    let certs = tempfile::tempdir().unwrap();
    let (code, json, _) = fetch_url(&url, "h3", certs.path(), &["--insecure", "--timeout-s", "2"]);
    assert_eq!(code, 1, "{json}");
    assert_eq!(json["ok"], false);
    assert_eq!(json["failure_phase"], "handshake", "{json}");
    assert!(json["protocol"].is_null());
    drop(l);
    let (code, json, _) = fetch_url(&url, "h2", certs.path(), &["--insecure", "--timeout-s", "2"]);
    assert_eq!(code, 1, "{json}");
    assert_eq!(json["failure_phase"], "connect", "{json}");
}

#[test]
fn a_server_without_the_protocol_is_a_mismatch_exit_3() {
    // A TLS server that speaks only http/1.1: connected, and h2 is refused.
    let certs = tempfile::tempdir().unwrap();
    let ok = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-subj",
            "/CN=localhost",
            "-days",
            "1",
            "-keyout",
        ])
        .arg(certs.path().join("key.pem"))
        .arg("-out")
        .arg(certs.path().join("cert.pem"))
        .output()
        .expect("openssl req");
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut tls = Command::new("openssl")
        .args(["s_server", "-quiet", "-tls1_3", "-alpn", "http/1.1", "-accept", &port.to_string()])
        .arg("-cert")
        .arg(certs.path().join("cert.pem"))
        .arg("-key")
        .arg(certs.path().join("key.pem"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("openssl s_server");
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let url = format!("https://127.0.0.1:{port}/");
    let (code, json, _) = fetch_url(&url, "h2", certs.path(), &["--insecure", "--timeout-s", "3"]);
    let _ = tls.kill();
    let _ = tls.wait(); // reap it: a killed child left unwaited stays a zombie until the test binary exits
    assert_eq!(code, 3, "{json}");
    assert_eq!(json["ok"], false);
}

#[test]
fn an_out_of_range_port_is_refused_not_replaced_by_443() {
    let certs = tempfile::tempdir().unwrap();
    let (code, json, _) = fetch_url("https://127.0.0.1:99999/", "h2", certs.path(), &["--insecure"]);
    assert_eq!(code, 1, "{json}");
    assert!(json["error"].as_str().unwrap().contains("port '99999'"), "{json}");
    assert_eq!(json["failure_phase"], "setup");
}

#[test]
fn second_connection_sends_0rtt_and_it_is_accepted() {
    let s = Server::start(&[]);
    let (code, json, err) = s.fetch("/page/10x10k.html", "h3", &["--zero-rtt", "--run-id", "z"]);
    assert_eq!(code, 0, "{err}");
    check_page(&json, "h3");
    assert_eq!(json["zero_rtt"]["attempted"], true);
    assert_eq!(json["zero_rtt"]["accepted"], true);
    // our server sends two tickets (send_tls13_tickets = 2), both allowing early data
    assert_eq!(
        (json["zero_rtt"]["tickets"].as_u64(), json["zero_rtt"]["early_data_tickets"].as_u64()),
        (Some(2), Some(2)),
        "{json}"
    );
    // Not asserted: the HTML request going out before the handshake completed. On loopback
    // the handshake (~0.8 ms) can beat setting up HTTP/3; over a 36 ms path it cannot, and
    // tests/testbed/kinds/test_conformance_testbed.py asserts the order there.
    let conns = wait_for_log(&s.logs(), "connections.jsonl", "\"z\"");
    assert!(conns.contains("z-warmup"));
}

#[test]
fn resumed_connection_presents_the_warm_up_s_address_validation_token() {
    let s = Server::start(&[]);
    let (code, json, err) = s.fetch("/page/200x5k.html", "h3", &["--zero-rtt"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json["zero_rtt"]["accepted"], true, "{json}");
    // our server sends two NEW_TOKEN frames per connection; the measured connection, sharing
    // the warm-up's token store, sends one in its Initial
    assert_eq!(json["zero_rtt"]["tokens"], 2, "{json}");
    assert_eq!(json["zero_rtt"]["token_presented"], true, "{json}");
    // without --zero-rtt there is no warm-up, so nothing to present, and nothing reported
    let (code, json, err) = s.fetch("/page/1x5k.html", "h3", &[]);
    assert_eq!(code, 0, "{err}");
    assert!(json["zero_rtt"].get("token_presented").is_none(), "{json}");
}

#[test]
fn a_server_that_answers_before_the_request_s_end_fails_no_request() {
    // On loopback with 0-RTT our server answers a small object before the client's FIN has
    // arrived. It used to drop the request unread (quinn then stops it: STOP_SENDING 0),
    // and h3's client, writing its GREASE frame before the FIN, failed the delivered
    // response ("Remote reset: 0x0"; 1 fetch in 5-30 here). The server now reads the
    // request's end, and the client keeps a response whose request was stopped (RFC 9114
    // §4.1). 30 page loads of 200 objects each: none may fail.
    let s = Server::start(&[]);
    for i in 0..30 {
        let (code, json, err) = s.fetch("/page/200x5k.html", "h3", &["--zero-rtt"]);
        assert_eq!(code, 0, "load {i}: {err}");
        assert_eq!(json["zero_rtt"]["accepted"], true, "{json}");
    }
}

#[test]
fn client_qlog_traces_the_measured_connection_only() {
    let s = Server::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("client.sqlog");
    let (code, json, err) = s.fetch("/page/10x10k.html", "h3", &["--zero-rtt", "--qlog", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json["zero_rtt"]["accepted"], true, "the traced connection still resumes: {json}");
    assert_eq!(json["artifacts"]["client_qlog"], path.to_str().unwrap());
    let qlog = std::fs::read_to_string(&path).unwrap();
    let header: Value = serde_json::from_str(qlog[1..].lines().next().unwrap()).unwrap();
    assert_eq!(header["trace"]["vantage_point"]["type"], "client");
    for rec in qlog.split('\u{1e}').skip(1) {
        serde_json::from_str::<Value>(rec.trim_end()).unwrap_or_else(|e| panic!("bad record {rec:?}: {e}"));
    }
    // quinn's packet events and our controller's recovery events, of one connection: the
    // measured one, which received the page's 10 x 10 kB (the warm-up only fetches "/").
    // Not asserted: a 0RTT packet. On loopback the handshake can finish before the request
    // is written, and quinn then sends it in 1-RTT although the server accepted 0-RTT.
    assert!(qlog.contains("\"name\":\"recovery:metrics_updated\""));
    // quinn logs no size for a received packet: count them. 100 kB needs at least 69
    // full-sized 1-RTT packets; "/" fits in a few.
    let received = qlog
        .split('\u{1e}')
        .filter_map(|rec| serde_json::from_str::<Value>(rec.trim_end()).ok())
        .filter(|e| e["name"] == "transport:packet_received" && e["data"]["header"]["packet_type"] == "1RTT")
        .count();
    assert!(received >= 69, "the traced connection received {received} 1-RTT packets, not the page");
    assert_eq!(
        qlog.matches("\"name\":\"recovery:congestion_state_updated\",\"data\":{\"old\":\"Init\"").count(),
        1,
        "one connection"
    );
}

#[test]
fn spki_matches_openssl() {
    let s = Server::start(&[]);
    let cert = s.certs().join("cert.pem");
    let out = Command::new(BIN).args(["spki", "--cert"]).arg(&cert).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), s.spki);
    let pipeline = format!(
        "openssl x509 -in {} -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64",
        cert.display()
    );
    if let Ok(o) = Command::new("sh").args(["-c", &pipeline]).output() {
        if o.status.success() {
            assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), s.spki);
        }
    }
}

#[test]
fn n_connection_cubic_and_cap_run_end_to_end() {
    let s = Server::start(&["--n-conn", "2", "--max-cwnd-packets", "107", "--initial-window-packets", "32"]);
    let (code, json, err) = s.fetch("/bulk/2m", "h3", &["--mode", "bulk"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json["bytes"], 2_000_000);
    let q = wait_for_log(&s.logs(), ".sqlog", "longlook:loss_summary");
    assert!(q.contains("\"n_connections\":2"));
    assert!(q.contains("\"max_cwnd_packets\":107"));
    assert!(q.contains("\"initial_window_bytes\":38400"));
}

#[test]
fn bad_serve_options_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--tcp-cc", "no-such-cc", "--cert-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not available"));
}

/// Needs a mounted tracefs: `LL_TRACEFS=DIR` or /sys/kernel/tracing; skipped otherwise.
#[test]
fn tcp_states_from_tracepoint_when_tracefs_is_available() {
    let tracefs = std::env::var("LL_TRACEFS").unwrap_or_else(|_| "/sys/kernel/tracing".into());
    if !Path::new(&tracefs).join("events/tcp/tcp_cong_state_set").exists() {
        eprintln!("skipped: no tracefs with tcp:tcp_cong_state_set at {tracefs}");
        return;
    }
    let mut s = Server::start(&["--tcp-tracefs", &tracefs]);
    let instance = Path::new(&tracefs).join("instances").join(format!("ll-endpoint-{}", s.child.id()));
    assert!(instance.exists());
    let (code, _, err) = s.fetch("/bulk/1m", "h2", &["--mode", "bulk"]);
    assert_eq!(code, 0, "{err}");
    let tcp = wait_for_log(&s.logs(), ".tcp.sqlog", "longlook:tcp_info_summary");
    assert!(tcp.contains("TCP_INFO+tracepoint"));
    Command::new("kill").args(["-TERM", &s.child.id().to_string()]).status().unwrap();
    s.child.wait().unwrap();
    assert!(!instance.exists(), "tracefs instance removed at exit");
}

#[test]
fn a_quic_client_moves_to_another_address_mid_transfer_and_finishes() {
    // 127.0.0.2 is the client's second address (all of 127/8 is local): the QUIC connection
    // moves there 20 ms in, while 100 MB are still coming
    let s = Server::start(&[]);
    let moving = ["--mode", "bulk", "--migrate-at-ms", "20", "--migrate-to", "127.0.0.2"];
    let (code, json, err) = s.fetch("/bulk/100m", "h3", &moving);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json["bytes"], 100_000_000);
    let m = &json["migration"];
    let at = m["at_ms"].as_f64().unwrap_or_else(|| panic!("did not move: {m}"));
    assert!((20.0..1000.0).contains(&at), "{m}");
    assert!(m["to"].as_str().unwrap().starts_with("127.0.0.2:"), "{m}");
    assert!(json["plt_ms"].as_f64().unwrap() > at, "the transfer was still going when it moved: {json}");
    // TCP cannot move its connection: it drops it, connects again from the new address and
    // asks for the rest of the object with a range request
    let (code, json, err) = s.fetch("/bulk/100m", "h2", &moving);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json["bytes"], 100_000_000, "{json}");
    let m = &json["migration"];
    let (at, up) = (m["at_ms"].as_f64().unwrap(), m["reconnected_ms"].as_f64().unwrap());
    assert!((20.0..1000.0).contains(&at) && up > at, "{m}");
    assert!(m["to"].as_str().unwrap().starts_with("127.0.0.2:"), "{m}");
    assert_eq!(m["range_requests"], 1, "{m}");
    assert_eq!(json["objects"][0]["status"], 200, "the object's own status, not the 206 that resumed it");
    // a page: its objects cut by the move resume too
    let (code, json, err) = s.fetch("/page/8x10m.html", "h2", &["--migrate-at-ms", "20", "--migrate-to", "127.0.0.2"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json["bytes"].as_u64().unwrap(), 8 * 10_000_000 + json["objects"][0]["bytes"].as_u64().unwrap());
    let m = &json["migration"];
    assert!(m["range_requests"].as_u64().unwrap() >= 1, "objects were under way when it moved: {m}");
}
