//! TOML through the `toml` crate, made to always parse.
//!
//! The crate writes any table of TOML values correctly (quoting, multi-line
//! strings, arrays of tables, plain keys ahead of sub-tables); what it cannot
//! know is how to fit JSON's extra shapes, so this module adapts the tree
//! first: the document must be a table, there is no `null`, and a number
//! must fit TOML's own (`i64` integers, `f64` floats) or be written as the
//! string of its digits. Empty arrays and tables are TOML values like any
//! other and are kept.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Number, Value};

use super::ROOT_KEY;
use super::tree::Tree;
use crate::error::Result;
use crate::fragment::error;
use crate::json_number::{is_float_text, same_value};

pub(super) fn write(tree: &Tree, out: &mut String) -> Result<()> {
    if tree.is_empty() {
        return Ok(());
    }
    let document = match without_nulls(tree.to_value()) {
        Some(Value::Object(table)) => table,
        Some(other) => Map::from_iter([(ROOT_KEY.to_owned(), other)]),
        None => return Ok(()),
    };
    let text = ::toml::to_string(&Toml(&Value::Object(document)))
        .map_err(|e| error("", format!("the TOML writer rejected the document: {e}")))?;
    out.push_str(&text);
    Ok(())
}

/// The value without its nulls, which TOML cannot hold; `None` for a null.
///
/// A null is dropped as a key of a table and as an element of an array
/// alike (the elements after it move up one place). Nothing else is
/// dropped: a table or array that held only nulls stays, empty.
///
/// The tree is no deeper than `MAX_DEPTH`, so the recursion is bounded.
fn without_nulls(value: Value) -> Option<Value> {
    let value = match value {
        Value::Null => return None,
        Value::Array(items) => items.into_iter().filter_map(without_nulls).collect(),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter_map(|(k, v)| Some((k, without_nulls(v)?)))
                .collect(),
        ),
        other => other,
    };
    Some(value)
}

/// A number as TOML writes it.
#[derive(Debug, PartialEq)]
enum TomlNumber<'a> {
    Integer(i64),
    Float(f64),
    /// The number's own text, as a string: no TOML number holds it.
    Digits(&'a str),
}

/// TOML integers are `i64` and its floats `f64` (written in the shortest
/// form that reads back): an integer past `i64`, or a float whose `f64` is
/// another value (`0.1000000000000000000001`, `1e400`), is written as the
/// string of its digits rather than changed. The value survives, its type
/// does not.
fn toml_number(number: &Number) -> TomlNumber<'_> {
    let text = number.as_str();
    if !is_float_text(text) {
        return number
            .as_i64()
            .map_or(TomlNumber::Digits(text), TomlNumber::Integer);
    }
    match number.as_f64() {
        Some(float) if same_value(text, &format!("{float:e}")) => TomlNumber::Float(float),
        _ => TomlNumber::Digits(text),
    }
}

/// A JSON value without nulls, serialized as TOML holds it.
struct Toml<'a>(&'a Value);

