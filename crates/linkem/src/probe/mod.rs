//! linkem-probe: measures the emulated path end to end (see docs/interfaces.md).
//!
//! No dependencies on purpose: the probe must build even when linkem's own crates change, and
//! its wire formats are small enough to write by hand.

pub mod args;
pub mod client;
pub mod congestion;
pub mod json;
pub mod pacing;
pub mod serve;
pub mod sockbuf;
pub mod stalls;
pub mod stats;
pub mod wire;
