//! Range-checked value parsers for numeric flags: every number given on the command line
//! is finite and inside its documented range, or clap refuses it before any work starts,
//! with an error that names the flag (clap adds "invalid value 'X' for '--flag'") and
//! the allowed range.
//!
//! The bounds guard against two kinds of harm: values that are meaningless (a negative
//! count, a Poisson ratio of 0.5 or more, NaN), and values that are merely huge but would
//! allocate absurdly or run for ages (a resolution of 10^6 is 10^18 cells). Each flag's
//! bound is stated in its `--help` and justified where the flag is declared.

/// A parser for a finite number in `lo..=hi`.
pub fn real(lo: f64, hi: f64) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync {
    move |s| {
        let v = super::parse_finite(s)?;
        if v < lo || v > hi {
            return Err(format!("{v} is outside the allowed range {lo}..={hi}"));
        }
        Ok(v)
    }
}

/// A parser for a finite number in `(0, hi]`.
pub fn positive(hi: f64) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync {
    move |s| {
        let v = super::parse_finite(s)?;
        if v <= 0.0 || v > hi {
            return Err(format!("{v} is outside the allowed range: > 0 and <= {hi}"));
        }
        Ok(v)
    }
}

/// A parser for an integer in `lo..=hi`.
pub fn count(lo: usize, hi: usize) -> impl Fn(&str) -> Result<usize, String> + Clone + Send + Sync {
    move |s| {
        let v: usize = s
            .trim()
            .parse()
            .map_err(|_| format!("'{s}' is not a whole number >= 0"))?;
        if v < lo || v > hi {
            return Err(format!("{v} is outside the allowed range {lo}..={hi}"));
        }
        Ok(v)
    }
}

/// Parses a Poisson ratio: finite and in (-1, 0.5). At 0.5 the material is
/// incompressible (the StVK stiffness has no finite bulk modulus); below -1 it is not a
/// stable elastic material.
pub fn poisson_ratio(s: &str) -> Result<f64, String> {
    let v = super::parse_finite(s)?;
    if v <= -1.0 || v >= 0.5 {
        return Err(format!("{v} is outside the allowed range: > -1 and < 0.5"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_inclusive_and_non_finite_is_refused() {
        let p = real(-1.0, 1.0);
        assert_eq!(p("1"), Ok(1.0));
        assert_eq!(p("-1"), Ok(-1.0));
        assert!(p("1.0001").unwrap_err().contains("-1..=1"));
        for bad in ["nan", "inf", "-inf", "x", ""] {
            assert!(p(bad).is_err(), "{bad}");
        }
        let q = positive(2.0);
        assert!(q("0").is_err());
        assert_eq!(q("2"), Ok(2.0));
        let c = count(1, 10);
        assert_eq!(c("10"), Ok(10));
        assert!(c("0").unwrap_err().contains("1..=10"));
        assert!(c("-3").unwrap_err().contains("whole number"));
        assert!(c("1e3").is_err());
        assert!(poisson_ratio("0.5").is_err() && poisson_ratio("-1").is_err());
        assert_eq!(poisson_ratio("0.45"), Ok(0.45));
    }
}
