//! The link config file (TOML): parsing, per-direction resolution and validation.
//!
//! Keys at the top level apply to both directions; `[up]` and `[down]` override them. The
//! pairs `rate_mbit`/`trace` and `buffer_bytes`/`buffer_packets` are each one setting: a
//! direction that sets either member replaces the top-level value of the pair. Sub-tables
//! (`gilbert_elliott`, `reorder`, `middlebox`, `aqm`) are replaced whole, never merged field
//! by field.
//!
//! Every error names the field it is about (`link.toml: up.delay_ms: expected a number >= 0`)
//! so that a scenario author can fix the file without reading this code.

use crate::trace::Trace;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError {
    pub file: String,
    /// Dotted path of the offending field; empty for whole-file errors (syntax).
    pub field: String,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}: {}: {}", self.file, self.field, self.message)
        }
    }
}

impl std::error::Error for ConfigError {}

// ---------------------------------------------------------------------------------------
// The file as written.

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum JitterDistribution {
    #[default]
    Uniform,
    Normal,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GilbertElliott {
    /// P(good -> bad), evaluated once per packet.
    pub p: f64,
    /// P(bad -> good), evaluated once per packet.
    pub r: f64,
    #[serde(default = "one")]
    pub loss_bad: f64,
    #[serde(default)]
    pub loss_good: f64,
}

fn one() -> f64 {
    1.0
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ReorderSpec {
    pub probability: f64,
    pub ahead_ms: f64,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MiddleboxSpec {
    #[serde(default)]
    pub block_udp: bool,
    /// 0 = off; else the UDP packets of a flow after the first N are dropped.
    #[serde(default)]
    pub block_udp_after_packets: u64,
    /// 0 = off; else UDP is policed to this rate by a token bucket.
    #[serde(default)]
    pub udp_rate_mbit: f64,
    /// Token bucket depth for `udp_rate_mbit`; 0 = max(3000 bytes, 10 ms at the rate).
    #[serde(default)]
    pub udp_burst_bytes: u64,
    /// 0 = off; else UDP packets whose IP total length is above it are dropped.
    #[serde(default)]
    pub max_udp_datagram: u64,
    /// Drop UDP datagrams that begin with a QUIC long-header Initial packet.
    #[serde(default)]
    pub drop_quic_initial: bool,
    /// Drop a QUIC flow's datagrams from its first short-header datagram on.
    #[serde(default)]
    pub quic_blackhole_after_handshake: bool,
    /// 0 = off; else a TCP flow's packets from the one carrying payload byte N+1 on are
    /// rewritten into RSTs.
    #[serde(default)]
    pub tcp_rst_after_bytes: u64,
    /// Schedule: the rules act only from this time (s since linkem start)...
    #[serde(default)]
    pub active_from_s: f64,
    /// ... until this time (exclusive); absent = forever.
    #[serde(default)]
    pub active_until_s: Option<f64>,
    /// Periodic on/off within the window, starting "on" at `active_from_s`; both 0 = always on.
    #[serde(default)]
    pub on_s: f64,
    #[serde(default)]
    pub off_s: f64,
    /// Each new flow of the direction is subject to the rules with this probability
    /// (drawn from the seeded RNG); absent = every flow.
    #[serde(default)]
    pub flow_probability: Option<f64>,
    /// What the box does to the IP ECN field of the packets it acts on; absent = nothing.
    #[serde(default)]
    pub ecn: Option<EcnPolicy>,
}

/// A middlebox's ECN policy (`ecn = "..."`; `model::middlebox` applies it): the path faults
/// ECN meets, which a sender's ECN validation (RFC 9000 §13.4.2, RFC 3168 §6.1.1.1) must
/// survive or detect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EcnPolicy {
    /// ECT(0), ECT(1) and CE set to not-ECT: the commonest fault, a box that clears the old
    /// ToS byte.
    Bleach,
    /// Packets marked ECT(0), ECT(1) or CE dropped: an ECN black hole.
    DropEct,
    /// ECT(0) re-marked ECT(1): a mis-classifying box turns Classic ECN traffic into L4S.
    Ect0ToEct1,
    /// ECT(1) re-marked ECT(0): L4S traffic turned Classic.
    Ect1ToEct0,
    /// ECT(0) and ECT(1) set to CE: a faulty box that reports congestion on everything.
    MarkCe,
}

impl EcnPolicy {
    /// Each policy as written in the config.
    pub const NAMES: [(&'static str, EcnPolicy); 5] = [
        ("bleach", EcnPolicy::Bleach),
        ("drop_ect", EcnPolicy::DropEct),
        ("ect0_to_ect1", EcnPolicy::Ect0ToEct1),
        ("ect1_to_ect0", EcnPolicy::Ect1ToEct0),
        ("mark_ce", EcnPolicy::MarkCe),
    ];

    pub fn name(self) -> &'static str {
        Self::NAMES.iter().find(|(_, p)| *p == self).map(|(n, _)| *n).unwrap_or("?")
    }

    /// It changes packets' bytes (every policy but `drop_ect`), so it needs a datapath that
    /// forwards linkem's copy of the packet.
    pub fn rewrites(self) -> bool {
        self != EcnPolicy::DropEct
    }

    fn allowed() -> String {
        Self::NAMES.iter().map(|(n, _)| format!("\"{n}\"")).collect::<Vec<_>>().join(", ")
    }
}

impl Serialize for EcnPolicy {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

// By hand, so that a wrong value (or type) is one error naming the allowed values.
impl<'de> Deserialize<'de> for EcnPolicy {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Name;
        impl serde::de::Visitor<'_> for Name {
            type Value = EcnPolicy;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "one of {}", EcnPolicy::allowed())
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<EcnPolicy, E> {
                EcnPolicy::NAMES.iter().find(|(n, _)| *n == v).map(|(_, p)| *p).ok_or_else(|| {
                    E::custom(format!("unknown ECN policy {v:?}; expected one of {}", EcnPolicy::allowed()))
                })
            }
        }
        d.deserialize_str(Name)
    }
}

