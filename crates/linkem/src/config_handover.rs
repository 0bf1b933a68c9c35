//! The link config's `[handover]` table: a client with a second path (`crate::handover`).
//!
//! ```toml
//! [handover]
//! client = "198.18.1.3"     # the client's address on the second path
//! at_s = 2.0                # the first path goes down this long after its first packet
//!
//! public = "100.64.0.2"     # with a [nat]: the second path's own public address
//!
//! [handover.path]           # the second path: a link's own keys, and its [up]/[down]
//! rate_mbit = 10
//! delay_ms = 40
//! ```

use crate::config::{ConfigError, DirectionProfile, RawConfig};
use crate::handover::HandoverConfig;
use serde::Deserialize;
use std::net::Ipv4Addr;

/// The table as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawHandover {
    client: String,
    at_s: f64,
    pub(crate) public: Option<String>,
    pub(crate) path: Box<RawConfig>,
}

/// The client's subnet (topology.py: c0 198.18.1.2/24 behind the router's 198.18.1.1): the
/// second address must be a host of it, so the client reaches it on the same device.
const CLIENT_SUBNET: [u8; 3] = [198, 18, 1];
const TAKEN: [u8; 2] = [1, 2];

pub fn resolve(
    raw: &RawHandover,
    file: &str,
    up: DirectionProfile,
    down: DirectionProfile,
) -> Result<HandoverConfig, ConfigError> {
    let err = |field: &str, message: String| ConfigError {
        file: file.to_string(),
        field: format!("handover.{field}"),
        message,
    };
    if raw.path.nat.is_some() || raw.path.handover.is_some() {
        let what = if raw.path.nat.is_some() { "nat" } else { "handover" };
        return Err(err(
            &format!("path.{what}"),
            "the second path is a link's rate, delay, loss and queue only".into(),
        ));
    }
    let client: Ipv4Addr = raw
        .client
        .parse()
        .map_err(|_| err("client", format!("{:?} is not an IPv4 address (e.g. \"198.18.1.3\")", raw.client)))?;
    let o = client.octets();
    if o[..3] != CLIENT_SUBNET || TAKEN.contains(&o[3]) || o[3] == 0 || o[3] == 255 {
        return Err(err(
            "client",
            format!("{client} must be a free host of the client's subnet 198.18.1.0/24 (3-254; .1 is the router, .2 the client's first address)"),
        ));
    }
    if !(raw.at_s.is_finite() && raw.at_s > 0.0 && raw.at_s <= 86_400.0) {
        return Err(err("at_s", "expected seconds > 0 (after the first path's first packet) and at most 86400".into()));
    }
    let public = match &raw.public {
        Some(v) => Some(crate::config_nat::public_address(v).map_err(|m| err("public", m))?),
        None => None,
    };
    Ok(HandoverConfig { client, at_ns: (raw.at_s * 1e9).round() as u64, public, up, down })
}

#[cfg(test)]
mod tests {
    use crate::config::{LinkConfig, RateSpec};
    use std::path::Path;

    fn parse(text: &str) -> Result<LinkConfig, String> {
        LinkConfig::parse(text, "t.toml", Path::new(".")).map_err(|e| format!("{}: {}", e.field, e.message))
    }

    const BASE: &str = "rate_mbit = 50\ndelay_ms = 10\n";

    #[test]
    fn a_second_path_has_its_own_profile_per_direction() {
        let c = parse(&format!(
            "{BASE}[handover]\nclient = \"198.18.1.3\"\nat_s = 2.5\n[handover.path]\nrate_mbit = 10\ndelay_ms = 40\n\
             loss = 0.01\n[handover.path.down]\nrate_mbit = 20\n"
        ))
        .unwrap();
        let h = c.handover.clone().expect("a handover");
        assert_eq!((h.client.to_string().as_str(), h.at_ns), ("198.18.1.3", 2_500_000_000));
        assert_eq!(h.up.rate, RateSpec::Fixed { rate_mbit: 10.0 });
        assert_eq!(h.down.rate, RateSpec::Fixed { rate_mbit: 20.0 });
        assert_eq!((h.up.delay_ms, h.down.delay_ms), (40.0, 40.0));
        // the first path is the link's own, untouched
        assert_eq!(c.up.rate, RateSpec::Fixed { rate_mbit: 50.0 });
        assert!(c.nfqueue_refusal().unwrap().starts_with("[handover] needs the AF_PACKET datapath"));
    }

    #[test]
    fn bad_input_names_the_field() {
        let h = |body: &str| parse(&format!("{BASE}[handover]\n{body}")).unwrap_err();
        let path = "[handover.path]\nrate_mbit = 10\n";
        assert!(
            h(&format!("client = \"198.18.2.9\"\nat_s = 1\n{path}")).starts_with("handover.client: 198.18.2.9 must be")
        );
        assert!(h(&format!("client = \"198.18.1.2\"\nat_s = 1\n{path}")).starts_with("handover.client"));
        assert!(h(&format!("client = \"wifi\"\nat_s = 1\n{path}")).contains("not an IPv4 address"));
        assert!(
            h(&format!("client = \"198.18.1.3\"\nat_s = 0\n{path}")).starts_with("handover.at_s: expected seconds > 0")
        );
        assert!(h("client = \"198.18.1.3\"\nat_s = 1\n[handover.path]\ndelay_ms = 5\n")
            .starts_with("handover.path.up.rate_mbit: one of rate_mbit or trace"));
        assert!(h("client = \"198.18.1.3\"\nat_s = 1\n[handover.path]\nrate_mbit = -1\n")
            .starts_with("handover.path.rate_mbit"));
        assert!(h("client = \"198.18.1.3\"\nat_s = 1\n[handover.path]\nrate_mbit = 1\n[handover.path.nat]\n")
            .starts_with("handover.path.nat"));
        assert!(h("client = \"198.18.1.3\"\n[handover.path]\nrate_mbit = 1\n").contains("at_s"));
    }

    #[test]
    fn behind_a_nat_the_second_path_has_a_public_address_of_its_own() {
        let path = "[handover.path]\nrate_mbit = 10\n";
        let nat = "[nat]\npublic = \"100.64.0.1\"\n";
        let with = |handover: &str| {
            parse(&format!("{BASE}{nat}[handover]\nclient = \"198.18.1.3\"\nat_s = 1\n{handover}{path}"))
        };
        let c = with("public = \"100.64.0.2\"\n").unwrap();
        assert_eq!(c.handover.as_ref().unwrap().public, Some("100.64.0.2".parse().unwrap()));
        let n = c.nat.unwrap();
        assert_eq!(n.second_path, Some(("198.18.1.3".parse().unwrap(), "100.64.0.2".parse().unwrap())));
        assert!(with("").unwrap_err().starts_with("handover.public: with a [nat], the second path needs"));
        assert!(with("public = \"100.64.0.1\"\n").unwrap_err().contains("one of the NAT's own public addresses"));
        assert!(with("public = \"198.18.2.9\"\n")
            .unwrap_err()
            .starts_with("handover.public: 198.18.2.9 is in the testbed's"));
        // without a NAT the server sees the client's own second address
        let alone =
            parse(&format!("{BASE}[handover]\nclient = \"198.18.1.3\"\nat_s = 1\npublic = \"100.64.0.2\"\n{path}"));
        assert!(alone.unwrap_err().starts_with("handover.public: only with a [nat]"));
    }
}
