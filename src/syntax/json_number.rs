//! Numbers are data: which native number, if any, holds a JSON number's
//! digits, and whether two number texts are the same value.
//!
//! serde_json is built with `arbitrary_precision`, so a [`Number`] is the
//! text it was read from: `12345678901234567890123`, `-9223372036854775809`,
//! `0.1000000000000000000001` and `1e400` reach every JSON output (native
//! requests, reports, the store) digit for digit (an exponent is written
//! with its sign: `1e+400`). Its `Serialize`, though,
//! is serde_json's private dialect, a one-field struct that only serde_json's
//! serializers read. Other formats want a native number; [`Portable`] hands
//! them one wherever one holds the text exactly, and the formats with no
//! number wide enough (TOML, TOON) ask [`same_value`] what theirs would
//! write before they write it.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Number, Value};

/// A native number that holds a JSON number exactly.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Native {
    I64(i64),
    U64(u64),
    F64(f64),
}

/// True for a number written with a fraction or an exponent (`1.0`, `1e3`):
/// JSON's floats. Integers are the texts without.
pub(crate) fn is_float_text(text: &str) -> bool {
    text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E'))
}

/// The native number serde_json writes back as `number`'s own text: an
/// integer that fits `i64` or `u64`, or a float written in the shortest form
/// (`1.5`, `1e300`; not `1.50` or `1e400`). `None` when no native number
/// keeps every digit.
pub(crate) fn native(number: &Number) -> Option<Native> {
    let text = number.as_str();
    if !is_float_text(text) {
        // `-0` is the one JSON integer an `i64` writes back otherwise.
        return match (number.as_i64(), number.as_u64()) {
            (Some(_), _) if text == "-0" => None,
            (Some(i), _) => Some(Native::I64(i)),
            (None, Some(u)) => Some(Native::U64(u)),
            (None, None) => None,
        };
    }
    let float = number.as_f64()?;
    let written = Number::from_f64(float)?;
    (written.as_str() == text).then_some(Native::F64(float))
}

/// A JSON value that serializes its numbers as native numbers wherever one
/// holds every digit ([`native`]), so any serializer (TOML, …) reads them;
/// another number goes as serde_json's own dialect, which serde_json writes
/// digit for digit and other serializers see as a struct of one string.
pub(crate) struct Portable<'a>(pub(crate) &'a Value);

impl Serialize for Portable<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Number(number) => match native(number) {
                Some(Native::I64(i)) => serializer.serialize_i64(i),
                Some(Native::U64(u)) => serializer.serialize_u64(u),
                Some(Native::F64(f)) => serializer.serialize_f64(f),
                None => number.serialize(serializer),
            },
            Value::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&Portable(item))?;
                }
                seq.end()
            }
            Value::Object(map) => {
                let mut out = serializer.serialize_map(Some(map.len()))?;
                for (key, value) in map {
                    out.serialize_entry(key, &Portable(value))?;
                }
                out.end()
            }
            other => other.serialize(serializer),
        }
    }
}

/// A decimal number's exact value: its significant digits and the power of
/// ten of the last one (`-0.0150e2` is `-15 × 10^-1`). Zero has no digits
/// and no sign.
#[derive(Debug, PartialEq, Eq)]
struct Decimal {
    negative: bool,
    digits: String,
    exponent: i64,
}

/// Reads a number written in decimal, with or without fraction and exponent
/// (JSON's form, and Rust's `{}` and `{:e}` of a float); `None` for any
/// other text, or an exponent past `i64`.
fn decimal(text: &str) -> Option<Decimal> {
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], unsigned[at + 1..].parse::<i64>().ok()?),
        None => (unsigned, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all_digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !all_digits(whole) || !all_digits(fraction) {
        return None;
    }
    let joined = format!("{whole}{fraction}");
    let significant = joined.trim_start_matches('0');
    let digits = significant.trim_end_matches('0');
    if digits.is_empty() {
        return Some(Decimal {
            negative: false,
            digits: String::new(),
            exponent: 0,
        });
    }
    let trailing = i64::try_from(significant.len() - digits.len()).ok()?;
    let fraction_len = i64::try_from(fraction.len()).ok()?;
    Some(Decimal {
        negative,
        digits: digits.to_owned(),
        exponent: exponent.checked_sub(fraction_len)?.checked_add(trailing)?,
    })
}

/// True when two decimal texts are the same number exactly (`1.50` and
/// `1.5e0`, `-0` and `0`), false when they differ or either is not one.
pub fn same_value(a: &str, b: &str) -> bool {
    matches!((decimal(a), decimal(b)), (Some(a), Some(b)) if a == b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn number(text: &str) -> Number {
        text.parse().unwrap()
    }

    #[test]
    fn numbers_keep_their_digits() {
        for (text, kept) in [
            ("12345678901234567890123", "12345678901234567890123"),
            ("-9223372036854775809", "-9223372036854775809"),
            ("18446744073709551616", "18446744073709551616"),
            ("0.1000000000000000000001", "0.1000000000000000000001"),
            ("-0", "-0"),
            ("1.50", "1.50"),
            ("1e400", "1e+400"),
            ("1E-7", "1e-7"),
        ] {
            assert_eq!(number(text).as_str(), kept);
            let value: Value = serde_json::from_str(&format!("[{text}]")).unwrap();
            assert_eq!(value.to_string(), format!("[{kept}]"));
        }
    }

    #[test]
    fn a_native_number_holds_every_digit_or_none_is_given() {
        assert_eq!(
            native(&number("-9223372036854775808")),
            Some(Native::I64(i64::MIN))
        );
        assert_eq!(
            native(&number("18446744073709551615")),
            Some(Native::U64(u64::MAX))
        );
        assert_eq!(native(&number("1.5")), Some(Native::F64(1.5)));
        // serde_json writes `1e300` as `1e+300`, as it reads it.
        assert_eq!(native(&number("1e300")), Some(Native::F64(1e300)));
        for text in [
            "-9223372036854775809",
            "18446744073709551616",
            "0.1000000000000000000001",
            "1e400",
            "-0",
            "1.50",
            "1e3",
        ] {
            assert_eq!(native(&number(text)), None, "{text}");
        }
    }

    #[test]
    fn portable_numbers_reach_other_serializers_natively() {
        let text = r#"{"a":[1,-2,1.5,1.50],"b":"x","big":12345678901234567890123}"#;
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&Portable(&value)).unwrap(), text);
        let small = json!({"a": [1, -2, 1.5], "b": "x"});
        assert_eq!(
            toml::to_string(&Portable(&small)).unwrap(),
            "a = [1, -2, 1.5]\nb = \"x\"\n"
        );
    }

    #[test]
    fn values_compare_exactly() {
        assert!(same_value("1.50", "1.5e0"));
        assert!(same_value("-0", "0"));
        assert!(same_value("0.0e-5", "0"));
        assert!(same_value("100000000000000000000", "1e20"));
        assert!(same_value("0.000001", "1e-6"));
        assert!(!same_value(
            "12345678901234567890123",
            "1.2345678901234568e22"
        ));
        assert!(!same_value("0.1000000000000000000001", "1e-1"));
        assert!(!same_value("-1", "1"));
        assert!(!same_value("1e99999999999999999999", "inf"));
        assert!(!same_value("inf", "inf"));
    }
}