/// One direction's table as written (every key optional, so it can override).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDirection {
    rate_mbit: Option<f64>,
    trace: Option<String>,
    delay_ms: Option<f64>,
    jitter_ms: Option<f64>,
    jitter_distribution: Option<JitterDistribution>,
    loss: Option<f64>,
    buffer_bytes: Option<u64>,
    buffer_packets: Option<u64>,
    gilbert_elliott: Option<GilbertElliott>,
    reorder: Option<ReorderSpec>,
    middlebox: Option<MiddleboxSpec>,
    aqm: Option<crate::config_aqm::RawAqm>,
}

/// The whole file. serde cannot combine `flatten` with `deny_unknown_fields`, so the
/// top-level keys are repeated here.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawConfig {
    rate_mbit: Option<f64>,
    trace: Option<String>,
    delay_ms: Option<f64>,
    jitter_ms: Option<f64>,
    jitter_distribution: Option<JitterDistribution>,
    loss: Option<f64>,
    buffer_bytes: Option<u64>,
    buffer_packets: Option<u64>,
    gilbert_elliott: Option<GilbertElliott>,
    reorder: Option<ReorderSpec>,
    middlebox: Option<MiddleboxSpec>,
    aqm: Option<crate::config_aqm::RawAqm>,
    up: Option<RawDirection>,
    down: Option<RawDirection>,
    pub(crate) nat: Option<crate::config_nat::RawNat>,
    pub(crate) handover: Option<crate::config_handover::RawHandover>,
}

impl RawConfig {
    fn common(&self) -> RawDirection {
        RawDirection {
            rate_mbit: self.rate_mbit,
            trace: self.trace.clone(),
            delay_ms: self.delay_ms,
            jitter_ms: self.jitter_ms,
            jitter_distribution: self.jitter_distribution,
            loss: self.loss,
            buffer_bytes: self.buffer_bytes,
            buffer_packets: self.buffer_packets,
            gilbert_elliott: self.gilbert_elliott.clone(),
            reorder: self.reorder.clone(),
            middlebox: self.middlebox.clone(),
            aqm: self.aqm.clone(),
        }
    }
}

