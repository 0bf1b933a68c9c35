//! linkem: a userspace link emulator for the longlook router namespace.
//!
//! Packets reach it through one of two datapaths behind one trait (`datapath`): packet
//! sockets, linkem forwarding itself (`afpacket`), or NFQUEUE, the kernel forwarding and linkem
//! releasing each packet by a delayed verdict (`nfqueue`). See README.md for the models and
//! docs/interfaces.md for the command-line, config and stats contract.

/// `eprintln!` that never panics: on a full disk the stderr file cannot take the line, and
/// a link emulator must keep the link up rather than die over a log message.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

pub mod afpacket;
pub mod cadence;
pub mod config;
pub mod config_aqm;
pub mod config_handover;
pub mod config_nat;
pub mod datapath;
pub mod engine;
pub mod flows;
pub mod handover;
pub mod model;
pub mod nat;
pub mod nfqueue;
pub mod packet;
pub mod pcap;
pub mod phase;
pub mod rng;
pub mod sojourn;
pub mod stats;
pub mod sys;
pub mod trace;
pub mod userfile;
