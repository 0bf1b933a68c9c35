//! What ties the records of one run together across server, client and proxy: the request
//! header carrying the run id, and the wall clock (Unix ms) their JSON records are stamped with.

use std::time::{SystemTime, UNIX_EPOCH};

/// Header carrying the run id a connection belongs to.
pub const RUN_HEADER: &str = "x-longlook-run";

pub fn unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}
