//! TOML: documents that parse back to their data, strings and numbers
//! TOML cannot hold as written kept as strings, and empty or nested tables
//! in place.

use serde_json::json;

use agent_context::format::{FormatOptions, FragmentFormat, render_value};

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
    let out =
        toml(json!({"big": u64::MAX, "max": i64::MAX, "min": i64::MIN, "n": null, "l": [null, 1]}));
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
