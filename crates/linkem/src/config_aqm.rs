//! The link config's `aqm` table: an active queue management discipline in front of a
//! direction's bottleneck (`crate::model::aqm`), in place of plain drop-tail. Like the other
//! sub-tables it is set at the top level for both directions or per direction, and replaced
//! whole. `buffer_bytes` / `buffer_packets` stay the queue's hard limit (tail drop).
//!
//! ```toml
//! [down.aqm]
//! discipline = "codel"      # or "pie", "fq_codel", "dualpi2"
//! ecn = true                # mark ECN-capable packets CE instead of dropping them
//! target_ms = 5             # CoDel: RFC 8289's defaults
//! interval_ms = 100
//! ```
//!
//! PIE's keys and RFC 8033's defaults: `target_ms = 15`, `t_update_ms = 15`,
//! `alpha = 0.125`, `beta = 1.25`, `max_burst_ms = 150`, `mark_ecn_threshold = 0.1`.
//! FQ-CoDel's (RFC 8290): CoDel's two, `quantum_bytes = 1514`, `flows = 1024`; its packet
//! limit is `buffer_packets` (or `buffer_bytes` / 1514), 10240 when neither is set.
//! DualPI2's (RFC 9332 Appendix A): `coupling_factor = 2`, `target_ms = 15`,
//! `rtt_max_ms = 100`, then `t_update_ms = min(target, rtt_max / 3)`,
//! `alpha = 0.1 * t_update / rtt_max^2` and `beta = 0.3 / rtt_max` (Hz) unless set; the L4S
//! ramp `min_th_ms = 0.8`, `range_ms = 0.4` (0: a step at `min_th_ms`), `th_len_packets = 1`;
//! `classic_protection = 10` (% of the link the WRR scheduler keeps for the Classic queue);
//! `random_draws = false`. It always marks ECN-capable packets (no `ecn` key); its limit is
//! `buffer_bytes` / `buffer_packets`, 250 ms at the link's rate when neither is set.

use serde::{Deserialize, Serialize};

/// The table as written.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawAqm {
    discipline: Option<String>,
    ecn: Option<bool>,
    target_ms: Option<f64>,
    interval_ms: Option<f64>,
    t_update_ms: Option<f64>,
    alpha: Option<f64>,
    beta: Option<f64>,
    max_burst_ms: Option<f64>,
    mark_ecn_threshold: Option<f64>,
    quantum_bytes: Option<u32>,
    flows: Option<u32>,
    coupling_factor: Option<f64>,
    rtt_max_ms: Option<f64>,
    min_th_ms: Option<f64>,
    range_ms: Option<f64>,
    th_len_packets: Option<u32>,
    classic_protection: Option<u32>,
    random_draws: Option<bool>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CoDelSpec {
    pub target_ms: f64,
    pub interval_ms: f64,
    pub ecn: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PieSpec {
    pub target_ms: f64,
    pub t_update_ms: f64,
    pub alpha: f64,
    pub beta: f64,
    pub max_burst_ms: f64,
    pub mark_ecn_threshold: f64,
    pub ecn: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FqCodelSpec {
    pub codel: CoDelSpec,
    pub quantum_bytes: u32,
    pub flows: u32,
}

/// DualPI2 (RFC 9332), every derived default resolved.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DualPi2Spec {
    /// k: the L4S queue's coupled probability is k * p', the Classic queue's p'^2.
    pub coupling_factor: f64,
    /// The PI controller's queue delay target.
    pub target_ms: f64,
    /// The worst-case RTT the PI gains are set for.
    pub rtt_max_ms: f64,
    pub t_update_ms: f64,
    /// PI2's integral and proportional gains, in Hz.
    pub alpha: f64,
    pub beta: f64,
    /// The native L4S AQM: marking starts at `min_th_ms` of sojourn and reaches 1 at
    /// `min_th_ms + range_ms`.
    pub min_th_ms: f64,
    pub range_ms: f64,
    /// No native marking unless more than this many packets are left in the L4S queue.
    pub th_len_packets: u32,
    /// The Classic queue's weight in the WRR scheduler, in % (the L4S queue has the rest).
    pub classic_protection: u32,
    /// A random draw per decision (Linux's sch_dualpi2) in place of the RFC's recur().
    pub random_draws: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "discipline", rename_all = "lowercase")]
