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
use crate::syntax::json_number::same_value;

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
