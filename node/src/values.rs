//! An option's JSON value read as the type it must have; another type is
//! an `InputError` naming the option and the type found, as JavaScript
//! names it.

use serde_json::Value;

use crate::errors::{Result, input_error, option_error};

/// What JavaScript's `typeof` (or `Array.isArray`, or `=== null`) says of
/// the value `value` was written from.
pub fn js_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The `InputError` of an option given a value of another type.
pub fn type_error(key: &str, expected: &str, value: &Value) -> napi::Error {
    input_error(format!("{key} must be {expected}, not {}", js_type(value)))
}

/// A string.
pub fn text(value: &Value, key: &str) -> Result<String> {
    match value {
        Value::String(text) => Ok(text.clone()),
        other => Err(type_error(key, "a string", other)),
    }
}

/// A string, or null (or left out) for none.
pub fn optional_text(value: Option<&Value>, key: &str) -> Result<Option<String>> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(value) => text(value, key).map(Some),
    }
}

/// A boolean: a truthy string such as `"no"` must not read as true.
pub fn flag(value: &Value, key: &str) -> Result<bool> {
    match value {
        Value::Bool(flag) => Ok(*flag),
        other => Err(type_error(key, "a boolean", other)),
    }
}

/// A number.
pub fn fraction(value: &Value, key: &str) -> Result<f64> {
    match value {
        Value::Number(n) => n
            .as_f64()
            .ok_or_else(|| option_error(key, format!("{n} is not a number"))),
        other => Err(type_error(key, "a number", other)),
    }
}

/// A whole number of tokens (or bytes), 0 or more; null is none.
pub fn count(value: &Value, key: &str) -> Result<Option<usize>> {
    match value {
        Value::Null => Ok(None),
        Value::Number(n) => match n.as_u64().map(usize::try_from) {
            Some(Ok(n)) => Ok(Some(n)),
            _ => {
                let what = if key == "maxInputBytes" {
                    "bytes"
                } else {
                    "tokens"
                };
                Err(option_error(
                    key,
                    format!("{n} is not a number of {what} (a whole number, 0 or more)"),
                ))
            }
        },
        other => Err(type_error(key, "an integer", other)),
    }
}
