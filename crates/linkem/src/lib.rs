//! linkem: a userspace link emulator for the longlook router namespace.
//!
//! Packets reach it through NFQUEUE (one queue per direction) and leave by delayed verdicts;
//! the kernel keeps routing. See README.md for the models and docs/interfaces.md for the
//! command-line, config and stats contract.

pub mod config;
pub mod engine;
pub mod flows;
pub mod model;
pub mod nfqueue;
pub mod packet;
pub mod pcap;
pub mod rng;
pub mod stats;
pub mod sys;
pub mod trace;
