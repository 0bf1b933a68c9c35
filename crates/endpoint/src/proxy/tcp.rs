//! The split-connection TCP proxy: one TCP connection from the client ends here, a second
//! one to the origin carries the same bytes. Each connection's own congestion control runs
//! over one segment only, so losses on one are recovered within that segment's RTT.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use tokio::net::{TcpListener, TcpStream};

use super::log::{ms, ProxyLog};
use crate::run::unix_ms;

pub async fn bind(addr: SocketAddr) -> Result<TcpListener> {
    let sock = socket2::Socket::new(socket2::Domain::for_address(addr), socket2::Type::STREAM, None)?;
    sock.set_reuse_address(true)?;
    sock.bind(&addr.into()).with_context(|| format!("binding TCP {addr}"))?;
    sock.listen(1024)?;
    sock.set_nonblocking(true)?;
    Ok(TcpListener::from_std(sock.into())?)
}

/// linux/netfilter_ipv4.h: the destination a connection had before nat REDIRECT.
const SO_ORIGINAL_DST: libc::c_int = 80;

fn original_dst(s: &TcpStream) -> std::io::Result<SocketAddr> {
    let mut addr: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: a valid socket and an output buffer of the size passed.
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_IP,
            SO_ORIGINAL_DST,
            &mut addr as *mut _ as *mut libc::c_void,
            &mut len,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(SocketAddr::V4(SocketAddrV4::new(
        Ipv4Addr::from(u32::from_be(addr.sin_addr.s_addr)),
        u16::from_be(addr.sin_port),
    )))
}

/// Where a client's connection goes: `--origin`, else its original destination (which must
/// not be the proxy itself: that means no REDIRECT brought it here).
fn destination(client: &TcpStream, origin: Option<SocketAddr>) -> Result<SocketAddr> {
    if let Some(o) = origin {
        return Ok(o);
    }
    let dst = original_dst(client).context("SO_ORIGINAL_DST (no nat REDIRECT to this proxy?)")?;
    if dst == client.local_addr()? {
        bail!("connection was made to the proxy itself and no --origin is set");
    }
    Ok(dst)
}

pub async fn serve(listener: TcpListener, origin: Option<SocketAddr>, log: ProxyLog) -> Result<()> {
    loop {
        let (client, peer) = listener.accept().await?;
        let log = log.clone();
        tokio::spawn(async move { relay(client, peer, origin, log).await });
    }
}

/// Copy one direction until EOF (then pass the half-close on) or an error: (bytes, error).
async fn pump<R, W>(mut r: R, mut w: W, stop: &tokio::sync::watch::Sender<bool>) -> (u64, Option<String>)
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    let mut stopped = stop.subscribe();
    loop {
        let read = tokio::select! {
            r = r.read(&mut buf) => r,
            _ = stopped.wait_for(|s| *s) => return (total, None),
        };
        match read {
            Ok(0) => {
                let _ = w.shutdown().await;
                return (total, None);
            }
            Ok(n) => {
                if let Err(e) = w.write_all(&buf[..n]).await {
                    stop.send_replace(true);
                    return (total, Some(format!("write: {e}")));
                }
                total += n as u64;
            }
            Err(e) => {
                stop.send_replace(true);
                return (total, Some(format!("read: {e}")));
            }
        }
    }
}

/// A peer that is gone must end the relay. A client that closes with unread data sends a RST,
/// and a RST is never retransmitted: lost on a lossy segment, it would leave the relay (and
/// its log line) waiting forever on a silent connection. A keepalive probe draws a new RST.
/// Probes after 2 s idle, one a second, the peer dead after three unanswered.
fn keep_alive(s: &TcpStream) {
    let params = socket2::TcpKeepalive::new()
        .with_time(Duration::from_secs(2))
        .with_interval(Duration::from_secs(1))
        .with_retries(3);
    let _ = socket2::SockRef::from(s).set_tcp_keepalive(&params); // best effort, as set_nodelay
}

async fn relay(mut client: TcpStream, peer: SocketAddr, origin: Option<SocketAddr>, log: ProxyLog) {
    let t0 = Instant::now();
    let accept_unix_ms = unix_ms();
    let _ = client.set_nodelay(true);
    keep_alive(&client);
    let mut line = serde_json::json!({"mode": "tcp", "client": peer.to_string(), "accept_unix_ms": accept_unix_ms});
    let result: Result<()> = async {
        let dst = destination(&client, origin)?;
        line["origin"] = dst.to_string().into();
        let mut upstream = TcpStream::connect(dst).await.with_context(|| format!("connecting to origin {dst}"))?;
        line["origin_connect_ms"] = ms(t0.elapsed()).into();
        let _ = upstream.set_nodelay(true);
        keep_alive(&upstream);
        let (cr, cw) = client.split();
        let (ur, uw) = upstream.split();
        // an error on one direction ends the other too (the connection is over)
        let (stop, _) = tokio::sync::watch::channel(false);
        let (up, down) = tokio::join!(pump(cr, uw, &stop), pump(ur, cw, &stop));
        line["bytes_up"] = up.0.into();
        line["bytes_down"] = down.0.into();
        // a peer that resets once it has what it wants (the client at the end) is no failure
        // of the relay; recorded, with the bytes that went through
        if let Some(e) = up.1.or(down.1) {
            line["relay_error"] = e.into();
        }
        Ok(())
    }
    .await;
    line["duration_ms"] = ms(t0.elapsed()).into();
    line["error"] = result.err().map(|e| format!("{e:#}")).into();
    log.write(line);
}
