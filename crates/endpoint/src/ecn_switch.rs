//! The endpoint's ECN switch. quinn always sends ECT(0) where the platform lets it, and
//! validates the path (RFC 9000 §13.4.2); it has no setting to turn that off. A scenario that
//! compares QUIC with ECN against QUIC (or TCP) without it needs one, so with `--no-ecn` the
//! endpoint's UDP socket clears the codepoint of every datagram it sends. quinn then sees
//! its peer acknowledge packets without ECN counts and stops marking them itself (path
//! validation failed), as it would over a path that bleaches the field; received marks are
//! still read and reported, so the peer's own ECN is untouched.

use std::fmt;
use std::io::{self, IoSliceMut};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use quinn::udp::{RecvMeta, Transmit};
use quinn::{AsyncUdpSocket, Runtime, UdpPoller};

/// A socket that sends every datagram as not-ECT; everything else is the wrapped socket's.
struct NotEct(Arc<dyn AsyncUdpSocket>);

impl fmt::Debug for NotEct {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("NotEct").field(&self.0).finish()
    }
}

impl AsyncUdpSocket for NotEct {
    fn create_io_poller(self: Arc<Self>) -> Pin<Box<dyn UdpPoller>> {
        self.0.clone().create_io_poller()
    }

    fn try_send(&self, transmit: &Transmit) -> io::Result<()> {
        self.0.try_send(&Transmit { ecn: None, ..*transmit })
    }

    fn poll_recv(
        &self,
        cx: &mut Context,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        self.0.poll_recv(cx, bufs, meta)
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.0.local_addr()
    }

    fn max_transmit_segments(&self) -> usize {
        self.0.max_transmit_segments()
    }

    fn max_receive_segments(&self) -> usize {
        self.0.max_receive_segments()
    }

    fn may_fragment(&self) -> bool {
        self.0.may_fragment()
    }
}

/// A quinn endpoint on `socket`; with `ecn` false, every datagram it sends is not-ECT.
pub fn endpoint(
    config: quinn::EndpointConfig,
    server: Option<quinn::ServerConfig>,
    socket: std::net::UdpSocket,
    ecn: bool,
) -> io::Result<quinn::Endpoint> {
    let runtime: Arc<dyn Runtime> = Arc::new(quinn::TokioRuntime);
    let mut wrapped = runtime.wrap_udp_socket(socket)?;
    if !ecn {
        wrapped = Arc::new(NotEct(wrapped));
    }
    quinn::Endpoint::new_with_abstract_socket(config, server, wrapped, runtime)
}

/// Move `endpoint` to `socket` (quinn's `rebind`), keeping the ECN switch: quinn's own
/// `rebind` would wrap the socket without it.
pub fn rebind(endpoint: &quinn::Endpoint, socket: std::net::UdpSocket, ecn: bool) -> io::Result<()> {
    let runtime: Arc<dyn Runtime> = Arc::new(quinn::TokioRuntime);
    let mut wrapped = runtime.wrap_udp_socket(socket)?;
    if !ecn {
        wrapped = Arc::new(NotEct(wrapped));
    }
    endpoint.rebind_abstract(wrapped)
}
