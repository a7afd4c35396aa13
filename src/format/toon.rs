//! TOON (spec v4) through the `toon-format` crate.
//!
//! The crate implements the whole encoder (quoting, tabular and keyed tabular
//! forms, list items, delimiters, canonical numbers), so nothing here is
//! hand-written: this module maps the options and picks what to encode.
//!
//! # Why the crate
//!
//! Handed a JSON value, `toon-format` 0.7 writes every non-error encode
//! fixture of the spec's conformance suite exactly (179 of 179, with their
//! `delimiter` and `indentSize` options; `tests/it/toon_spec.rs` runs them
//! through [`render_value`](super::render_value) and the CLI). What decides
//! conformance is what it is handed: the [`Tree`] of a JSON value keeps nulls
//! and empty containers (`items: []`, `- [0]:`, a bare `-`), the tree of
//! fragments drops them. A spec-v4 encoder of our own would duplicate the
//! crate's and pass no more fixtures; the crate also decodes, which the tests
//! use to read our output back.
//!
//! # Numbers
//!
//! The crate holds a number as an `i64`, `u64` or `f64`. Handed one no such
//! type holds (`12345678901234567890123`, `-9223372036854775809`,
//! `0.1000000000000000000001`), it would write the nearest `f64`, whose
//! digits read as another number just as exact, and `1e400` as `null`. The
//! spec (§2) lets an encoder whose numbers cannot hold a value write it as a
//! quoted string of its exact digits instead, and recommends that lossless
//! choice; [`exact_numbers`] makes it before the crate sees the value.

use serde_json::{Number, Value};
use toon_format::types::JsonValue;
use toon_format::utils::format_canonical_number;
use toon_format::{EncodeOptions, encode};

use super::tree::Tree;
use super::{Delimiter, FormatOptions};
use crate::error::Result;
use crate::fragment::error;
use crate::json_number::same_value;

/// Appends `tree`: nothing for an empty tree (no root, or a root object
/// with no keys, which the spec also encodes as nothing).
pub(super) fn write(tree: &Tree, options: &FormatOptions, out: &mut String) -> Result<()> {
    if tree.is_empty() {
        return Ok(());
    }
    out.push_str(&encode_with(&exact_numbers(tree.to_value()), options)?);
    Ok(())
}

/// The value with each number the encoder would write as another value
/// replaced by the string of its digits. The tree is no deeper than
/// `MAX_DEPTH`, so the recursion is bounded.
fn exact_numbers(value: Value) -> Value {
    match value {
        Value::Number(number) if !encodes_exactly(&number) => {
            Value::String(number.as_str().to_owned())
        }
        Value::Array(items) => items.into_iter().map(exact_numbers).collect(),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(key, value)| (key, exact_numbers(value)))
                .collect(),
        ),
        other => other,
    }
}

/// True when `toon-format` writes `number` as the same value, in the
/// spec's canonical form (`1.50` as `1.5`, `1e3` as `1000`, `-0` as `0`):
/// the crate is asked what it would write.
fn encodes_exactly(number: &Number) -> bool {
    match JsonValue::from(Value::Number(number.clone())) {
        JsonValue::Number(held) => same_value(number.as_str(), &format_canonical_number(&held)),
        _ => false,
    }
}

fn encode_with(value: &Value, options: &FormatOptions) -> Result<String> {
    let delimiter = match options.delimiter {
        Delimiter::Comma => toon_format::Delimiter::Comma,
        Delimiter::Tab => toon_format::Delimiter::Tab,
        Delimiter::Pipe => toon_format::Delimiter::Pipe,
    };
    let options = EncodeOptions::new()
        .with_delimiter(delimiter)
        .with_spaces(options.indent);
    encode(value, &options)
        .map_err(|e| error("", format!("the TOON encoder rejected the document: {e}")))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use toon_format::{DecodeOptions, Indent, decode};

    use crate::format::{
        Delimiter, FormatOptions, FragmentFormat, MAX_DEPTH, render_fragments, render_value,
    };
    use crate::fragment::fragment;

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
        let value =
            json!({"tags": ["a", "b|c"], "rows": [{"k": 1, "v": "x y"}], "o": {"p": {"q": 1}}});
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
}
