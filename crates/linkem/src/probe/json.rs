//! A tiny JSON writer: the probe prints one flat-ish document, not worth a dependency.

use super::stats::Summary;

pub struct Obj {
    parts: Vec<String>,
}

pub fn num(x: f64) -> String {
    if x.is_finite() {
        format!("{}", (x * 1e6).round() / 1e6)
    } else {
        "null".into()
    }
}

pub fn string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

impl Obj {
    pub fn new() -> Self {
        Obj { parts: Vec::new() }
    }
    pub fn raw(mut self, key: &str, value: String) -> Self {
        self.parts.push(format!("{}: {}", string(key), value));
        self
    }
    pub fn int(self, key: &str, v: u64) -> Self {
        self.raw(key, v.to_string())
    }
    pub fn float(self, key: &str, v: f64) -> Self {
        self.raw(key, num(v))
    }
    pub fn str(self, key: &str, v: &str) -> Self {
        self.raw(key, string(v))
    }
    pub fn summary(self, key: &str, s: &Summary) -> Self {
        let o = Obj::new()
            .int("n", s.n as u64)
            .float("mean", s.mean)
            .float("sd", s.sd)
            .float("min", s.min)
            .float("p50", s.p50)
            .float("p90", s.p90)
            .float("p99", s.p99)
            .float("max", s.max);
        self.raw(key, o.build())
    }
    pub fn build(self) -> String {
        format!("{{{}}}", self.parts.join(", "))
    }
}
