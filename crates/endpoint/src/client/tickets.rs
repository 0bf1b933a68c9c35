//! The client's TLS session store, counting the TLS 1.3 session tickets servers send and how
//! many of them allow early data. Without a ticket that allows it, quinn cannot send 0-RTT;
//! the count tells "the server sent no ticket" from "its tickets allow no early data"
//! (`zero_rtt.tickets`, `zero_rtt.early_data_tickets` in the fetch report).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use rustls::client::{ClientSessionMemoryCache, ClientSessionStore, Tls12ClientSessionValue, Tls13ClientSessionValue};
use rustls::pki_types::ServerName;
use rustls::NamedGroup;

/// As many sessions as rustls keeps by default (`Resumption::in_memory_sessions(256)`).
const SESSIONS: usize = 256;

#[derive(Debug)]
pub struct TicketLog {
    inner: ClientSessionMemoryCache,
    tickets: AtomicU32,
    early_data: AtomicU32,
}

impl TicketLog {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            inner: ClientSessionMemoryCache::new(SESSIONS),
            tickets: AtomicU32::new(0),
            early_data: AtomicU32::new(0),
        })
    }

    /// (tickets received, of which allow early data), over every connection so far.
    pub fn counts(&self) -> (u32, u32) {
        (self.tickets.load(Ordering::Relaxed), self.early_data.load(Ordering::Relaxed))
    }
}

impl ClientSessionStore for TicketLog {
    fn set_kx_hint(&self, server_name: ServerName<'static>, group: NamedGroup) {
        self.inner.set_kx_hint(server_name, group)
    }

    fn kx_hint(&self, server_name: &ServerName<'_>) -> Option<NamedGroup> {
        self.inner.kx_hint(server_name)
    }

    fn set_tls12_session(&self, server_name: ServerName<'static>, value: Tls12ClientSessionValue) {
        self.inner.set_tls12_session(server_name, value)
    }

    fn tls12_session(&self, server_name: &ServerName<'_>) -> Option<Tls12ClientSessionValue> {
        self.inner.tls12_session(server_name)
    }

    fn remove_tls12_session(&self, server_name: &ServerName<'static>) {
        self.inner.remove_tls12_session(server_name)
    }

    fn insert_tls13_ticket(&self, server_name: ServerName<'static>, value: Tls13ClientSessionValue) {
        self.tickets.fetch_add(1, Ordering::Relaxed);
        if value.max_early_data_size() > 0 {
            self.early_data.fetch_add(1, Ordering::Relaxed);
        }
        self.inner.insert_tls13_ticket(server_name, value)
    }

    fn take_tls13_ticket(&self, server_name: &ServerName<'static>) -> Option<Tls13ClientSessionValue> {
        self.inner.take_tls13_ticket(server_name)
    }
}