impl Serialize for Toml<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Number(number) => match toml_number(number) {
                TomlNumber::Integer(i) => serializer.serialize_i64(i),
                TomlNumber::Float(f) => serializer.serialize_f64(f),
                TomlNumber::Digits(text) => serializer.serialize_str(text),
            },
            Value::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&Toml(item))?;
                }
                seq.end()
            }
            Value::Object(map) => {
                let mut table = serializer.serialize_map(Some(map.len()))?;
                for (key, value) in map {
                    table.serialize_entry(key, &Toml(value))?;
                }
                table.end()
            }
            other => other.serialize(serializer),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::format::{FormatOptions, FragmentFormat, render_value};

    fn toml(value: serde_json::Value) -> String {
        render_value(&value, FragmentFormat::Toml, &FormatOptions::default()).unwrap()
    }

    fn parse(text: &str) -> serde_json::Value {
        serde_json::to_value(::toml::from_str::<::toml::Table>(text).unwrap()).unwrap()
    }

    #[test]
    fn the_design_example_is_a_table_with_a_sub_table() {
        let out = toml(json!({"config": {"debug": true, "timeout": 30,
            "database": {"host": "localhost", "port": 5432}}}));
        assert_eq!(
            out,
            "[config]\ndebug = true\ntimeout = 30\n\n[config.database]\nhost = \"localhost\"\nport = 5432"
        );
    }

    #[test]
    fn top_level_scalars_and_lists_are_wrapped() {
        assert_eq!(toml(json!("hi")), "value = \"hi\"");
        assert_eq!(toml(json!([1, "a"])), "value = [1, \"a\"]");
    }

    #[test]
    fn huge_integers_become_strings_and_nulls_vanish() {
        let out = toml(
            json!({"big": u64::MAX, "max": i64::MAX, "min": i64::MIN, "n": null, "l": [null, 1]}),
        );
        assert_eq!(
            parse(&out),
            json!({"big": "18446744073709551615", "max": i64::MAX, "min": i64::MIN, "l": [1]})
        );
    }

    #[test]
    fn numbers_toml_cannot_hold_are_strings_of_their_digits() {
        let value: serde_json::Value = serde_json::from_str(
            r#"{"big": 12345678901234567890123, "u64": 18446744073709551616,
                "below": -9223372036854775809, "long": 0.1000000000000000000001,
                "huge": 1e400, "min": -9223372036854775808, "same": 1.50, "exp": 1E3}"#,
        )
        .unwrap();
        let out = toml(value);
        assert!(out.contains("big = \"12345678901234567890123\"\n"), "{out}");
        assert_eq!(
            parse(&out),
            json!({"big": "12345678901234567890123", "u64": "18446744073709551616",
                "below": "-9223372036854775809", "long": "0.1000000000000000000001",
                "huge": "1e+400", "min": i64::MIN, "same": 1.5, "exp": 1000.0})
        );
    }

    #[test]
    fn empty_arrays_and_tables_survive_in_place() {
        assert_eq!(toml(json!([true, [], "x"])), "value = [true, [], \"x\"]");
        let value =
            json!({"a": [], "t": {}, "nested": [{}, [[]], {"e": {}}], "only_nulls": {"n": null}});
        assert_eq!(
            parse(&toml(value)),
            json!({"a": [], "t": {}, "nested": [{}, [[]], {"e": {}}], "only_nulls": {}})
        );
        assert_eq!(toml(json!(null)), "");
        assert_eq!(toml(json!({})), "");
        assert_eq!(toml(json!([null])), "value = []");
    }

    #[test]
    fn awkward_strings_and_keys_parse_back() {
        let value = json!({
            "s": "line1\nline2 \"q\" ''' \"\"\" \\ \r\n\t\u{7f}\u{0}",
            "": "empty key",
            "a.b": {"c d": [{"x": 1}, {"x": [{"y": 2}]}]},
            "mixed": [1, "two", {"k": 3}, [4.5]],
        });
        assert_eq!(parse(&toml(value.clone())), value);
    }

    #[test]
    fn plain_keys_move_ahead_of_tables() {
        assert_eq!(
            toml(json!({"t": {"x": 1}, "a": 1, "rows": [{"k": 1}], "b": [1]})),
            "a = 1\nb = [1]\n\n[t]\nx = 1\n\n[[rows]]\nk = 1"
        );
    }

    #[test]
    fn strings_that_look_like_other_types_stay_strings() {
        let value = json!({
            "date": "1979-05-27T07:32:00Z",
            "time": "07:32:00",
            "number": "5432",
            "float": "inf",
            "bool": "true",
            "array": "[1, 2]",
            "table": "{ a = 1 }",
        });
        let out = toml(value.clone());
        assert!(out.contains("date = \"1979-05-27T07:32:00Z\""), "{out}");
        assert_eq!(parse(&out), value);
    }

    #[test]
    fn floats_round_trip_exactly() {
        let value =
            json!({"tiny": 5e-324, "huge": 1e300, "third": 0.1 + 0.2, "whole": 2.0, "neg": -1.5});
        assert_eq!(parse(&toml(value.clone())), value);
    }

    #[test]
    fn huge_integers_are_strings_at_any_depth() {
        let big = u64::MAX;
        let out = toml(json!({"list": [big, {"inner": [big]}], "table": {"deep": {"n": big}}}));
        let text = big.to_string();
        assert_eq!(
            parse(&out),
            json!({"list": [text, {"inner": [text]}], "table": {"deep": {"n": text}}})
        );
    }
}
