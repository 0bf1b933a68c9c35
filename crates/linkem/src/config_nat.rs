//! The link config's `[nat]` table: a NAT in front of the bottleneck (`crate::nat`).
//!
//! ```toml
//! [nat]
//! public = "198.18.5.1"          # the client's public address
//! ports = [20000, 59999]         # external ports handed out, in turn
//! udp_timeout_s = 120            # idle time of a UDP binding
//! tcp_established_timeout_s = 7440
//! tcp_transitory_timeout_s = 240
//! rebind_at_s = [2.0]            # each binding moves this long after it was made
//! rebind_every_s = 0             # and then every this long (0: no more)
//! rebind_to = "port"             # or "address": to the other public address as well
//! rebind_public = "198.18.6.1"   # that other address
//! rebind_when = "next_packet"    # or "at_time" (when the old mapping dies: `NatConfig`)
//! ```
//!
//! The timeouts' defaults are RFC 4787's and RFC 5382's minimums (`NatConfig::default`).

use crate::config::ConfigError;
use crate::nat::{NatConfig, DEFAULT_REBIND_PUBLIC};
use serde::Deserialize;
use std::net::Ipv4Addr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum RebindWhen {
    #[default]
    NextPacket,
    AtTime,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum RebindTo {
    #[default]
    Port,
    Address,
}

/// The table as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawNat {
    public: Option<String>,
    ports: Option<(u32, u32)>,
    udp_timeout_s: Option<f64>,
    tcp_established_timeout_s: Option<f64>,
    tcp_transitory_timeout_s: Option<f64>,
    #[serde(default)]
    rebind_at_s: Vec<f64>,
    rebind_every_s: Option<f64>,
    rebind_to: Option<RebindTo>,
    rebind_public: Option<String>,
    rebind_when: Option<RebindWhen>,
}

/// The testbed's own subnets, which a public address must not fall in (198.18.1-4.0/24:
/// client, server, and the proxy topology's two links).
fn testbed_subnet(a: Ipv4Addr) -> bool {
    let o = a.octets();
    o[0] == 198 && o[1] == 18 && (1..=4).contains(&o[2])
}

/// A NAT's public address as written (`v`), or why it cannot be one.
pub fn public_address(v: &str) -> Result<Ipv4Addr, String> {
    let a: Ipv4Addr = v.parse().map_err(|_| format!("{v:?} is not an IPv4 address (e.g. \"198.18.5.1\")"))?;
    if a.is_unspecified() || a.is_broadcast() || a.is_multicast() || a.is_loopback() {
        return Err(format!("{a} cannot be a host's address"));
    }
    if testbed_subnet(a) {
        return Err(format!("{a} is in the testbed's own subnets 198.18.1-4.0/24: pick another"));
    }
    Ok(a)
}

pub fn resolve(raw: &RawNat, file: &str) -> Result<NatConfig, ConfigError> {
    let err =
        |field: &str, message: String| ConfigError { file: file.to_string(), field: format!("nat.{field}"), message };
    let address = |field: &str, v: &str| public_address(v).map_err(|m| err(field, m));
    let seconds = |field: &str, v: Option<f64>, default_ns: u64| -> Result<u64, ConfigError> {
        match v {
            None => Ok(default_ns),
            Some(s) if s.is_finite() && s > 0.0 && s <= 86_400.0 => Ok((s * 1e9).round() as u64),
            Some(_) => Err(err(field, "expected seconds > 0 and at most 86400 (a day)".into())),
        }
    };
    let d = NatConfig::default();
    let public = match &raw.public {
        Some(v) => address("public", v)?,
        None => d.public,
    };
    let ports = match raw.ports {
        None => d.ports,
        Some((lo, hi)) if (1024..=65535).contains(&lo) && (lo..=65535).contains(&hi) => (lo as u16, hi as u16),
        Some(_) => return Err(err("ports", "expected [LOW, HIGH] with 1024 <= LOW <= HIGH <= 65535".into())),
    };
    let mut rebind_at_ns = Vec::with_capacity(raw.rebind_at_s.len());
    for (i, &s) in raw.rebind_at_s.iter().enumerate() {
        if !(s.is_finite() && s > 0.0 && s <= 86_400.0) {
            return Err(err(&format!("rebind_at_s[{i}]"), "expected seconds > 0 after a binding was made".into()));
        }
        rebind_at_ns.push((s * 1e9).round() as u64);
    }
    if rebind_at_ns.windows(2).any(|w| w[0] >= w[1]) {
        return Err(err("rebind_at_s", "expected increasing times".into()));
    }
    let rebind_every_ns = match raw.rebind_every_s {
        None | Some(0.0) => 0,
        Some(s) if s.is_finite() && (0.1..=86_400.0).contains(&s) => (s * 1e9).round() as u64,
        Some(_) => {
            return Err(err("rebind_every_s", "expected 0 (none) or seconds from 0.1 to 86400".into()));
        }
    };
    let rebinds = !rebind_at_ns.is_empty() || rebind_every_ns > 0;
    let to = raw.rebind_to.unwrap_or_default();
    if (to == RebindTo::Address || raw.rebind_public.is_some()) && !rebinds {
        let what = if to == RebindTo::Address { "rebind_to" } else { "rebind_public" };
        return Err(err(what, "set rebind_at_s or rebind_every_s too: there is no scheduled rebinding".into()));
    }
    if raw.rebind_when == Some(RebindWhen::AtTime) && !rebinds {
        return Err(err(
            "rebind_when",
            "set rebind_at_s or rebind_every_s too: there is no scheduled rebinding".into(),
        ));
    }
    if raw.rebind_public.is_some() && to != RebindTo::Address {
        return Err(err("rebind_public", "only used with rebind_to = \"address\"".into()));
    }
    let rebind_public = match to {
        RebindTo::Port => None,
        RebindTo::Address => {
            let a = match &raw.rebind_public {
                Some(v) => address("rebind_public", v)?,
                None => DEFAULT_REBIND_PUBLIC,
            };
            if a == public {
                return Err(err("rebind_public", format!("{a} is the public address itself: pick another")));
            }
            Some(a)
        }
    };
    Ok(NatConfig {
        public,
        ports,
        udp_timeout_ns: seconds("udp_timeout_s", raw.udp_timeout_s, d.udp_timeout_ns)?,
        tcp_established_timeout_ns: seconds(
            "tcp_established_timeout_s",
            raw.tcp_established_timeout_s,
            d.tcp_established_timeout_ns,
        )?,
        tcp_transitory_timeout_ns: seconds(
            "tcp_transitory_timeout_s",
            raw.tcp_transitory_timeout_s,
            d.tcp_transitory_timeout_ns,
        )?,
        rebind_at_ns,
        rebind_every_ns,
        rebind_public,
        rebind_on_outbound: raw.rebind_when.unwrap_or_default() == RebindWhen::NextPacket,
        second_path: None, // the handover's own (`config::LinkConfig::parse`)
    })
}