pub enum AqmSpec {
    #[serde(rename = "codel")]
    CoDel(CoDelSpec),
    Pie(PieSpec),
    #[serde(rename = "fq_codel")]
    FqCodel(FqCodelSpec),
    #[serde(rename = "dualpi2")]
    DualPi2(DualPi2Spec),
}

impl AqmSpec {
    /// It sets CE in packets (so it needs a datapath that forwards linkem's copy).
    pub fn ecn(&self) -> bool {
        match self {
            AqmSpec::CoDel(s) => s.ecn,
            AqmSpec::Pie(s) => s.ecn,
            AqmSpec::FqCodel(s) => s.codel.ecn,
            // L4S is ECN: its queue is marked, never only dropped
            AqmSpec::DualPi2(_) => true,
        }
    }

    /// The bottleneck is a scheduler the link serves (`crate::model::aqm::scheduled`), not a
    /// FIFO deciding each packet's fate on arrival.
    pub fn is_scheduler(&self) -> bool {
        matches!(self, AqmSpec::FqCodel(_) | AqmSpec::DualPi2(_))
    }
}

/// The table resolved with its discipline's defaults; `Err((key, message))` names the key
/// (relative to the table) that is wrong.
pub fn resolve(raw: &RawAqm) -> Result<AqmSpec, (String, String)> {
    let err = |k: &str, m: &str| Err((k.to_string(), m.to_string()));
    let positive = |k: &str, v: Option<f64>, default: f64| -> Result<f64, (String, String)> {
        match v {
            None => Ok(default),
            Some(x) if x.is_finite() && x > 0.0 => Ok(x),
            Some(_) => Err((k.to_string(), "expected a number > 0".to_string())),
        }
    };
    let non_negative = |k: &str, v: Option<f64>, default: f64| -> Result<f64, (String, String)> {
        match v {
            None => Ok(default),
            Some(x) if x.is_finite() && x >= 0.0 => Ok(x),
            Some(_) => Err((k.to_string(), "expected a number >= 0".to_string())),
        }
    };
    // every key but `discipline`, and whether the table sets it
    let set = [
        ("ecn", raw.ecn.is_some()),
        ("target_ms", raw.target_ms.is_some()),
        ("interval_ms", raw.interval_ms.is_some()),
        ("t_update_ms", raw.t_update_ms.is_some()),
        ("alpha", raw.alpha.is_some()),
        ("beta", raw.beta.is_some()),
        ("max_burst_ms", raw.max_burst_ms.is_some()),
        ("mark_ecn_threshold", raw.mark_ecn_threshold.is_some()),
        ("quantum_bytes", raw.quantum_bytes.is_some()),
        ("flows", raw.flows.is_some()),
        ("coupling_factor", raw.coupling_factor.is_some()),
        ("rtt_max_ms", raw.rtt_max_ms.is_some()),
        ("min_th_ms", raw.min_th_ms.is_some()),
        ("range_ms", raw.range_ms.is_some()),
        ("th_len_packets", raw.th_len_packets.is_some()),
        ("classic_protection", raw.classic_protection.is_some()),
        ("random_draws", raw.random_draws.is_some()),
    ];
    // a key of another discipline is an error naming it and the discipline's own keys
    let only = |name: &str, keys: &[&str]| -> Result<(), (String, String)> {
        match set.iter().find(|(k, on)| *on && !keys.contains(k)) {
            Some((k, _)) => Err((k.to_string(), format!("is not a setting of {name} (it has {})", keys.join(", ")))),
            None => Ok(()),
        }
    };
    let ecn = raw.ecn.unwrap_or(false);
    match raw.discipline.as_deref() {
        Some(d @ ("codel" | "fq_codel")) => {
            let fq = d == "fq_codel";
            if fq {
                only("FQ-CoDel", &["target_ms", "interval_ms", "quantum_bytes", "flows", "ecn"])?;
            } else {
                only("CoDel", &["target_ms", "interval_ms", "ecn"])?;
            }
            let codel = CoDelSpec {
                target_ms: positive("target_ms", raw.target_ms, 5.0)?,
                interval_ms: positive("interval_ms", raw.interval_ms, 100.0)?,
                ecn,
            };
            if !fq {
                return Ok(AqmSpec::CoDel(codel));
            }
            let quantum_bytes = raw.quantum_bytes.unwrap_or(1514);
            if !(64..=65_536).contains(&quantum_bytes) {
                return err("quantum_bytes", "expected 64 to 65536 bytes");
            }
            let flows = raw.flows.unwrap_or(1024);
            if !(1..=65_536).contains(&flows) {
                return err("flows", "expected 1 to 65536 queues");
            }
            Ok(AqmSpec::FqCodel(FqCodelSpec { codel, quantum_bytes, flows }))
        }
        Some("pie") => {
            only("PIE", &["target_ms", "t_update_ms", "alpha", "beta", "max_burst_ms", "mark_ecn_threshold", "ecn"])?;
            let threshold = raw.mark_ecn_threshold.unwrap_or(0.1);
            if !(0.0..=1.0).contains(&threshold) {
                return err("mark_ecn_threshold", "expected a probability in [0, 1]");
            }
            Ok(AqmSpec::Pie(PieSpec {
                target_ms: positive("target_ms", raw.target_ms, 15.0)?,
                t_update_ms: positive("t_update_ms", raw.t_update_ms, 15.0)?,
                alpha: positive("alpha", raw.alpha, 0.125)?,
                beta: positive("beta", raw.beta, 1.25)?,
                max_burst_ms: positive("max_burst_ms", raw.max_burst_ms, 150.0)?,
                mark_ecn_threshold: threshold,
                ecn,
            }))
        }
        Some("dualpi2") => {
            if raw.ecn.is_some() {
                return err("ecn", "is not a setting of DualPI2 (it always marks ECN-capable packets)");
            }
            only(
                "DualPI2",
                &[
                    "coupling_factor",
                    "target_ms",
                    "rtt_max_ms",
                    "t_update_ms",
                    "alpha",
                    "beta",
                    "min_th_ms",
                    "range_ms",
                    "th_len_packets",
                    "classic_protection",
                    "random_draws",
                ],
            )?;
            // RFC 9332 Appendix A (Figure 5): the PI2 gains derive from the target and the
            // worst-case RTT
            let target_ms = positive("target_ms", raw.target_ms, 15.0)?;
            let rtt_max_ms = positive("rtt_max_ms", raw.rtt_max_ms, 100.0)?;
            let t_update_ms = positive("t_update_ms", raw.t_update_ms, target_ms.min(rtt_max_ms / 3.0))?;
            let rtt_max_s = rtt_max_ms / 1e3;
            let classic_protection = raw.classic_protection.unwrap_or(10);
            if classic_protection > 100 {
                return err("classic_protection", "expected a percentage, 0 to 100");
            }
            Ok(AqmSpec::DualPi2(DualPi2Spec {
                coupling_factor: positive("coupling_factor", raw.coupling_factor, 2.0)?,
                target_ms,
                rtt_max_ms,
                t_update_ms,
                alpha: positive("alpha", raw.alpha, 0.1 * (t_update_ms / 1e3) / (rtt_max_s * rtt_max_s))?,
                beta: positive("beta", raw.beta, 0.3 / rtt_max_s)?,
                min_th_ms: non_negative("min_th_ms", raw.min_th_ms, 0.8)?,
                range_ms: non_negative("range_ms", raw.range_ms, 0.4)?,
                th_len_packets: raw.th_len_packets.unwrap_or(1),
                classic_protection,
                random_draws: raw.random_draws.unwrap_or(false),
            }))
        }
        Some(other) => err(
            "discipline",
            &format!("unknown discipline {other:?}; known: \"codel\", \"dualpi2\", \"fq_codel\", \"pie\""),
        ),
        None => err("discipline", "required: \"codel\", \"dualpi2\", \"fq_codel\" or \"pie\""),
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{LinkConfig, RateSpec};
    use crate::config_aqm::AqmSpec;
    use std::path::Path;

    fn parse(text: &str) -> Result<LinkConfig, String> {
        LinkConfig::parse(text, "link.toml", Path::new(".")).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_are_the_rfcs_and_a_direction_replaces_the_top_level_table() {
        let c = parse("rate_mbit = 10\n[aqm]\ndiscipline = \"codel\"\n[down.aqm]\ndiscipline = \"pie\"\necn = true\n")
            .unwrap();
        assert_eq!(c.up.rate, RateSpec::Fixed { rate_mbit: 10.0 });
        match (&c.up.aqm, &c.down.aqm) {
            (Some(AqmSpec::CoDel(up)), Some(AqmSpec::Pie(down))) => {
                assert_eq!((up.target_ms, up.interval_ms, up.ecn), (5.0, 100.0, false));
                assert_eq!((down.target_ms, down.t_update_ms, down.alpha, down.beta), (15.0, 15.0, 0.125, 1.25));
                assert_eq!((down.max_burst_ms, down.mark_ecn_threshold, down.ecn), (150.0, 0.1, true));
            }
            other => panic!("{other:?}"),
        }
        assert!(parse("rate_mbit = 10\n").unwrap().up.aqm.is_none());
        let fq = parse("rate_mbit = 10\n[aqm]\ndiscipline = \"fq_codel\"\nflows = 64\n").unwrap();
        match &fq.down.aqm {
            Some(AqmSpec::FqCodel(s)) => {
                assert_eq!((s.codel.target_ms, s.codel.interval_ms, s.quantum_bytes, s.flows), (5.0, 100.0, 1514, 64))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn fq_codel_takes_no_reordering_and_codel_no_fq_settings() {
        let e = parse(
            "rate_mbit = 10\n[aqm]\ndiscipline = \"fq_codel\"\n[down.reorder]\nprobability = 0.1\nahead_ms = 2\n",
        )
        .unwrap_err();
        assert!(e.contains("down.aqm") && e.contains("cannot be combined"), "{e}");
        let e = parse("rate_mbit = 10\n[aqm]\ndiscipline = \"codel\"\nflows = 8\n").unwrap_err();
        assert!(e.contains("aqm.flows: is not a setting of CoDel"), "{e}");
    }

    #[test]
    fn errors_name_the_key() {
        let e = parse("rate_mbit = 10\n[up.aqm]\ndiscipline = \"red\"\n").unwrap_err();
        assert!(e.contains("up.aqm.discipline") && e.contains("\"codel\", \"dualpi2\", \"fq_codel\", \"pie\""), "{e}");
        let e = parse("rate_mbit = 10\n[aqm]\ntarget_ms = 5\n").unwrap_err();
        assert!(e.contains("aqm.discipline: required"), "{e}");
        let e = parse("rate_mbit = 10\n[aqm]\ndiscipline = \"codel\"\nalpha = 0.1\n").unwrap_err();
        assert!(e.contains("aqm.alpha: is not a setting of CoDel"), "{e}");
        let e = parse("rate_mbit = 10\n[aqm]\ndiscipline = \"pie\"\ntarget_ms = -1\n").unwrap_err();
        assert!(e.contains("aqm.target_ms: expected a number > 0"), "{e}");
        let e = parse("rate_mbit = 10\n[aqm]\ndiscipline = \"codel\"\nlimit = 3\n").unwrap_err();
        assert!(e.contains("limit"), "{e}");
    }

    #[test]
    fn dualpi2_derives_its_gains_from_the_target_and_rtt_max() {
        let c = parse("rate_mbit = 10\n[aqm]\ndiscipline = \"dualpi2\"\ntarget_ms = 5\nrtt_max_ms = 30\n").unwrap();
        let Some(AqmSpec::DualPi2(s)) = &c.up.aqm else { panic!("{:?}", c.up.aqm) };
        // Tupdate = min(5, 30 / 3) ms, alpha = 0.1 * 0.005 / 0.03^2, beta = 0.3 / 0.03
        assert_eq!((s.target_ms, s.rtt_max_ms, s.t_update_ms), (5.0, 30.0, 5.0));
        assert!((s.alpha - 0.1 * 0.005 / 0.0009).abs() < 1e-9 && (s.beta - 10.0).abs() < 1e-9, "{s:?}");
        assert!(c.up.aqm.as_ref().unwrap().ecn(), "it marks: AF_PACKET only");
        // each one overridable
        let c = parse(
            "rate_mbit = 10\n[aqm]\ndiscipline = \"dualpi2\"\ncoupling_factor = 1.5\nt_update_ms = 16\n\
             alpha = 0.16\nbeta = 3.2\nmin_th_ms = 1\nrange_ms = 0\nth_len_packets = 0\n\
             classic_protection = 25\nrandom_draws = true\n",
        )
        .unwrap();
        let Some(AqmSpec::DualPi2(s)) = &c.up.aqm else { panic!() };
        assert_eq!((s.coupling_factor, s.t_update_ms, s.alpha, s.beta), (1.5, 16.0, 0.16, 3.2));
        assert_eq!((s.min_th_ms, s.range_ms, s.th_len_packets, s.classic_protection), (1.0, 0.0, 0, 25));
        assert!(s.random_draws);
    }

    #[test]
    fn dualpi2_errors_name_the_key() {
        let dual =
            |keys: &str| parse(&format!("rate_mbit = 10\n[aqm]\ndiscipline = \"dualpi2\"\n{keys}\n")).unwrap_err();
        let e = dual("flows = 8");
        assert!(e.contains("aqm.flows: is not a setting of DualPI2 (it has coupling_factor,"), "{e}");
        let e = dual("interval_ms = 100");
        assert!(e.contains("aqm.interval_ms: is not a setting of DualPI2"), "{e}");
        let e = dual("ecn = true");
        assert!(e.contains("aqm.ecn: is not a setting of DualPI2 (it always marks"), "{e}");
        let e = dual("coupling_factor = 0");
        assert!(e.contains("aqm.coupling_factor: expected a number > 0"), "{e}");
        let e = dual("range_ms = -0.4");
        assert!(e.contains("aqm.range_ms: expected a number >= 0"), "{e}");
        let e = dual("classic_protection = 101");
        assert!(e.contains("aqm.classic_protection: expected a percentage"), "{e}");
        let e = dual("rtt_max_ms = nan");
        assert!(e.contains("aqm.rtt_max_ms: expected a number > 0"), "{e}");
        // and its keys are not the others'
        let e = parse("rate_mbit = 10\n[aqm]\ndiscipline = \"pie\"\ncoupling_factor = 2\n").unwrap_err();
        assert!(e.contains("aqm.coupling_factor: is not a setting of PIE"), "{e}");
        let e = parse("rate_mbit = 10\n[aqm]\ndiscipline = \"fq_codel\"\nmin_th_ms = 1\n").unwrap_err();
        assert!(e.contains("aqm.min_th_ms: is not a setting of FQ-CoDel"), "{e}");
        let e = parse("rate_mbit = 10\n[up.aqm]\ndiscipline = \"codel\"\nrandom_draws = true\n").unwrap_err();
        assert!(e.contains("up.aqm.random_draws: is not a setting of CoDel"), "{e}");
        // a scheduler decides the order packets leave in
        let e =
            parse("rate_mbit = 10\n[aqm]\ndiscipline = \"dualpi2\"\n[down.reorder]\nprobability = 0.1\nahead_ms = 2\n")
                .unwrap_err();
        assert!(e.contains("down.aqm") && e.contains("dualpi2 and reorder cannot be combined"), "{e}");
    }
}
