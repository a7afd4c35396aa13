//! [`JsonText`]: a JSON value held as its compact text.
//!
//! A chunk's `data` is rendered once and then only carried, so it is kept
//! the way it is sent: as text. A `serde_json::Value` tree costs ten times
//! the bytes of its JSON (a map entry per key, a node per number), which a
//! session of thousands of tool outputs would hold for its whole life.

use std::fmt;

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::syntax::json_input::value_from_str;
use crate::syntax::json_number::Portable;

/// A JSON value kept as compact text, in the canonical form `serde_json`
/// writes (keys in their given order, no whitespace outside strings, each
/// number with the digits it was written with: `12345678901234567890123`,
/// `1.50`; an exponent gets its sign, `1e400` is `1e+400`).
///
/// Build one from a [`Value`] (`JsonText::from(json!({...}))`) or parse one
/// with [`JsonText::parse`]; read it back with [`to_value`](JsonText::to_value).
/// Two `JsonText`s are equal when their texts are: the same keys in another
/// order are another text.
///
/// ```
/// use agent_context::JsonText;
/// use serde_json::json;
///
/// let data = JsonText::from(json!({"rows": [1, 2], "total": 2}));
/// assert_eq!(data.as_str(), r#"{"rows":[1,2],"total":2}"#);
/// assert_eq!(data.to_pretty(), "{\n  \"rows\": [\n    1,\n    2\n  ],\n  \"total\": 2\n}");
/// assert_eq!(data.to_value()?, json!({"rows": [1, 2], "total": 2}));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone)]
// Boxed twice so a chunk's three JSON fields take a pointer each, not two.
pub struct JsonText(Box<Box<RawValue>>);

impl JsonText {
    /// Parses `json` (any JSON value) into its canonical compact text.
    ///
    /// # Errors
    ///
    /// `serde_json`'s error, with line and column, if `json` is not JSON, if
    /// an object in it gives a key twice, or if it nests deeper than
    /// 256 levels.
    pub fn parse(json: &str) -> serde_json::Result<JsonText> {
        Ok(JsonText::from(&value_from_str(json)?))
    }

    /// The compact text.
    pub fn as_str(&self) -> &str {
        self.0.get()
    }

    /// The value, parsed back.
    ///
    /// # Errors
    ///
    /// Only for a value nested deeper than 256 levels, which a `Value`
    /// built in Rust may be but no parsed input is.
    pub fn to_value(&self) -> serde_json::Result<Value> {
        value_from_str(self.as_str())
    }

    /// The text indented by two spaces, exactly as
    /// `serde_json::to_string_pretty` writes the value (without parsing it).
    pub fn to_pretty(&self) -> String {
        pretty(self.as_str())
    }
}

impl From<&Value> for JsonText {
    fn from(value: &Value) -> Self {
        // A `Value` always serializes, and its output is one JSON value.
        let text = value.to_string();
        match RawValue::from_string(text) {
            Ok(raw) => JsonText(Box::new(raw)),
            Err(_) => unreachable_json(),
        }
    }
}

impl From<Value> for JsonText {
    fn from(value: Value) -> Self {
        JsonText::from(&value)
    }
}

/// `Value`'s own text is JSON; this is never reached. A `null` keeps the
/// type total without a panic on a path that takes input.
#[cold]
fn unreachable_json() -> JsonText {
    JsonText(Box::new(RawValue::NULL.to_owned()))
}

/// Serializes as the value it holds, for any serializer (JSON, TOML, …):
/// a number as a native number wherever one keeps its digits. A number no
/// native number holds (`12345678901234567890123`, `1e400`) goes in
/// serde_json's own form, which JSON serializers write digit for digit and
/// other formats see as a struct of one string.
impl Serialize for JsonText {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let value = self.to_value().map_err(serde::ser::Error::custom)?;
        Portable(&value).serialize(serializer)
    }
}

impl PartialEq for JsonText {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for JsonText {}

impl fmt::Debug for JsonText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JsonText({})", self.as_str())
    }
}