#[cfg(test)]
mod tests {
    use crate::config::LinkConfig;
    use std::path::Path;

    fn parse(nat: &str) -> Result<LinkConfig, String> {
        LinkConfig::parse(&format!("rate_mbit = 10\n[nat]\n{nat}"), "l.toml", Path::new(".")).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_and_a_scheduled_address_rebinding() {
        let c = parse("").unwrap().nat.unwrap();
        assert_eq!(c.udp_timeout_ns, 120_000_000_000);
        assert_eq!(c.rebind_public, None);
        let c = parse("udp_timeout_s = 30\nrebind_at_s = [2.0, 5]\nrebind_every_s = 10\nrebind_to = \"address\"\n")
            .unwrap()
            .nat
            .unwrap();
        assert_eq!(c.udp_timeout_ns, 30_000_000_000);
        assert_eq!(c.rebind_at_ns, vec![2_000_000_000, 5_000_000_000]);
        assert_eq!(c.rebind_every_ns, 10_000_000_000);
        assert_eq!(c.rebind_public, Some(crate::nat::DEFAULT_REBIND_PUBLIC));
        assert!(parse("").unwrap().nat.is_some());
        assert!(LinkConfig::parse("rate_mbit = 10\n", "l.toml", Path::new(".")).unwrap().nat.is_none());
    }

    #[test]
    fn bad_tables_name_their_field() {
        for (table, field, says) in [
            ("udp_timeout_s = 0", "nat.udp_timeout_s", "seconds > 0"),
            ("tcp_transitory_timeout_s = -1", "nat.tcp_transitory_timeout_s", "seconds > 0"),
            ("public = \"banana\"", "nat.public", "not an IPv4 address"),
            ("public = \"198.18.2.9\"", "nat.public", "testbed's own subnets"),
            ("rebind_at_s = [3, 2]", "nat.rebind_at_s", "increasing"),
            ("rebind_at_s = [0]", "nat.rebind_at_s[0]", "seconds > 0"),
            ("rebind_to = \"address\"", "nat.rebind_to", "no scheduled rebinding"),
            ("rebind_at_s = [1]\nrebind_public = \"198.18.7.1\"", "nat.rebind_public", "only used with"),
            (
                "rebind_at_s = [1]\nrebind_to = \"address\"\nrebind_public = \"198.18.5.1\"",
                "nat.rebind_public",
                "itself",
            ),
            ("ports = [10, 20]", "nat.ports", "1024 <= LOW"),
            ("rebind_every_s = 0.001", "nat.rebind_every_s", "from 0.1"),
            ("rebind_to = \"elsewhere\"", "nat.rebind_to", "unknown variant"),
            ("rebind_when = \"at_time\"", "nat.rebind_when", "no scheduled rebinding"),
            ("idle_s = 3", "nat.idle_s", "unknown field"),
        ] {
            let e = parse(table).unwrap_err();
            assert!(e.contains(field) && e.contains(says), "{table}: {e}");
        }
    }
}
