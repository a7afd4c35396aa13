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
use crate::syntax::json_number::{is_float_text, same_value};

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
