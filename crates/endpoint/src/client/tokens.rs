//! The client's address-validation token store (RFC 9000 §8.1.3), counting the tokens servers
//! send in NEW_TOKEN frames and the ones connections present in their Initial. A resumed
//! connection that presents one lets the server send more than 3x what the client sent before
//! the handshake validates its address (§8.1); the counts say whether that happened
//! (`zero_rtt.tokens`, `zero_rtt.token_presented` in the fetch report).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use bytes::Bytes;

pub struct CountingTokenStore {
    inner: quinn::TokenMemoryCache,
    received: AtomicU32,
    presented: AtomicU32,
}

impl CountingTokenStore {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            inner: quinn::TokenMemoryCache::default(),
            received: AtomicU32::new(0),
            presented: AtomicU32::new(0),
        })
    }

    /// Tokens received in NEW_TOKEN frames, over every connection so far.
    pub fn received(&self) -> u32 {
        self.received.load(Ordering::Relaxed)
    }

    /// Tokens taken by new connections to send in their Initial packets.
    pub fn presented(&self) -> u32 {
        self.presented.load(Ordering::Relaxed)
    }
}

impl quinn::TokenStore for CountingTokenStore {
    fn insert(&self, server_name: &str, token: Bytes) {
        self.received.fetch_add(1, Ordering::Relaxed);
        self.inner.insert(server_name, token)
    }

    fn take(&self, server_name: &str) -> Option<Bytes> {
        let token = self.inner.take(server_name);
        if token.is_some() {
            self.presented.fetch_add(1, Ordering::Relaxed);
        }
        token
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quinn::TokenStore;

    #[test]
    fn counts_tokens_received_and_presented() {
        let s = CountingTokenStore::new();
        assert_eq!(s.take("a"), None);
        s.insert("a", Bytes::from_static(b"t1"));
        s.insert("a", Bytes::from_static(b"t2"));
        assert!(s.take("b").is_none());
        assert!(s.take("a").is_some());
        assert_eq!((s.received(), s.presented()), (2, 1));
    }
}
