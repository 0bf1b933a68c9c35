//! What a fetch does once connected: a page (HTML, then all its objects concurrently over
//! the one connection, as a browser does) or one bulk object with goodput over time.

use std::time::Instant;

use super::output::{FetchReport, ObjectTiming};
use super::{Conn, FetchError, Goodput, Mode, Phase, Settings, Target};
use crate::content::extract_srcs;

/// Resolve an object reference from the page to a path on the same origin.
pub fn object_path(page_path: &str, src: &str) -> String {
    if let Some(rest) = src.strip_prefix("https://").or_else(|| src.strip_prefix("http://")) {
        return rest.find('/').map(|i| rest[i..].to_string()).unwrap_or_else(|| "/".into());
    }
    if src.starts_with('/') {
        return src.to_string();
    }
    let dir = &page_path[..page_path.rfind('/').map(|i| i + 1).unwrap_or(0)];
    format!("{dir}{src}")
}

fn check_status(t: &ObjectTiming) -> Result<(), FetchError> {
    if t.status != 200 {
        return Err(FetchError::Failed(Phase::Request, format!("GET {} failed: status {}", t.path, t.status)));
    }
    Ok(())
}

pub async fn load(
    conn: Conn,
    target: &Target,
    t0: Instant,
    s: &Settings,
    report: &mut FetchReport,
) -> Result<(), FetchError> {
    let run_id = s.run_id.as_deref();
    match s.mode {
        Mode::Bulk => {
            let mut g = Goodput::new(t0, s.goodput_interval);
            g.deadline = s.duration.map(|d| t0 + d);
            let mut c = conn;
            let f = c.get(target, &target.path, run_id, t0, false, Some(&mut g)).await?;
            g.finish();
            report.stopped_early = g.stopped_early;
            report.ttfb_ms = f.timing.first_byte_ms;
            report.goodput = g.samples;
            report.objects.push(f.timing);
            check_status(report.objects.last().unwrap())?;
        }
        Mode::Session => session(conn, target, t0, s, report).await?,
        Mode::Page => {
            let mut c = conn.clone();
            let html = c.get(target, &target.path, run_id, t0, true, None).await?;
            report.ttfb_ms = html.timing.first_byte_ms;
            report.objects.push(html.timing.clone());
            check_status(&html.timing)?;
            let text = String::from_utf8_lossy(html.body.as_deref().unwrap_or_default()).into_owned();
            let paths: Vec<String> = extract_srcs(&text).iter().map(|src| object_path(&target.path, src)).collect();
            let fetches = paths.into_iter().map(|p| {
                let mut c = conn.clone();
                let target = target.clone();
                let run_id = s.run_id.clone();
                tokio::spawn(async move { c.get(&target, &p, run_id.as_deref(), t0, false, None).await })
            });
            let results = futures_util::future::join_all(fetches).await;
            let mut first_err = None;
            for r in results {
                match r {
                    Ok(Ok(f)) => {
                        if first_err.is_none() {
                            first_err = check_status(&f.timing).err();
                        }
                        report.objects.push(f.timing);
                    }
                    Ok(Err(e)) => first_err = first_err.or(Some(e)),
                    Err(e) => {
                        first_err = first_err.or(Some(FetchError::Failed(Phase::Transfer, format!("object task: {e}"))))
                    }
                }
            }
            if let Some(e) = first_err {
                finish(report);
                return Err(e);
            }
        }
    }
    finish(report);
    Ok(())
}

/// `--mode session`: a `ready` line once connected, then for each path read from stdin one
/// GET on the same connection and one JSON line (the object's timing) on stdout, until EOF.
async fn session(
    conn: Conn,
    target: &Target,
    t0: Instant,
    s: &Settings,
    report: &mut FetchReport,
) -> Result<(), FetchError> {
    use std::io::Write;
    use tokio::io::AsyncBufReadExt;
    let say = |line: String| {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    };
    say(serde_json::json!({"ready": true, "handshake_ms": report.handshake_ms}).to_string());
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    let mut c = conn;
    while let Some(line) = lines.next_line().await.map_err(super::failed(super::Phase::Setup, "reading stdin"))? {
        let path = line.trim();
        if path.is_empty() {
            continue;
        }
        let f = c.get(target, path, s.run_id.as_deref(), t0, false, None).await?;
        if report.objects.is_empty() {
            report.ttfb_ms = f.timing.first_byte_ms;
        }
        say(serde_json::to_string(&f.timing).expect("timing serialises"));
        report.objects.push(f.timing);
    }
    Ok(())
}

fn finish(report: &mut FetchReport) {
    report.bytes = report.objects.iter().map(|o| o.bytes).sum();
    report.plt_ms = report.objects.iter().map(|o| o.end_ms).fold(0.0, f64::max);
    if report.plt_ms > 0.0 {
        report.goodput_mbit = super::round3(report.bytes as f64 * 8.0 / (report.plt_ms * 1000.0));
    }
}

#[cfg(test)]
mod tests {
    use super::object_path;

    #[test]
    fn object_paths() {
        assert_eq!(object_path("/page/2x5k.html", "/obj/5k/0.jpg"), "/obj/5k/0.jpg");
        assert_eq!(object_path("/site/index.html", "img/a.png"), "/site/img/a.png");
        assert_eq!(object_path("/x.html", "https://h:1/a/b"), "/a/b");
    }
}
