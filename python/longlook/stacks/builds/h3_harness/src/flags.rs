//! The harness's `--name value` flags, and the switches that take no value.

use std::collections::HashMap;

pub struct Flags(HashMap<String, String>);

impl Flags {
    /// `--name value` pairs, and the names in `switches` alone (kept with an empty value).
    pub fn parse(args: &[String], switches: &[&str]) -> Flags {
        let mut flags = HashMap::new();
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            let name = arg.trim_start_matches("--");
            let value = if switches.contains(&name) { Some(String::new()) } else { args.next().cloned() };
            if let Some(value) = value {
                flags.insert(name.to_string(), value);
            }
        }
        Flags(flags)
    }

    pub fn get(&self, name: &str) -> Result<&str, String> {
        self.0.get(name).map(String::as_str).ok_or(format!("--{name} is required"))
    }

    pub fn get_or<'a>(&'a self, name: &str, default: &'a str) -> &'a str {
        self.0.get(name).map(String::as_str).unwrap_or(default)
    }

    pub fn has(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }
}

#[cfg(test)]
mod tests {
    use super::Flags;

    #[test]
    fn pairs_and_switches() {
        let args: Vec<String> = ["--url", "https://a/", "--chacha20", "--out", "f.json"].map(String::from).to_vec();
        let f = Flags::parse(&args, &["chacha20"]);
        assert_eq!(f.get("url"), Ok("https://a/"));
        assert!(f.has("chacha20") && f.get_or("out", "") == "f.json");
        assert_eq!(f.get("ca"), Err("--ca is required".to_string()));
    }
}
