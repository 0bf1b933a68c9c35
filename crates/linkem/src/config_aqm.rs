//! The link config's `aqm` table: an active queue management discipline in front of a
//! direction's bottleneck (`crate::model::aqm`), in place of plain drop-tail. Like the other
//! sub-tables it is set at the top level for both directions or per direction, and replaced
//! whole. `buffer_bytes` / `buffer_packets` stay the queue's hard limit (tail drop).
//!
//! ```toml
//! [down.aqm]
//! discipline = "codel"      # or "pie"
//! ecn = true                # mark ECN-capable packets CE instead of dropping them
//! target_ms = 5             # CoDel: RFC 8289's defaults
//! interval_ms = 100
//! ```
//!
//! PIE's keys and RFC 8033's defaults: `target_ms = 15`, `t_update_ms = 15`,
//! `alpha = 0.125`, `beta = 1.25`, `max_burst_ms = 150`, `mark_ecn_threshold = 0.1`.
//! FQ-CoDel's (RFC 8290): CoDel's two, `quantum_bytes = 1514`, `flows = 1024`; its packet
//! limit is `buffer_packets` (or `buffer_bytes` / 1514), 10240 when neither is set.

use serde::{Deserialize, Serialize};

/// The table as written.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawAqm {
    discipline: Option<String>,
    #[serde(default)]
    ecn: bool,
    target_ms: Option<f64>,
    interval_ms: Option<f64>,
    t_update_ms: Option<f64>,
    alpha: Option<f64>,
    beta: Option<f64>,
    max_burst_ms: Option<f64>,
    mark_ecn_threshold: Option<f64>,
    quantum_bytes: Option<u32>,
    flows: Option<u32>,
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

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "discipline", rename_all = "lowercase")]
pub enum AqmSpec {
    #[serde(rename = "codel")]
    CoDel(CoDelSpec),
    Pie(PieSpec),
    #[serde(rename = "fq_codel")]
    FqCodel(FqCodelSpec),
}

impl AqmSpec {
    pub fn ecn(&self) -> bool {
        match self {
            AqmSpec::CoDel(s) => s.ecn,
            AqmSpec::Pie(s) => s.ecn,
            AqmSpec::FqCodel(s) => s.codel.ecn,
        }
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
    let not_for = |name: &str, keys: &[(&str, bool)]| -> Result<(), (String, String)> {
        match keys.iter().find(|(_, set)| *set) {
            Some((k, _)) => Err((k.to_string(), format!("is not a setting of {name}"))),
            None => Ok(()),
        }
    };
    match raw.discipline.as_deref() {
        Some(d @ ("codel" | "fq_codel")) => {
            let fq = d == "fq_codel";
            let pie_keys = [
                ("t_update_ms", raw.t_update_ms.is_some()),
                ("alpha", raw.alpha.is_some()),
                ("beta", raw.beta.is_some()),
                ("max_burst_ms", raw.max_burst_ms.is_some()),
                ("mark_ecn_threshold", raw.mark_ecn_threshold.is_some()),
            ];
            if fq {
                not_for("FQ-CoDel (it has target_ms, interval_ms, quantum_bytes, flows, ecn)", &pie_keys)?;
            } else {
                let fq_keys = [("quantum_bytes", raw.quantum_bytes.is_some()), ("flows", raw.flows.is_some())];
                not_for("CoDel (it has target_ms, interval_ms, ecn)", &[&pie_keys[..], &fq_keys[..]].concat())?;
            }
            let codel = CoDelSpec {
                target_ms: positive("target_ms", raw.target_ms, 5.0)?,
                interval_ms: positive("interval_ms", raw.interval_ms, 100.0)?,
                ecn: raw.ecn,
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
            not_for(
                "PIE",
                &[
                    ("interval_ms", raw.interval_ms.is_some()),
                    ("quantum_bytes", raw.quantum_bytes.is_some()),
                    ("flows", raw.flows.is_some()),
                ],
            )?;
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
                ecn: raw.ecn,
            }))
        }
        Some(other) => {
            err("discipline", &format!("unknown discipline {other:?}; known: \"codel\", \"fq_codel\", \"pie\""))
        }
        None => err("discipline", "required: \"codel\", \"fq_codel\" or \"pie\""),
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
        assert!(e.contains("up.aqm.discipline") && e.contains("\"codel\", \"fq_codel\", \"pie\""), "{e}");
        let e = parse("rate_mbit = 10\n[aqm]\ntarget_ms = 5\n").unwrap_err();
        assert!(e.contains("aqm.discipline: required"), "{e}");
        let e = parse("rate_mbit = 10\n[aqm]\ndiscipline = \"codel\"\nalpha = 0.1\n").unwrap_err();
        assert!(e.contains("aqm.alpha: is not a setting of CoDel"), "{e}");
        let e = parse("rate_mbit = 10\n[aqm]\ndiscipline = \"pie\"\ntarget_ms = -1\n").unwrap_err();
        assert!(e.contains("aqm.target_ms: expected a number > 0"), "{e}");
        let e = parse("rate_mbit = 10\n[aqm]\ndiscipline = \"codel\"\nlimit = 3\n").unwrap_err();
        assert!(e.contains("limit"), "{e}");
    }
}
