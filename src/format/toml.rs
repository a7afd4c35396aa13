//! TOML through the `toml` crate, made to always parse.
//!
//! The crate writes any table of TOML values correctly (quoting, multi-line
//! strings, arrays of tables, plain keys ahead of sub-tables); what it cannot
//! know is how to fit JSON's extra shapes, so this module adapts the tree
//! first: the document must be a table, integers must fit `i64`, and there
//! is no `null`. Empty arrays and tables are TOML values like any other and
//! are kept.

use serde_json::{Map, Value};

use super::ROOT_KEY;
use super::tree::Tree;
use crate::error::Result;
use crate::fragment::error;

pub(super) fn write(tree: &Tree, out: &mut String) -> Result<()> {
    if tree.is_empty() {
        return Ok(());
    }
    let document = match tomlable(tree.to_value()) {
        Some(Value::Object(table)) => table,
        Some(other) => Map::from_iter([(ROOT_KEY.to_owned(), other)]),
        None => return Ok(()),
    };
    let text = ::toml::to_string(&document)
        .map_err(|e| error("", format!("the TOML writer rejected the document: {e}")))?;
    out.push_str(&text);
    Ok(())
}

/// The value as TOML can hold it; `None` for a `null`.
///
/// * TOML has no null: a null is dropped, as a key of a table and as an
///   element of an array alike (the elements after it move up one place).
///   Nothing else is dropped: a table or array that held only nulls stays,
///   empty.
/// * TOML integers are `i64`: larger ones become strings of the same digits
///   rather than an integer no TOML parser accepts.
///
/// The tree is no deeper than `MAX_DEPTH`, so the recursion is bounded.
fn tomlable(value: Value) -> Option<Value> {
    let value = match value {
        Value::Null => return None,
        Value::Number(n) if n.is_u64() && n.as_i64().is_none() => Value::String(n.to_string()),
        Value::Array(items) => items.into_iter().filter_map(tomlable).collect(),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter_map(|(k, v)| Some((k, tomlable(v)?)))
                .collect(),
        ),
        other => other,
    };
    Some(value)
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