// ---------------------------------------------------------------------------------------
// The resolved, validated link: what the emulator runs.

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum RateSpec {
    Fixed {
        rate_mbit: f64,
    },
    Trace {
        path: PathBuf,
        opportunities: usize,
        period_ms: u64,
        mean_mbit: f64,
        #[serde(skip)]
        trace: Trace,
    },
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(tag = "kind", content = "limit", rename_all = "lowercase")]
pub enum BufferLimit {
    Unlimited,
    Bytes(u64),
    Packets(u64),
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LossSpec {
    None,
    Bernoulli { probability: f64 },
    GilbertElliott(GilbertElliott),
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DirectionProfile {
    pub rate: RateSpec,
    pub delay_ms: f64,
    pub jitter_ms: f64,
    pub jitter_distribution: JitterDistribution,
    pub loss: LossSpec,
    pub buffer: BufferLimit,
    pub reorder: Option<ReorderSpec>,
    pub middlebox: MiddleboxSpec,
    /// An AQM discipline in place of plain drop-tail (`[aqm]`; `crate::model::aqm`).
    pub aqm: Option<crate::config_aqm::AqmSpec>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LinkConfig {
    pub up: DirectionProfile,
    pub down: DirectionProfile,
    /// A NAT in front of the bottleneck (`[nat]`): up is outbound, down inbound.
    pub nat: Option<crate::nat::NatConfig>,
    /// A second path for a client that moves (`[handover]`).
    pub handover: Option<crate::handover::HandoverConfig>,
}

impl LinkConfig {
    /// Read, parse and validate a config file. Relative trace paths are taken relative to
    /// the config file's directory.
    pub fn load(path: &Path) -> Result<LinkConfig, ConfigError> {
        let file = path.display().to_string();
        let text = crate::userfile::read_text(path, crate::userfile::CONFIG_LIMIT).map_err(|message| ConfigError {
            file: file.clone(),
            field: String::new(),
            message,
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        LinkConfig::parse(&text, &file, base)
    }

    /// Parse and validate config text; `file` names it in errors, `base` resolves traces.
    pub fn parse(text: &str, file: &str, base: &Path) -> Result<LinkConfig, ConfigError> {
        let raw = parse_raw(text, file)?;
        let ctx = Ctx { file, base };
        let (up, down) = directions(&ctx, &raw)?;
        let mut nat = raw.nat.as_ref().map(|n| crate::config_nat::resolve(n, file)).transpose()?;
        let handover = match &raw.handover {
            Some(h) => {
                let (up, down) = directions(&ctx, &h.path).map_err(|mut e| {
                    e.field =
                        if e.field.is_empty() { "handover.path".into() } else { format!("handover.path.{}", e.field) };
                    e
                })?;
                let h = crate::config_handover::resolve(h, file, up, down)?;
                if let Some(n) = nat.as_mut() {
                    n.second_path = Some((h.client, second_public(&ctx, n, &h)?));
                } else if h.public.is_some() {
                    return Err(ctx.err(
                        "handover.public",
                        "only with a [nat]: without one the server sees the client's own address",
                    ));
                }
                Some(h)
            }
            None => None,
        };
        Ok(LinkConfig { up, down, nat, handover })
    }

    /// Why this link cannot run on NFQUEUE (None: it can). There the kernel forwards its own
    /// copy of each packet and linkem only judges it, so whatever changes packets (the NAT,
    /// an AQM's CE marks, a middlebox's ECN rewrites) would never reach the wire.
    pub fn nfqueue_refusal(&self) -> Option<String> {
        const NEEDS: &str = "needs the AF_PACKET datapath (--afpacket-up and --afpacket-down): on NFQUEUE the \
                             kernel forwards its own copy of each packet";
        if self.nat.is_some() {
            return Some(format!("[nat] {NEEDS}, which linkem cannot rewrite in place"));
        }
        if self.handover.is_some() {
            return Some(format!(
                "[handover] {NEEDS}, and its two paths release packets out of order, which NFQUEUE's batch \
                 verdicts cannot"
            ));
        }
        if [&self.up, &self.down].iter().any(|d| d.aqm.as_ref().is_some_and(|a| a.ecn())) {
            return Some(format!("an aqm that marks (ecn = true, or dualpi2) {NEEDS}, so a CE mark would never leave"));
        }
        for (name, d) in [("up", &self.up), ("down", &self.down)] {
            if let Some(p) = d.middlebox.ecn.filter(|p| p.rewrites()) {
                return Some(format!(
                    "the {name} middlebox's ecn = \"{}\" rewrites the ECN field and {NEEDS}, so the \
                     rewrite would never leave (\"drop_ect\" works on both datapaths)",
                    p.name()
                ));
            }
        }
        None
    }
}

/// The public address of a handover's second path behind a `[nat]`: its own, so the server
/// sees the client move from one address to another, and neither of the NAT's.
fn second_public(
    ctx: &Ctx,
    nat: &crate::nat::NatConfig,
    h: &crate::handover::HandoverConfig,
) -> Result<std::net::Ipv4Addr, ConfigError> {
    let Some(a) = h.public else {
        return Err(ctx.err(
            "handover.public",
            format!("with a [nat], the second path needs a public address of its own (e.g. \"100.64.0.2\"; the NAT's is {})", nat.public),
        ));
    };
    if a == nat.public || nat.rebind_public == Some(a) {
        return Err(ctx.err("handover.public", format!("{a} is one of the NAT's own public addresses: pick another")));
    }
    Ok(a)
}

/// A link's two directions: the top-level keys, overridden per direction by `[up]`/`[down]`.
fn directions(ctx: &Ctx, raw: &RawConfig) -> Result<(DirectionProfile, DirectionProfile), ConfigError> {
    let common = raw.common();
    check_table(ctx, "", &common)?;
    let mut dirs = Vec::with_capacity(2);
    for (name, table) in [("up", &raw.up), ("down", &raw.down)] {
        if let Some(t) = table {
            check_table(ctx, &format!("{name}."), t)?;
        }
        let merged = merge(&common, table.as_ref());
        dirs.push(resolve(ctx, name, table.as_ref(), &merged)?);
    }
    let down = dirs.pop().unwrap();
    let up = dirs.pop().unwrap();
    Ok((up, down))
}

struct Ctx<'a> {
    file: &'a str,
    base: &'a Path,
}

impl Ctx<'_> {
    fn err(&self, field: impl Into<String>, message: impl Into<String>) -> ConfigError {
        ConfigError { file: self.file.to_string(), field: field.into(), message: message.into() }
    }
}

fn parse_raw(text: &str, file: &str) -> Result<RawConfig, ConfigError> {
    let de = toml::Deserializer::parse(text).map_err(|e| ConfigError {
        file: file.to_string(),
        field: String::new(),
        message: one_line(&e.to_string()),
    })?;
    serde_path_to_error::deserialize(de).map_err(|e| {
        let mut field = e.path().to_string();
        let message = e.inner().message().to_string();
        // serde reports an unknown key while still at the parent table: name the key.
        if let Some(rest) = message.strip_prefix("unknown field `") {
            if let Some(key) = rest.split('`').next() {
                let already = field == key || field.ends_with(&format!(".{key}"));
                if !already {
                    field = if field == "." || field.is_empty() { key.to_string() } else { format!("{field}.{key}") };
                }
            }
        }
        if field == "." {
            field.clear();
        }
        ConfigError { file: file.to_string(), field, message: one_line(&message) }
    })
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Range checks on one table as written, so errors name the key where it was written.
fn check_table(ctx: &Ctx, prefix: &str, t: &RawDirection) -> Result<(), ConfigError> {
    let f = |name: &str| format!("{prefix}{name}");
    let non_negative = |name: &str, v: Option<f64>| match v {
        Some(x) if !(x.is_finite() && x >= 0.0) => Err(ctx.err(f(name), "expected a number >= 0")),
        _ => Ok(()),
    };
    let probability = |name: String, v: f64| {
        if (0.0..=1.0).contains(&v) {
            Ok(())
        } else {
            Err(ctx.err(name, "expected a probability in [0, 1]"))
        }
    };
    if t.rate_mbit.is_some() && t.trace.is_some() {
        return Err(ctx.err(f("trace"), "set either rate_mbit or trace, not both"));
    }
    if let Some(r) = t.rate_mbit {
        if !(r.is_finite() && r > 0.0) {
            return Err(ctx.err(f("rate_mbit"), "expected a number > 0"));
        }
    }
    non_negative("delay_ms", t.delay_ms)?;
    non_negative("jitter_ms", t.jitter_ms)?;
    if let Some(p) = t.loss {
        probability(f("loss"), p)?;
    }
    if t.buffer_bytes.is_some() && t.buffer_packets.is_some() {
        return Err(ctx.err(f("buffer_packets"), "set either buffer_bytes or buffer_packets, not both"));
    }
    if t.buffer_bytes == Some(0) {
        return Err(ctx.err(f("buffer_bytes"), "expected an integer >= 1 (omit the key for no limit)"));
    }
    if t.buffer_packets == Some(0) {
        return Err(ctx.err(f("buffer_packets"), "expected an integer >= 1 (omit the key for no limit)"));
    }
    if let Some(ge) = &t.gilbert_elliott {
        let g = |k: &str| f(&format!("gilbert_elliott.{k}"));
        probability(g("p"), ge.p)?;
        probability(g("r"), ge.r)?;
        probability(g("loss_bad"), ge.loss_bad)?;
        probability(g("loss_good"), ge.loss_good)?;
        if ge.p > 0.0 && ge.r == 0.0 {
            return Err(ctx.err(g("r"), "must be > 0 when p > 0 (the bad state would never end)"));
        }
    }
    if let Some(ro) = &t.reorder {
        probability(f("reorder.probability"), ro.probability)?;
        if !(ro.ahead_ms.is_finite() && ro.ahead_ms >= 0.0) {
            return Err(ctx.err(f("reorder.ahead_ms"), "expected a number >= 0"));
        }
    }
    if let Some(mb) = &t.middlebox {
        if !(mb.udp_rate_mbit.is_finite() && mb.udp_rate_mbit >= 0.0) {
            return Err(ctx.err(f("middlebox.udp_rate_mbit"), "expected a number >= 0 (0 = off)"));
        }
        check_middlebox_schedule(ctx, &f("middlebox."), mb)?;
    }
    if let Some(aqm) = &t.aqm {
        crate::config_aqm::resolve(aqm).map_err(|(k, m)| ctx.err(f(&format!("aqm.{k}")), m))?;
    }
    Ok(())
}

/// The largest `tcp_rst_after_bytes`: the RST model (`model::tcp_rst`) counts a flow's bytes
/// as u32 sequence distances, and beyond 2^31 "after" and "before" are ambiguous.
pub const MAX_RST_AFTER_BYTES: u64 = i32::MAX as u64;

/// The middlebox's schedule and flow choice (see `model::schedule`) and the RST threshold.
fn check_middlebox_schedule(ctx: &Ctx, prefix: &str, mb: &MiddleboxSpec) -> Result<(), ConfigError> {
    let f = |name: &str| format!("{prefix}{name}");
    let secs = |name: &str, v: f64| {
        if v.is_finite() && v >= 0.0 {
            Ok(())
        } else {
            Err(ctx.err(f(name), "expected a number of seconds >= 0"))
        }
    };
    secs("active_from_s", mb.active_from_s)?;
    if let Some(until) = mb.active_until_s {
        secs("active_until_s", until)?;
        if until <= mb.active_from_s {
            return Err(ctx.err(f("active_until_s"), "must be greater than active_from_s"));
        }
    }
    secs("on_s", mb.on_s)?;
    secs("off_s", mb.off_s)?;
    if (mb.on_s > 0.0) != (mb.off_s > 0.0) {
        let which = if mb.on_s > 0.0 { "off_s" } else { "on_s" };
        return Err(ctx.err(f(which), "on_s and off_s must both be > 0 (periodic) or both 0 (always on)"));
    }
    if let Some(p) = mb.flow_probability {
        if !(0.0..=1.0).contains(&p) {
            return Err(ctx.err(f("flow_probability"), "expected a probability in [0, 1]"));
        }
    }
    if mb.tcp_rst_after_bytes > MAX_RST_AFTER_BYTES {
        return Err(ctx.err(f("tcp_rst_after_bytes"), "expected at most 2147483647 bytes (0 = off)"));
    }
    Ok(())
}

fn merge(common: &RawDirection, over: Option<&RawDirection>) -> RawDirection {
    let Some(o) = over else { return common.clone() };
    let (rate_mbit, trace) = if o.rate_mbit.is_some() || o.trace.is_some() {
        (o.rate_mbit, o.trace.clone())
    } else {
        (common.rate_mbit, common.trace.clone())
    };
    let (buffer_bytes, buffer_packets) = if o.buffer_bytes.is_some() || o.buffer_packets.is_some() {
        (o.buffer_bytes, o.buffer_packets)
    } else {
        (common.buffer_bytes, common.buffer_packets)
    };
    RawDirection {
        rate_mbit,
        trace,
        delay_ms: o.delay_ms.or(common.delay_ms),
        jitter_ms: o.jitter_ms.or(common.jitter_ms),
        jitter_distribution: o.jitter_distribution.or(common.jitter_distribution),
        loss: o.loss.or(common.loss),
        buffer_bytes,
        buffer_packets,
        gilbert_elliott: o.gilbert_elliott.clone().or_else(|| common.gilbert_elliott.clone()),
        reorder: o.reorder.clone().or_else(|| common.reorder.clone()),
        middlebox: o.middlebox.clone().or_else(|| common.middlebox.clone()),
        aqm: o.aqm.clone().or_else(|| common.aqm.clone()),
    }
}

fn resolve(
    ctx: &Ctx,
    dir: &str,
    own: Option<&RawDirection>,
    m: &RawDirection,
) -> Result<DirectionProfile, ConfigError> {
    // Name the field where the value was written: the direction's table or the top level.
    let origin = |own_has: bool, key: &str| {
        if own_has {
            format!("{dir}.{key}")
        } else {
            key.to_string()
        }
    };
    let own_rate = own.is_some_and(|o| o.rate_mbit.is_some() || o.trace.is_some());
    let rate = match (m.rate_mbit, &m.trace) {
        (Some(r), None) => RateSpec::Fixed { rate_mbit: r },
        (None, Some(p)) => {
            let path = ctx.base.join(p);
            let field = origin(own_rate, "trace");
            let trace = Trace::load(&path).map_err(|e| ctx.err(field, e))?;
            let path = std::fs::canonicalize(&path).unwrap_or(path);
            RateSpec::Trace {
                path,
                opportunities: trace.len(),
                period_ms: trace.period_ms(),
                mean_mbit: trace.mean_mbit(),
                trace,
            }
        }
        (None, None) => return Err(ctx.err(format!("{dir}.rate_mbit"), "one of rate_mbit or trace is required")),
        (Some(_), Some(_)) => unreachable!("checked per table"),
    };
    let buffer = match (m.buffer_bytes, m.buffer_packets) {
        (Some(b), _) => BufferLimit::Bytes(b),
        (_, Some(p)) => BufferLimit::Packets(p),
        _ => BufferLimit::Unlimited,
    };
    let aqm = m.aqm.as_ref().and_then(|a| crate::config_aqm::resolve(a).ok());
    let reorder = m.reorder.clone().filter(|r| r.probability > 0.0);
    if let (Some(a), Some(_)) = (&aqm, &reorder) {
        if a.is_scheduler() {
            let name = if matches!(a, crate::config_aqm::AqmSpec::DualPi2(_)) { "dualpi2" } else { "fq_codel" };
            return Err(ctx.err(
                format!("{dir}.aqm"),
                format!("{name} and reorder cannot be combined (the scheduler decides the order packets leave in)"),
            ));
        }
    }
    let loss = match (&m.gilbert_elliott, m.loss) {
        (Some(ge), _) => LossSpec::GilbertElliott(ge.clone()),
        (None, Some(p)) if p > 0.0 => LossSpec::Bernoulli { probability: p },
        _ => LossSpec::None,
    };
    Ok(DirectionProfile {
        rate,
        delay_ms: m.delay_ms.unwrap_or(0.0),
        jitter_ms: m.jitter_ms.unwrap_or(0.0),
        jitter_distribution: m.jitter_distribution.unwrap_or_default(),
        loss,
        buffer,
        reorder,
        middlebox: m.middlebox.clone().unwrap_or_default(),
        // checked per table as written (check_table): resolves here
        aqm,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<LinkConfig, ConfigError> {
        LinkConfig::parse(text, "link.toml", Path::new("."))
    }

    fn err(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    #[test]
    fn contract_example_parses() {
        let c = parse(
            r#"
rate_mbit = 10.0
delay_ms = 18.0
jitter_ms = 0.0
jitter_distribution = "uniform"
loss = 0.0
buffer_bytes = 30000
[up.gilbert_elliott]
p = 0.01
r = 0.3
loss_bad = 1.0
loss_good = 0.0
[up.reorder]
probability = 0.01
ahead_ms = 5.0
[up.middlebox]
block_udp = false
block_udp_after_packets = 0
udp_rate_mbit = 0.0
max_udp_datagram = 0
"#,
        )
        .unwrap();
        assert_eq!(c.up.rate, RateSpec::Fixed { rate_mbit: 10.0 });
        assert_eq!(c.down.delay_ms, 18.0);
        assert_eq!(c.up.buffer, BufferLimit::Bytes(30000));
        assert!(matches!(c.up.loss, LossSpec::GilbertElliott(_)));
        assert_eq!(c.down.loss, LossSpec::None);
        assert!(c.up.reorder.is_some() && c.down.reorder.is_none());
    }

    #[test]
    fn direction_overrides_top_level() {
        let c =
            parse("rate_mbit = 10\ndelay_ms = 5\nbuffer_packets = 100\n[down]\nrate_mbit = 50\nbuffer_bytes = 9000\n")
                .unwrap();
        assert_eq!(c.up.rate, RateSpec::Fixed { rate_mbit: 10.0 });
        assert_eq!(c.down.rate, RateSpec::Fixed { rate_mbit: 50.0 });
        assert_eq!(c.up.buffer, BufferLimit::Packets(100));
        assert_eq!(c.down.buffer, BufferLimit::Bytes(9000));
        assert_eq!(c.down.delay_ms, 5.0);
    }

    #[test]
    fn errors_name_the_field() {
        assert_eq!(err("rate_mbit = 1\n[up]\ndelay_ms = -1\n"), "link.toml: up.delay_ms: expected a number >= 0");
        assert_eq!(err("rate_mbit = 1\nloss = 1.5\n"), "link.toml: loss: expected a probability in [0, 1]");
        assert!(err("rate_mbit = 1\n[down]\ndelay_ms = \"x\"\n").starts_with("link.toml: down.delay_ms: invalid type"));
        assert!(err("rate_mbit = 1\n[up.gilbert_elliott]\np = 2\nr = 0.1\n")
            .starts_with("link.toml: up.gilbert_elliott.p:"));
        assert!(err("rate_mbit = 1\n[up.reorder]\nprobability = 0.1\n")
            .starts_with("link.toml: up.reorder: missing field `ahead_ms`"));
        assert!(err("rate_mbit = 1\n[up]\njitter_distribution = \"pareto\"\n")
            .starts_with("link.toml: up.jitter_distribution: unknown variant"));
    }

    #[test]
    fn unknown_fields_are_errors() {
        assert!(err("rate_mbit = 1\ndelay = 3\n").starts_with("link.toml: delay: unknown field"));
        assert!(err("rate_mbit = 1\n[up]\nbogus = 3\n").starts_with("link.toml: up.bogus: unknown field"));
        assert!(err("rate_mbit = 1\n[up.middlebox]\nblock_tcp = true\n")
            .starts_with("link.toml: up.middlebox.block_tcp: unknown field"));
        assert!(err("rate_mbit = 1\n[sideways]\n").starts_with("link.toml: sideways: unknown field"));
    }

    #[test]
    fn exclusive_pairs() {
        assert!(err("rate_mbit = 1\ntrace = \"x\"\n").starts_with("link.toml: trace: set either"));
        assert!(err("rate_mbit = 1\n[up]\nbuffer_bytes = 1\nbuffer_packets = 2\n")
            .starts_with("link.toml: up.buffer_packets: set either"));
        assert_eq!(err("delay_ms = 1\n"), "link.toml: up.rate_mbit: one of rate_mbit or trace is required");
        assert_eq!(err("rate_mbit = 0\n"), "link.toml: rate_mbit: expected a number > 0");
    }

    #[test]
    fn syntax_error_has_no_field() {
        let e = parse("rate_mbit = = 1\n").unwrap_err();
        assert_eq!(e.field, "");
        assert!(e.to_string().starts_with("link.toml: "));
    }

    #[test]
    fn middlebox_policies_parse_and_validate() {
        let c = parse(
            "rate_mbit = 1\n[down.middlebox]\ntcp_rst_after_bytes = 100000\ndrop_quic_initial = true\n\
             quic_blackhole_after_handshake = true\nactive_from_s = 5\nactive_until_s = 20\non_s = 2\noff_s = 3\n\
             flow_probability = 0.5\n",
        )
        .unwrap();
        let mb = &c.down.middlebox;
        assert_eq!(mb.tcp_rst_after_bytes, 100_000);
        assert!(mb.drop_quic_initial && mb.quic_blackhole_after_handshake);
        assert_eq!((mb.active_from_s, mb.active_until_s, mb.on_s, mb.off_s), (5.0, Some(20.0), 2.0, 3.0));
        assert_eq!(mb.flow_probability, Some(0.5));
        assert_eq!(c.up.middlebox, MiddleboxSpec::default());
        let bad = |body: &str| err(&format!("rate_mbit = 1\n[up.middlebox]\n{body}\n"));
        assert_eq!(
            bad("active_until_s = 0"),
            "link.toml: up.middlebox.active_until_s: must be greater than active_from_s"
        );
        assert!(bad("on_s = 1").starts_with("link.toml: up.middlebox.off_s: on_s and off_s must both"));
        assert!(bad("off_s = 1").starts_with("link.toml: up.middlebox.on_s: on_s and off_s must both"));
        assert!(bad("active_from_s = -1").starts_with("link.toml: up.middlebox.active_from_s: expected"));
        assert!(bad("flow_probability = 1.5")
            .starts_with("link.toml: up.middlebox.flow_probability: expected a probability"));
        assert!(bad("tcp_rst_after_bytes = 4000000000").starts_with("link.toml: up.middlebox.tcp_rst_after_bytes:"));
        assert!(bad("tcp_rst_after_bytes = -1").starts_with("link.toml: up.middlebox.tcp_rst_after_bytes:"));
        assert!(
            bad("drop_quic_initials = true").starts_with("link.toml: up.middlebox.drop_quic_initials: unknown field")
        );
        assert!(err("rate_mbit = 1\n[middlebox]\non_s = 1\n").starts_with("link.toml: middlebox.off_s:"));
    }

    #[test]
    fn the_middlebox_ecn_policy_parses_and_an_unknown_one_is_one_clear_error() {
        for (name, policy) in EcnPolicy::NAMES {
            let c = parse(&format!("rate_mbit = 1\n[middlebox]\necn = \"{name}\"\n")).unwrap();
            assert_eq!((c.up.middlebox.ecn, c.down.middlebox.ecn), (Some(policy), Some(policy)));
            assert_eq!(policy.name(), name);
            // `linkem validate` prints it as written
            assert_eq!(serde_json::to_value(&c.up.middlebox).unwrap()["ecn"], name);
        }
        let c = parse("rate_mbit = 1\n[down.middlebox]\necn = \"drop_ect\"\n").unwrap();
        assert_eq!((c.up.middlebox.ecn, c.down.middlebox.ecn), (None, Some(EcnPolicy::DropEct)));
        let allowed = "\"bleach\", \"drop_ect\", \"ect0_to_ect1\", \"ect1_to_ect0\", \"mark_ce\"";
        assert_eq!(
            err("rate_mbit = 1\n[up.middlebox]\necn = \"bleech\"\n"),
            format!("link.toml: up.middlebox.ecn: unknown ECN policy \"bleech\"; expected one of {allowed}")
        );
        // the AQM's switch is a boolean; here a boolean is the wrong type, said with the values
        assert_eq!(
            err("rate_mbit = 1\n[middlebox]\necn = true\n"),
            format!("link.toml: middlebox.ecn: invalid type: boolean `true`, expected one of {allowed}")
        );
        assert!(err("rate_mbit = 1\n[middlebox]\necn = \"none\"\n").starts_with("link.toml: middlebox.ecn: unknown"));
    }

    #[test]
    fn nfqueue_refuses_what_rewrites_packets_and_takes_drop_ect() {
        let refusal = |text: &str| parse(&format!("rate_mbit = 1\n{text}")).unwrap().nfqueue_refusal();
        assert_eq!(refusal(""), None);
        assert_eq!(refusal("[middlebox]\necn = \"drop_ect\"\nblock_udp = true\n"), None);
        assert_eq!(refusal("[aqm]\ndiscipline = \"codel\"\n"), None);
        for name in ["bleach", "ect0_to_ect1", "ect1_to_ect0", "mark_ce"] {
            let why = refusal(&format!("[down.middlebox]\necn = \"{name}\"\n")).unwrap();
            assert!(why.starts_with(&format!("the down middlebox's ecn = \"{name}\" rewrites the ECN field")), "{why}");
            assert!(why.contains("needs the AF_PACKET datapath") && why.contains("\"drop_ect\" works"), "{why}");
        }
        let why = refusal("[aqm]\ndiscipline = \"codel\"\necn = true\n").unwrap();
        assert!(why.starts_with("an aqm that marks") && why.ends_with("so a CE mark would never leave"), "{why}");
        assert!(refusal("[nat]\n").unwrap().starts_with("[nat] needs the AF_PACKET datapath"));
    }

    #[test]
    fn missing_trace_file_names_trace() {
        assert!(
            err("[up]\ntrace = \"/nonexistent/x.mahi\"\n[down]\nrate_mbit = 1\n").starts_with("link.toml: up.trace:")
        );
    }
}
