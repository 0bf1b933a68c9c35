//! What longlook's Rust adapters over hyperium's `h3` share, whatever QUIC stack is under it
//! (msquic, s2n-quic, gm-quic): the harness's flags, the client's page load or bulk download
//! and the fetch JSON it writes (docs/interfaces.md), and the server's files. Each adapter
//! keeps what is its stack's own: setting up, connecting, closing, and its qlog and key log.

pub mod client;
pub mod flags;
pub mod server;

pub use flags::Flags;
