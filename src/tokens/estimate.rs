//! The counter for models whose tokenizer is not public, and its factor.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, ErrorKind, Result};
use crate::tokens::{Encoding, TiktokenCounter, TokenCounter};

/// How many times the `o200k_base` count an estimate claims, at least 1.0.
///
/// Kept in thousandths, rounded up, so that counts are integer arithmetic
/// (the same on every machine) and a factor never shrinks in storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EstimateFactor {
    per_mille: u32,
}

impl EstimateFactor {
    /// The default: 1.6 × `o200k_base`. Measured against Anthropic's older
    /// published tokenizer, English, code, JSON and whitespace stay at or
    /// below 1.3, emoji, Latin-script languages, Chinese, Japanese,
    /// Vietnamese and Hebrew at or below 1.51; Cyrillic, Korean, Greek,
    /// Arabic, Indic scripts and Thai go above (up to 5.8). docs/counting.md gives
    /// the figures.
    pub const DEFAULT: EstimateFactor = EstimateFactor { per_mille: 1_600 };

    /// The largest factor accepted: any ratio above it is taken for a
    /// misreport rather than a tokenizer (Tamil, the worst script measured,
    /// is 5.8).
    pub const MAX: EstimateFactor = EstimateFactor { per_mille: 16_000 };

    /// `factor`, rounded up to a thousandth.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Option`] (option `estimate_factor`) if `factor` is not a
    /// number from 1.0 to [`MAX`](EstimateFactor::MAX): an estimate below the
    /// `o200k_base` count would undercount most text.
    pub fn new(factor: f64) -> Result<EstimateFactor> {
        let max = f64::from(Self::MAX.per_mille) / 1000.0;
        if !(1.0..=max).contains(&factor) {
            let why = if factor < 1.0 {
                "; it multiplies the o200k_base count, and below 1.0 it would undercount".to_owned()
            } else if factor > max {
                format!(
                    "; it multiplies the o200k_base count, and at most {max} is accepted (no \
                     tokenizer measured needs more than 5.8)"
                )
            } else {
                String::new()
            };
            return Err(ErrorKind::Option {
                option: "estimate_factor".into(),
                message: format!(
                    "the estimate factor must be a number from 1.0 to {max}, got {factor}{why}"
                ),
            }
            .into());
        }
        // The tolerance keeps 1.6 (1600.0000000000002 after scaling) at 1600.
        let per_mille = (factor * 1000.0 - 1e-6).ceil() as u32;
        Ok(EstimateFactor {
            per_mille: per_mille.max(1000),
        })
    }

    /// The smallest factor at or above `numerator / denominator`, unbounded
    /// above; `None` for a zero denominator.
    pub(crate) fn ratio_at_least(numerator: usize, denominator: usize) -> Option<EstimateFactor> {
        if denominator == 0 {
            return None;
        }
        let per_mille = (numerator as u128 * 1000).div_ceil(denominator as u128);
        Some(EstimateFactor {
            per_mille: u32::try_from(per_mille).unwrap_or(u32::MAX),
        })
    }

    /// This factor raised by `percent` percent, rounded up.
    pub(crate) fn raised_by_percent(self, percent: u32) -> EstimateFactor {
        let per_mille = (u64::from(self.per_mille) * u64::from(100 + percent)).div_ceil(100);
        EstimateFactor {
            per_mille: u32::try_from(per_mille).unwrap_or(u32::MAX),
        }
    }

    /// The factor as a number.
    pub fn get(self) -> f64 {
        f64::from(self.per_mille) / 1000.0
    }

    /// `tokens` times this factor, rounded up.
    pub fn apply(self, tokens: usize) -> usize {
        let scaled = (tokens as u128 * u128::from(self.per_mille)).div_ceil(1000);
        usize::try_from(scaled).unwrap_or(usize::MAX)
    }
}

impl Default for EstimateFactor {
    fn default() -> Self {
        EstimateFactor::DEFAULT
    }
}

impl fmt::Display for EstimateFactor {
    /// The shortest decimal: `1.6`, `1.25`, `1.0`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (whole, thousandths) = (self.per_mille / 1000, self.per_mille % 1000);
        let fraction = format!("{thousandths:03}");
        let fraction = fraction.trim_end_matches('0');
        write!(
            f,
            "{whole}.{}",
            if fraction.is_empty() { "0" } else { fraction }
        )
    }
}

