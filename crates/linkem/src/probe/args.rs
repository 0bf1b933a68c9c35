//! `--key value` parsing with errors that name the flag (no dependency for four subcommands).

use std::collections::HashMap;
use std::str::FromStr;

pub struct Args {
    values: HashMap<String, String>,
    flags: Vec<String>,
}

impl Args {
    /// `boolean` lists the flags that take no value.
    pub fn parse(argv: &[String], boolean: &[&str]) -> Result<Args, String> {
        let mut values = HashMap::new();
        let mut flags = Vec::new();
        let mut i = 0;
        while i < argv.len() {
            let a = &argv[i];
            let key = a.strip_prefix("--").ok_or_else(|| format!("unexpected argument '{a}'"))?;
            if let Some((k, v)) = key.split_once('=') {
                values.insert(k.to_string(), v.to_string());
            } else if boolean.contains(&key) {
                flags.push(key.to_string());
            } else {
                let v = argv.get(i + 1).ok_or_else(|| format!("--{key} needs a value"))?;
                values.insert(key.to_string(), v.clone());
                i += 1;
            }
            i += 1;
        }
        Ok(Args { values, flags })
    }

    pub fn get<T: FromStr>(&self, key: &str, default: Option<T>) -> Result<T, String> {
        match self.values.get(key) {
            Some(v) => v.parse().map_err(|_| format!("--{key}: cannot parse '{v}'")),
            None => default.ok_or_else(|| format!("--{key} is required")),
        }
    }

    pub fn flag(&self, key: &str) -> bool {
        self.flags.iter().any(|f| f == key)
    }

    /// Errors on flags the subcommand does not know (a typo must not be silently ignored).
    pub fn only(&self, known: &[&str]) -> Result<(), String> {
        for k in self.values.keys().chain(self.flags.iter()) {
            if !known.contains(&k.as_str()) {
                return Err(format!("unknown option --{k}"));
            }
        }
        Ok(())
    }
}
