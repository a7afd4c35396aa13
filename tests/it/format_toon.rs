//! TOON: the renderer's forms (tables, field groups, list items), its
//! options, quoting, and what the reference decoder reads back.

use serde_json::{Value, json};
use toon_format::{DecodeOptions, Indent, decode};

use crate::common::limits::FRAGMENT_MAX_DEPTH as MAX_DEPTH;
use agent_context::format::{
    Delimiter, FormatOptions, FragmentFormat, render_fragments, render_value,
};
use agent_context::fragment::fragment;

fn toon(value: &Value, options: &FormatOptions) -> String {
    render_value(value, FragmentFormat::Toon, options).unwrap()
}

#[test]
fn the_design_example_holds_exactly() {
    let config = json!({"config": {"debug": true, "timeout": 30,
        "database": {"host": "localhost", "port": 5432}}});
    assert_eq!(
        toon(&config, &FormatOptions::default()),
        "config:\n  debug: true\n  timeout: 30\n  database:\n    host: localhost\n    port: 5432"
    );
}

#[test]
fn uniform_records_take_the_tabular_form() {
    let users = json!({"users": [{"id": 1, "name": "Ada"}, {"id": 2, "name": "Bob, Jr."}]});
    assert_eq!(
        toon(&users, &FormatOptions::default()),
        "users[2]{id,name}:\n  1,Ada\n  2,\"Bob, Jr.\""
    );
}

#[test]
fn delimiter_and_indent_are_honoured_and_decode() {
    let value = json!({"tags": ["a", "b|c"], "rows": [{"k": 1, "v": "x y"}], "o": {"p": {"q": 1}}});
    for (delimiter, header) in [
        (Delimiter::Comma, "tags[2]: a,b|c"),
        (Delimiter::Pipe, "tags[2|]: a|\"b|c\""),
        (Delimiter::Tab, "tags[2\t]: a\tb|c"),
    ] {
        let options = FormatOptions::default()
            .with_delimiter(delimiter)
            .with_indent(4);
        let out = toon(&value, &options);
        assert!(out.starts_with(header), "{out}");
        assert!(out.ends_with("o:\n    p:\n        q: 1"), "{out}");
        let decode_options = DecodeOptions::new().with_indent(Indent::Spaces(4));
        let back: Value = decode(&out, &decode_options).unwrap();
        assert_eq!(back, value);
    }
}

#[test]
fn a_bare_document_needs_no_wrapper() {
    assert_eq!(toon(&json!("true"), &FormatOptions::default()), "\"true\"");
    assert_eq!(toon(&json!([1, 2]), &FormatOptions::default()), "[2]: 1,2");
}

#[test]
fn data_keeps_what_fragments_drop() {
    let options = FormatOptions::default();
    for (value, expected) in [
        (json!(null), "null"),
        (json!({}), ""),
        (json!([]), "[]"),
        (
            json!({"a": [null, {}], "b": {}}),
            "a[2]:\n  - null\n  -\nb:",
        ),
    ] {
        assert_eq!(toon(&value, &options), expected, "{value}");
    }
    // The same data as a fragment is pruned, a prompt-building choice.
    let pruned = fragment("a", [json!({"x": null, "y": [], "z": 1})]);
    assert_eq!(
        render_fragments(&[pruned], FragmentFormat::Toon, &options).unwrap(),
        "a:\n  z: 1"
    );
}

#[test]
fn data_nested_too_deep_is_an_error_naming_the_path() {
    let mut value = json!(1);
    for _ in 0..MAX_DEPTH {
        value = json!([value]);
    }
    let options = FormatOptions::default();
    assert!(render_value(&value, FragmentFormat::Toon, &options).is_ok());
    let error = render_value(&json!({"hosts": value}), FragmentFormat::Toon, &options)
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("invalid structured context at `hosts[0][0]"),
        "{error}"
    );
    assert!(error.contains("nested deeper than 64 levels"), "{error}");
}

fn decodes_to(text: &str, value: &Value) {
    let back: Value = decode(text, &DecodeOptions::new()).unwrap();
    assert_eq!(&back, value, "{text}");
}

#[test]
fn strings_that_read_as_something_else_are_quoted() {
    let value = json!({"t": "true", "n": "null", "num": "-1", "e": "", "dash": "- x",
        "colon": "a: b", "nl": "one\ntwo", "hash": "#x", "pad": " p "});
    let out = toon(&value, &FormatOptions::default());
    assert_eq!(
        out,
        "t: \"true\"\nn: \"null\"\nnum: \"-1\"\ne: \"\"\ndash: \"- x\"\ncolon: \"a: b\"\n\
         nl: \"one\\ntwo\"\nhash: \"#x\"\npad: \" p \""
    );
    decodes_to(&out, &value);
}

#[test]
fn numbers_the_encoder_cannot_hold_are_strings_of_their_digits() {
    let text = r#"{"big": 12345678901234567890123, "u64": 18446744073709551616,
        "below": -9223372036854775809, "long": 0.1000000000000000000001,
        "huge": 1e400, "past": 1152921504606847000.0, "wide": 100000000000000000000,
        "same": 1.50, "exp": 1E3, "zero": -0}"#;
    let value: Value = serde_json::from_str(text).unwrap();
    let out = toon(&value, &FormatOptions::default());
    assert_eq!(
        out,
        "big: \"12345678901234567890123\"\nu64: \"18446744073709551616\"\n\
         below: \"-9223372036854775809\"\nlong: \"0.1000000000000000000001\"\n\
         huge: \"1e+400\"\npast: \"1152921504606847000.0\"\nwide: 100000000000000000000\n\
         same: 1.5\nexp: 1000\nzero: 0"
    );
    let back: Value = decode(&out, &DecodeOptions::new()).unwrap();
    assert_eq!(back["big"], "12345678901234567890123");
    assert_eq!(back["below"], "-9223372036854775809");
    assert_eq!(back["huge"], "1e+400");
}

#[test]
fn nested_uniform_columns_form_field_groups() {
    let value = json!({"orders": [
        {"id": 1, "customer": {"name": "Ada", "country": "DK"}},
        {"id": 2, "customer": {"name": "Bob", "country": "UK"}},
    ]});
    let out = toon(&value, &FormatOptions::default());
    assert_eq!(
        out,
        "orders[2]{id,customer{name,country}}:\n  1,Ada,DK\n  2,Bob,UK"
    );
    decodes_to(&out, &value);
}

#[test]
fn non_uniform_lists_use_list_items() {
    let value = json!({"steps": [{"run": "test"}, {"run": "lint", "strict": true}, "done"]});
    let out = toon(&value, &FormatOptions::default());
    assert_eq!(
        out,
        "steps[3]:\n  - run: test\n  - run: lint\n    strict: true\n  - done"
    );
    decodes_to(&out, &value);
}