impl FromStr for EstimateFactor {
    type Err = Error;

    /// Parses a decimal such as `1.6`.
    fn from_str(text: &str) -> Result<EstimateFactor> {
        let factor: f64 = text.trim().parse().map_err(|_| ErrorKind::Option {
            option: "estimate_factor".into(),
            message: format!("expected a number such as 1.6, got {text:?}"),
        })?;
        EstimateFactor::new(factor)
    }
}

/// A conservative estimate: the exact `o200k_base` count times an
/// [`EstimateFactor`], rounded up. Always reported with
/// `token_count_exact: false`.
#[derive(Debug, Clone)]
pub struct EstimateCounter {
    base: TiktokenCounter,
    factor: EstimateFactor,
    name: String,
}

impl EstimateCounter {
    /// The estimate with the [default factor](EstimateFactor::DEFAULT),
    /// loading the `o200k_base` tables on first use.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Tokenizer`](crate::ErrorKind::Tokenizer) if the tables are not built
    /// in (never: they all are, and load on the first count).
    pub fn new() -> Result<Self> {
        EstimateCounter::with_factor(EstimateFactor::DEFAULT)
    }

    /// The estimate with `factor`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Tokenizer`](crate::ErrorKind::Tokenizer) if the tables are not built
    /// in (never: they all are, and load on the first count).
    pub fn with_factor(factor: EstimateFactor) -> Result<Self> {
        Ok(EstimateCounter {
            base: TiktokenCounter::new(Encoding::O200kBase)?,
            factor,
            name: format!("estimate(o200k_base*{factor})"),
        })
    }

    /// The factor this estimate multiplies by.
    pub fn factor(&self) -> EstimateFactor {
        self.factor
    }
}

impl TokenCounter for EstimateCounter {
    fn count(&self, text: &str) -> usize {
        self.factor.apply(self.base.count(text))
    }

    fn is_exact(&self) -> bool {
        false
    }

    /// Rounding up each side's share never gives less than rounding up the
    /// whole's, so sums of parts bound the whole from above.
    fn additive_at_clean_cuts(&self) -> bool {
        true
    }

    fn encoding_name(&self) -> &str {
        &self.name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factors_round_up_to_thousandths() {
        let factor = |f| EstimateFactor::new(f).map(|f| f.to_string()).ok();
        assert_eq!(factor(1.6).as_deref(), Some("1.6"));
        assert_eq!(factor(1.25).as_deref(), Some("1.25"));
        assert_eq!(factor(1.0).as_deref(), Some("1.0"));
        assert_eq!(factor(1.2341).as_deref(), Some("1.235"));
        for bad in [0.99, 0.0, -1.0, 16.5, f64::NAN, f64::INFINITY] {
            assert_eq!(factor(bad), None, "{bad}");
        }
        assert_eq!(factor(16.0).as_deref(), Some("16.0"));
    }

    #[test]
    fn a_refused_factor_is_told_which_end_it_passed() {
        let message = |f| EstimateFactor::new(f).unwrap_err().to_string();
        let low = message(0.9);
        assert!(low.contains("got 0.9;"), "{low}");
        assert!(low.contains("below 1.0 it would undercount"), "{low}");
        for high in [16.0001, 1e10, f64::INFINITY] {
            let high = message(high);
            assert!(high.contains("at most 16 is accepted"), "{high}");
            assert!(!high.contains("below 1.0"), "{high}");
        }
        let nan = message(f64::NAN);
        assert!(nan.ends_with("got NaN"), "{nan}");
    }

    #[test]
    fn counts_are_the_base_times_the_factor_rounded_up() {
        let factor = EstimateFactor::DEFAULT;
        assert_eq!(factor.apply(0), 0);
        assert_eq!(factor.apply(1), 2);
        assert_eq!(factor.apply(5), 8);
        assert_eq!(factor.apply(7), 12);
        assert_eq!(
            EstimateFactor::ratio_at_least(16, 10),
            EstimateFactor::new(1.6).ok()
        );
        assert_eq!(EstimateFactor::ratio_at_least(1, 0), None);
        assert_eq!(
            EstimateFactor::DEFAULT.raised_by_percent(10).to_string(),
            "1.76"
        );
    }
}
