//! Parsers of the command line's numbers (clap `value_parser`s): a time or a factor out of
//! range is refused with a clear error, never a panic. Every subcommand's flags use them;
//! they depend on nothing else in the crate, so any module may.

/// The longest time any flag may give (a week: the scenario allows a broken mark of two days):
/// beyond it, or inf/nan, `Duration` would panic or a deadline overflow.
pub const MAX_SECONDS: f64 = 604_800.0;

/// `--x-s`: seconds, finite, 0 to a week (clap `value_parser`: a clear error, never a panic).
pub fn seconds(text: &str) -> Result<f64, String> {
    checked(text, 1.0, "seconds")
}

/// `--x-ms`: milliseconds, finite, 0 to a week.
pub fn millis(text: &str) -> Result<f64, String> {
    checked(text, 1000.0, "ms")
}

/// A multiplier of a measured time (the race's delay factor): finite, 0 to 1000.
pub fn factor(text: &str) -> Result<f64, String> {
    let v: f64 = text.trim().parse().map_err(|_| format!("{text:?} is not a number"))?;
    if v.is_finite() && (0.0..=1000.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{text} is not a factor in 0..=1000"))
    }
}

fn checked(text: &str, per_second: f64, unit: &str) -> Result<f64, String> {
    let v: f64 = text.trim().parse().map_err(|_| format!("{text:?} is not a number of {unit}"))?;
    let max = MAX_SECONDS * per_second;
    if v.is_finite() && (0.0..=max).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{text} is not a time in 0..={max} {unit} (a week)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_finite_and_at_most_a_week() {
        assert_eq!(seconds("2.5"), Ok(2.5));
        assert_eq!(millis("300"), Ok(300.0));
        for bad in ["inf", "-inf", "nan", "NaN", "1e300", "-1", "604801", "x", ""] {
            assert!(seconds(bad).is_err(), "{bad}");
        }
        assert!(millis("604800001").is_err() && millis("604800000").is_ok());
        assert!(factor("1e300").is_err() && factor("nan").is_err() && factor("1.5").is_ok());
    }
}
