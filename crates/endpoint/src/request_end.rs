//! The end of an HTTP/3 request stream, on both sides (RFC 9114 §4.1).
//!
//! A server may answer before it has read the request's end, then stop reading it
//! (STOP_SENDING); a client must not discard the response for that. h3's client writes a
//! GREASE frame before its FIN, and that write is what fails with the server's code, so the
//! client treats a stop there as the end of its request. The server reads the request to its
//! end instead of dropping it unread (quinn would stop it with code 0): a GET's FIN follows its
//! headers at once, and clients that do fail on a stop keep their responses.

use bytes::Buf;
use h3::error::StreamError;
use h3::quic::{BidiStream, RecvStream};

/// Finish the client's request; a peer that already stopped reading it is not an error.
pub async fn finish_request<S: BidiStream<B>, B: Buf>(
    stream: &mut h3::client::RequestStream<S, B>,
) -> Result<(), StreamError> {
    match stream.finish().await {
        Err(StreamError::RemoteTerminate { .. }) => Ok(()),
        other => other,
    }
}

/// Read what is left of the request (its end) after the response was sent.
pub async fn read_request_end<S: RecvStream, B: Buf>(stream: &mut h3::server::RequestStream<S, B>) {
    while let Ok(Some(_)) = stream.recv_data().await {}
}