impl fmt::Display for JsonText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Indents compact JSON the way `serde_json`'s pretty printer does: a
/// newline and two spaces per level after `{`, `[` and `,`, `": "` between
/// key and value, and empty containers left as `{}` and `[]`.
fn pretty(compact: &str) -> String {
    const INDENT: &str = "  ";
    let bytes = compact.as_bytes();
    let mut out = String::with_capacity(compact.len() + compact.len() / 2);
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    // Copy runs of bytes that need no layout in one go.
    let mut run_start = 0;
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        for _ in 0..depth {
            out.push_str(INDENT);
        }
    };
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        if in_string {
            match (escaped, byte) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            index += 1;
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'{' | b'[' | b',' | b':' | b'}' | b']' => {
                out.push_str(&compact[run_start..index]);
                match byte {
                    b'{' | b'[' if matches!(bytes.get(index + 1), Some(b'}' | b']')) => {
                        out.push_str(&compact[index..index + 2]);
                        index += 1;
                    }
                    b'{' | b'[' => {
                        out.push(byte as char);
                        depth += 1;
                        newline(&mut out, depth);
                    }
                    b',' => {
                        out.push(',');
                        newline(&mut out, depth);
                    }
                    b':' => out.push_str(": "),
                    _ => {
                        depth = depth.saturating_sub(1);
                        newline(&mut out, depth);
                        out.push(byte as char);
                    }
                }
                run_start = index + 1;
            }
            _ => {}
        }
        index += 1;
    }
    out.push_str(&compact[run_start..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pretty_matches_serde_json() {
        let values = [
            json!(null),
            json!("a \"quoted\" {brace}, [bracket]: colon \\"),
            json!([]),
            json!({}),
            json!({"a": [], "b": {}, "c": [{}], "d": [[1, 2], {"e": null}]}),
            json!([1.5, -2, "x", true, {"k": "v"}]),
            json!({"漢字": "🦀", "ctl": "\u{1}\n\t"}),
        ];
        for value in values {
            let text = JsonText::from(&value);
            assert_eq!(
                text.to_pretty(),
                serde_json::to_string_pretty(&value).unwrap(),
                "{value}"
            );
            assert_eq!(text.to_value().unwrap(), value);
        }
    }

    fn any_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let text = "[a-z{}\\[\\]:,\"\\\\ \n🦀]{0,8}";
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            (-1e9f64..1e9).prop_map(Value::from),
            text.prop_map(Value::String),
        ];
        leaf.prop_recursive(5, 64, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::vec((text, inner), 0..5)
                    .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn pretty_matches_serde_json_on_any_value(value in any_json()) {
            let text = JsonText::from(&value);
            proptest::prop_assert_eq!(text.to_pretty(), serde_json::to_string_pretty(&value).unwrap());
            proptest::prop_assert_eq!(text.to_value().unwrap(), value);
        }
    }

    #[test]
    fn parse_is_canonical() {
        let parsed = JsonText::parse("{ \"b\" : 1.0e3 , \"a\": \"\\u00e9\" }").unwrap();
        assert_eq!(parsed.as_str(), r#"{"b":1.0e+3,"a":"é"}"#);
        let digits =
            "[12345678901234567890123,-9223372036854775809,0.1000000000000000000001,1e+400]";
        assert_eq!(JsonText::parse(digits).unwrap().as_str(), digits);
        assert!(JsonText::parse("{").is_err());
        let twice = JsonText::parse(r#"{"a": 1, "a": 2}"#).unwrap_err();
        assert!(
            twice.to_string().contains("key `a` is given twice"),
            "{twice}"
        );
    }

    #[test]
    fn values_as_deep_as_input_may_be_read_back() {
        let depth = crate::syntax::json_input::MAX_JSON_DEPTH;
        let deep = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let text = JsonText::parse(&deep).unwrap();
        assert_eq!(text.as_str(), deep);
        assert_eq!(JsonText::from(text.to_value().unwrap()), text);
    }

    #[test]
    fn serializes_as_the_value() {
        let text = JsonText::from(json!({"a": [1], "b": "x"}));
        assert_eq!(
            serde_json::to_string(&text).unwrap(),
            r#"{"a":[1],"b":"x"}"#
        );
        assert_eq!(
            serde_json::to_string_pretty(&text).unwrap(),
            "{\n  \"a\": [\n    1\n  ],\n  \"b\": \"x\"\n}"
        );
        assert_eq!(toml::to_string(&text).unwrap(), "a = [1]\nb = \"x\"\n");
        let big = JsonText::parse(r#"{"n":[18446744073709551616,1.5,-0]}"#).unwrap();
        assert_eq!(serde_json::to_string(&big).unwrap(), big.as_str());
    }
}
