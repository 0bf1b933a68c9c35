//! The congestion-control knobs the papers calibrate, as one value shared by all connections.

/// Which algorithm runs inside the instrumented wrapper.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    Cubic,
    NewReno,
    Bbr,
}

impl Algorithm {
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "cubic" => Ok(Algorithm::Cubic),
            "newreno" | "reno" => Ok(Algorithm::NewReno),
            "bbr" => Ok(Algorithm::Bbr),
            other => Err(format!("unknown QUIC congestion control '{other}' (cubic|newreno|bbr)")),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Cubic => "cubic",
            Algorithm::NewReno => "newreno",
            Algorithm::Bbr => "bbr",
        }
    }
}

#[derive(Clone, Debug)]
pub struct CcKnobs {
    pub algorithm: Algorithm,
    /// Maximum congestion window in packets (Kakhki et al.: Chromium's MACW, 107 then 430).
    /// `None` = no cap beyond the algorithm's own.
    pub max_cwnd_packets: Option<u64>,
    /// Initial window in packets; `None` = the algorithm's default (quinn: 10 x MTU, >= 14720 B).
    pub initial_window_packets: Option<u64>,
    /// Number of TCP connections one QUIC connection emulates (Chromium's Cubic); 1 = plain.
    pub n_connections: u32,
    /// Requested pacing. quinn always paces (see README "pacing"); recorded in the logs.
    pub pacing: bool,
}

impl Default for CcKnobs {
    fn default() -> Self {
        CcKnobs {
            algorithm: Algorithm::Cubic,
            max_cwnd_packets: None,
            initial_window_packets: None,
            n_connections: 1,
            pacing: true,
        }
    }
}

impl CcKnobs {
    /// True when the algorithm must be our own Cubic (quinn's constants are fixed).
    pub fn needs_own_cubic(&self) -> bool {
        self.algorithm == Algorithm::Cubic && self.n_connections > 1
    }
}
