//! Reading JSON input strictly, in one pass, with errors that say where.
//!
//! `serde_json::from_str::<Value>` keeps the last of two equal keys without a
//! word, stops valid JSON at 128 levels with "recursion limit exceeded",
//! refuses a byte-order mark, and loses a whole document to one lone
//! surrogate escape. This reader builds the same [`Value`] in the same single
//! pass (it is `Value`'s own visitor plus a depth and a duplicate check), but
//! refuses a key given twice in one object, reads nesting up to 256 levels
//! ([`MAX_JSON_DEPTH`]), skips a leading byte-order mark, and names the
//! place of each of these errors (`chunks[3].text`). With
//! [`ParseOptions::lossy_unicode`] a lone surrogate reads as U+FFFD.
//!
//! The place costs nothing on the happy path: each container records its
//! step only while an error unwinds through it.

use std::cell::RefCell;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::map::Entry;
use serde_json::{Map, Number, Value};

use crate::error::{ChunkLocation, ErrorKind, JsonPlace, JsonProblem, Result};
use crate::syntax::json_scan::{
    back_over_whitespace, first_lone_surrogate, first_too_deep, replace_lone_surrogates,
};

/// The deepest nesting of arrays and objects a JSON document may have.
///
/// Generous enough for any fragment tree within its own limit of 64
/// levels (a fragment level costs at most three JSON levels), so that
/// limit, not this one, names the fragment that goes too deep; small
/// enough that reading never nears the stack's end.
pub const MAX_JSON_DEPTH: usize = 256;

/// How JSON text is read; see [`MemoryState::from_json_str_with`](crate::MemoryState::from_json_str_with)
/// and [`parse_json`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ParseOptions {
    /// Read a lone UTF-16 surrogate escape (`"\ud800"`, left by a runtime
    /// that cut a string inside a character) as U+FFFD instead of failing.
    pub lossy_unicode: bool,
}

impl ParseOptions {
    /// The strict default: a lone surrogate escape is an error.
    pub fn new() -> Self {
        ParseOptions::default()
    }

    /// Sets [`lossy_unicode`](ParseOptions::lossy_unicode).
    pub fn lossy_unicode(mut self, yes: bool) -> Self {
        self.lossy_unicode = yes;
        self
    }
}

/// Parses any JSON value by this crate's rules: a leading byte-order mark is
/// skipped, a key given twice in one object is an error, nesting may reach
/// 256 levels.
///
/// ```
/// use agent_context::{ErrorKind, JsonProblem, ParseOptions, parse_json};
///
/// let value = parse_json("\u{feff}{\"a\": [1, 2]}", ParseOptions::new())?;
/// assert_eq!(value["a"][1], 2);
///
/// let twice = parse_json(r#"{"rows": [{"x": 1, "x": 2}]}"#, ParseOptions::new()).unwrap_err();
/// let ErrorKind::JsonRejected { place, problem, .. } = twice.kind() else { panic!() };
/// assert_eq!(place.path, "rows[0]");
/// assert_eq!(problem, &JsonProblem::DuplicateKey { key: "x".into() });
/// # Ok::<(), agent_context::Error>(())
/// ```
///
/// # Errors
///
/// [`ErrorKind::Json`] with line and column for a syntax error;
/// [`ErrorKind::JsonRejected`] with line, column and path for a duplicate
/// key, nesting past 256 levels, or a lone surrogate escape (unless
/// [`ParseOptions::lossy_unicode`] is set).
pub fn parse_json(text: &str, options: ParseOptions) -> Result<Value> {
    read(text, options, Document::Any)
}

/// What the document is, which decides how an error names its place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Document {
    /// A session: a place under `chunks[i]` names the chunk (index and id).
    Session,
    /// Any value: a place is its path from the root.
    Any,
}

/// Parses `text` (a leading byte-order mark skipped) into a [`Value`].
pub(crate) fn read(text: &str, options: ParseOptions, document: Document) -> Result<Value> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    match read_strict(text) {
        Ok(value) => Ok(value),
        Err(failure) => {
            let failure = failure.classify(text);
            let lone = matches!(failure.problem, Some(Problem::LoneSurrogate { .. }));
            if options.lossy_unicode && lone {
                // The repair keeps every byte offset, so a later error's
                // line and column still point into the caller's text.
                let repaired = replace_lone_surrogates(text);
                return read_strict(&repaired).map_err(|failure| {
                    failure.classify(&repaired).into_error(&repaired, document)
                });
            }
            Err(failure.into_error(text, document))
        }
    }
}

/// Parses `text` strictly into a `Value`, for [`JsonText`](crate::JsonText),
/// whose errors are `serde_json`'s.
pub(crate) fn value_from_str(text: &str) -> serde_json::Result<Value> {
    read_strict(text).map_err(|failure| failure.error)
}

/// Deserializes one value with the duplicate and depth checks from any
/// deserializer (the error is the deserializer's, without a path).
pub(crate) fn value_from_deserializer<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Value, D::Error> {
    let trail = RefCell::new(Trail::default());
    Node::root(&trail).deserialize(deserializer)
}

fn read_strict(text: &str) -> Result<Value, Failure> {
    let trail = RefCell::new(Trail::default());
    let mut deserializer = serde_json::Deserializer::from_str(text);
    // `Node` bounds the depth itself, at `MAX_JSON_DEPTH`.
    deserializer.disable_recursion_limit();
    let value = Node::root(&trail)
        .deserialize(&mut deserializer)
        .and_then(|value| deserializer.end().map(|()| value));
    value.map_err(|error| {
        let trail = trail.into_inner();
        Failure {
            error,
            problem: trail.problem,
            levels: trail.levels,
        }
    })
}

/// What went wrong beyond syntax, found while reading.
#[derive(Debug)]
enum Problem {
    Rejected(JsonProblem),
    /// A lone surrogate escape, found in the text where serde_json stopped.
    LoneSurrogate {
        line: usize,
        column: usize,
        escape: String,
    },
}

/// A failed read: `serde_json`'s error and what the reader knows of it.
struct Failure {
    error: serde_json::Error,
    problem: Option<Problem>,
    /// One entry per container the error unwound through, innermost first.
    levels: Vec<Level>,
}

impl Failure {
    /// Names a syntax error that is a lone surrogate escape as such: the
    /// first lone surrogate in the text, if it sits before the error, is
    /// where `serde_json` stopped.
    fn classify(mut self, text: &str) -> Failure {
        if self.problem.is_none()
            && self.error.is_syntax()
            && let Some((line, column, escape)) = first_lone_surrogate(text)
            && (line, column) <= (self.error.line(), self.error.column())
        {
            self.problem = Some(Problem::LoneSurrogate {
                line,
                column,
                escape,
            });
        }
        self
    }

    fn into_error(self, text: &str, document: Document) -> crate::Error {
        let (line, column) = (self.error.line(), self.error.column());
        let (line, column, problem) = match self.problem {
            None => {
                return ErrorKind::Json {
                    // serde_json reports column 0 at the very start of a line
                    // (an input that ends right after a newline).
                    line: self.error.line(),
                    column: self.error.column().max(1),
                    message: strip_position(&self.error.to_string()),
                }
                .into();
            }
            // serde_json places a visitor's error where it stopped reading
            // after it: past the whitespace behind a key, past a bracket.
            Some(Problem::Rejected(problem @ JsonProblem::DuplicateKey { .. })) => {
                let (line, column) = back_over_whitespace(text, line, column);
                (line, column, problem)
            }
            Some(Problem::Rejected(problem)) => {
                let (line, column) = first_too_deep(text, MAX_JSON_DEPTH).unwrap_or((line, column));
                (line, column, problem)
            }
            Some(Problem::LoneSurrogate {
                line,
                column,
                escape,
            }) => (line, column, JsonProblem::LoneSurrogate { escape }),
        };
        ErrorKind::JsonRejected {
            line,
            column: column.max(1),
            place: place(self.levels, document),
            problem,
        }
        .into()
    }
}

/// serde_json appends " at line L column C"; we report those separately.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_owned(),
        None => message.to_owned(),
    }
}

/// The most steps a place shows before `…`: a value nested 200 levels deep
/// is found by its first steps, not by a path of 200.
const PLACE_STEPS: usize = 8;

/// Where the error sits: the chunk (for a session) and the path below it.
fn place(mut levels: Vec<Level>, document: Document) -> JsonPlace {
    levels.reverse();
    let steps: Vec<&Step> = levels.iter().filter_map(|l| l.step.as_ref()).collect();
    let chunk = match (document, steps.as_slice()) {
        (Document::Session, [Step::Key(chunks), Step::Index(index), ..]) if chunks == "chunks" => {
            Some(ChunkLocation {
                index: *index,
                id: levels.get(2).and_then(|l| l.id.clone()),
            })
        }
        _ => None,
    };
    let below = if chunk.is_some() { &steps[2..] } else { &steps };
    let mut path = String::new();
    for step in below.iter().take(PLACE_STEPS) {
        match step {
            Step::Key(key) if path.is_empty() => path.push_str(key),
            Step::Key(key) => {
                path.push('.');
                path.push_str(key);
            }
            Step::Index(index) => path.push_str(&format!("[{index}]")),
        }
    }
    if below.len() > PLACE_STEPS {
        path.push('…');
    }
    JsonPlace { chunk, path }
}

/// One step from a container to the value inside it that failed.
#[derive(Debug)]
enum Step {
    Key(String),
    Index(usize),
}

/// A container an error unwound through: the step to the failing value
/// (none when the container itself failed) and, for an object, its `id`.
#[derive(Debug)]
struct Level {
    step: Option<Step>,
    id: Option<String>,
}

/// What an error leaves behind as it unwinds.
#[derive(Debug, Default)]
struct Trail {
    problem: Option<Problem>,
    levels: Vec<Level>,
}

/// The seed for one value: where errors go and how deep it sits.
#[derive(Clone, Copy)]
struct Node<'t> {
    trail: &'t RefCell<Trail>,
    /// Containers around this value.
    depth: usize,
}

impl<'t> Node<'t> {
    fn root(trail: &'t RefCell<Trail>) -> Self {
        Node { trail, depth: 0 }
    }

    fn child(self) -> Self {
        Node {
            trail: self.trail,
            depth: self.depth + 1,
        }
    }

    /// Records `problem` and returns the error that unwinds with it.
    fn reject<E: serde::de::Error>(self, problem: JsonProblem, id: Option<String>) -> E {
        let error = E::custom(&problem);
        let mut trail = self.trail.borrow_mut();
        trail.problem = Some(Problem::Rejected(problem));
        trail.levels.push(Level { step: None, id });
        error
    }

    fn unwind(self, step: Option<Step>, id: Option<String>) {
        self.trail.borrow_mut().levels.push(Level { step, id });
    }

    fn check_depth<E: serde::de::Error>(self) -> Result<(), E> {
        if self.depth >= MAX_JSON_DEPTH {
            let problem = JsonProblem::TooDeep {
                limit: MAX_JSON_DEPTH,
            };
            return Err(self.reject(problem, None));
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

/// The key under which serde_json (built with `arbitrary_precision`, which
/// keeps a number's digits) hands a visitor a number that no `u64` or `i64`
/// holds: a map of one entry, the number's text. Private to serde_json, so
/// asked of it once (a number past `u64` read by a visitor that notes the
/// key) rather than spelled out here.
fn number_key() -> &'static str {
    static KEY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    KEY.get_or_init(|| {
        let mut reader = serde_json::Deserializer::from_str("1e400");
        reader.deserialize_any(FirstKey).unwrap_or_default()
    })
}

/// A visitor that notes the first key of the map it is handed.
struct FirstKey;

impl<'de> Visitor<'de> for FirstKey {
    type Value = String;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a map")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<String, A::Error> {
        let key = access.next_key::<String>()?.unwrap_or_default();
        // The number's text, read so the map is whole.
        let _: Option<serde::de::IgnoredAny> = access.next_value().ok();
        Ok(key)
    }
}

fn object_id(map: &Map<String, Value>) -> Option<String> {
    map.get("id").and_then(Value::as_str).map(str::to_owned)
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        Ok(Number::from_f64(value).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        self.check_depth()?;
        let mut items = Vec::new();
        loop {
            match access.next_element_seed(self.child()) {
                Ok(Some(item)) => items.push(item),
                Ok(None) => return Ok(Value::Array(items)),
                Err(error) => {
                    self.unwind(Some(Step::Index(items.len())), None);
                    return Err(error);
                }
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        let mut key = match self.key(&mut access, &map)? {
            // A number is a leaf, however it is handed over: no depth check.
            Some(key) if key == number_key() => match self.number(&mut access, &key)? {
                Ok(number) => return Ok(Value::Number(number)),
                Err(value) => {
                    self.check_depth()?;
                    map.insert(key, value);
                    self.key(&mut access, &map)?
                }
            },
            key => {
                self.check_depth()?;
                key
            }
        };
        while let Some(name) = key {
            let slot = match map.entry(name) {
                Entry::Vacant(slot) => slot,
                Entry::Occupied(taken) => {
                    let key = taken.key().clone();
                    let problem = JsonProblem::DuplicateKey { key };
                    return Err(self.reject(problem, object_id(&map)));
                }
            };
            match access.next_value_seed(self.child()) {
                Ok(value) => {
                    slot.insert(value);
                }
                Err(error) => {
                    let step = Some(Step::Key(slot.key().clone()));
                    self.unwind(step, object_id(&map));
                    return Err(error);
                }
            }
            key = self.key(&mut access, &map)?;
        }
        Ok(Value::Object(map))
    }
}

impl Node<'_> {
    /// The next key of the object being read into `map`.
    fn key<'de, A: MapAccess<'de>>(
        self,
        access: &mut A,
        map: &Map<String, Value>,
    ) -> Result<Option<String>, A::Error> {
        access.next_key::<String>().inspect_err(|_| {
            self.unwind(None, object_id(map));
        })
    }

    /// The value under [`number_key`]: the number whose text it is, as
    /// serde_json's own `Value` reads it, or (for an object that only uses
    /// the key) the value itself.
    fn number<'de, A: MapAccess<'de>>(
        self,
        access: &mut A,
        key: &str,
    ) -> Result<Result<Number, Value>, A::Error> {
        let value = access.next_value_seed(self.child()).inspect_err(|_| {
            self.unwind(Some(Step::Key(key.to_owned())), None);
        })?;
        Ok(match &value {
            Value::String(text) => text.parse::<Number>().map_err(|_| value),
            _ => Err(value),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rejected(text: &str, document: Document) -> (usize, usize, JsonPlace, JsonProblem) {
        match read(text, ParseOptions::new(), document).map_err(crate::Error::into_kind) {
            Err(ErrorKind::JsonRejected {
                line,
                column,
                place,
                problem,
            }) => (line, column, place, problem),
            other => panic!("{other:?}"),
        }
    }

    fn nested(depth: usize) -> String {
        format!("{}{}", "[".repeat(depth), "]".repeat(depth))
    }

    #[test]
    fn a_key_given_twice_is_named_with_its_chunk() {
        let text = r#"{"chunks": [{"id": "u0"}, {"id": "a", "text": "x", "text": "y"}]}"#;
        let (line, column, place, problem) = rejected(text, Document::Session);
        assert_eq!(problem, JsonProblem::DuplicateKey { key: "text".into() });
        let chunk = Some(ChunkLocation {
            index: 1,
            id: Some("a".into()),
        });
        assert_eq!(
            place,
            JsonPlace {
                chunk,
                path: String::new()
            }
        );
        // The closing quote of the second "text".
        assert_eq!((line, column), (1, 57));
        let spaced = "{\"a\": 1,\n \"a\"\n  : 2}";
        assert_eq!(rejected(spaced, Document::Any).1, 4);

        let (_, _, place, problem) = rejected(r#"{"chunks": [], "chunks": []}"#, Document::Session);
        assert_eq!(
            problem,
            JsonProblem::DuplicateKey {
                key: "chunks".into()
            }
        );
        assert_eq!(
            place,
            JsonPlace {
                chunk: None,
                path: String::new()
            }
        );

        let deep = r#"{"chunks": [{"id": "d", "data": {"rows": [{"k": 1, "k": 2}]}}]}"#;
        let (_, _, place, _) = rejected(deep, Document::Session);
        assert_eq!(place.path, "data.rows[0]");
        assert_eq!(place.chunk.and_then(|c| c.id), Some("d".into()));
        // Any other document names the path from the root.
        let (_, _, place, _) = rejected(deep, Document::Any);
        assert_eq!(
            (place.chunk, place.path.as_str()),
            (None, "chunks[0].data.rows[0]")
        );
    }

    #[test]
    fn nesting_is_read_to_the_limit_and_named_past_it() {
        let at_limit = read(&nested(MAX_JSON_DEPTH), ParseOptions::new(), Document::Any);
        assert!(at_limit.is_ok(), "{at_limit:?}");
        let (line, column, place, problem) = rejected(&nested(MAX_JSON_DEPTH + 1), Document::Any);
        assert_eq!(
            problem,
            JsonProblem::TooDeep {
                limit: MAX_JSON_DEPTH
            }
        );
        assert_eq!((line, column), (1, MAX_JSON_DEPTH + 1));
        assert_eq!(place.path, format!("{}…", "[0]".repeat(PLACE_STEPS)));
        let object = format!("{{\"a\": {}}}", nested(MAX_JSON_DEPTH));
        let (_, column, place, _) = rejected(&object, Document::Any);
        assert_eq!((column, &place.path[..6]), (MAX_JSON_DEPTH + 6, "a[0][0"));
    }

    #[test]
    fn a_byte_order_mark_is_skipped() {
        let value = read("\u{feff} {\"a\": 1}", ParseOptions::new(), Document::Any);
        assert_eq!(value.ok(), Some(json!({"a": 1})));
    }

    #[test]
    fn a_lone_surrogate_is_named_or_repaired() {
        let text = r#"{"chunks": [{"id": "a", "kind": "agent", "text": "cut \ud83e"}]}"#;
        let (line, column, place, problem) = rejected(text, Document::Session);
        assert_eq!(
            problem,
            JsonProblem::LoneSurrogate {
                escape: r"\ud83e".into()
            }
        );
        assert_eq!((line, column), (1, 55));
        assert_eq!(place.path, "text");
        assert_eq!(place.chunk.and_then(|c| c.id), Some("a".into()));

        let lossy = ParseOptions::new().lossy_unicode(true);
        let value = read(text, lossy, Document::Session).unwrap();
        assert_eq!(value["chunks"][0]["text"], "cut \u{fffd}");
        // A later syntax error keeps its place in the caller's text.
        let broken = r#"["\udc00", ]"#;
        match read(broken, lossy, Document::Any).unwrap_err().into_kind() {
            ErrorKind::Json { line, column, .. } => assert_eq!((line, column), (1, 12)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn numbers_keep_their_digits_at_any_depth() {
        let text = r#"{"n": [12345678901234567890123, -9223372036854775809, 0.1000000000000000000001, 1.50]}"#;
        let value = read(text, ParseOptions::new(), Document::Any).unwrap();
        assert_eq!(
            value.to_string(),
            r#"{"n":[12345678901234567890123,-9223372036854775809,0.1000000000000000000001,1.50]}"#
        );
        // A number is a leaf, though serde_json hands it over as a map.
        let depth = MAX_JSON_DEPTH;
        let deep = format!("{}1.5{}", "[".repeat(depth), "]".repeat(depth));
        assert!(read(&deep, ParseOptions::new(), Document::Any).is_ok());
        // An object that only uses serde_json's key stays an object.
        let lookalike = r#"{"$serde_json::private::Number": "x"}"#;
        let value = read(lookalike, ParseOptions::new(), Document::Any).unwrap();
        assert_eq!(value, json!({"$serde_json::private::Number": "x"}));
    }

    #[test]
    fn reads_what_serde_json_reads() {
        let text = r#"{"b": [1, -2, 3.5, 1e300, 18446744073709551615, "\u00e9\ud83e\udd80", null, true], "a": {}}"#;
        let ours = read(text, ParseOptions::new(), Document::Any).unwrap();
        assert_eq!(ours, serde_json::from_str::<Value>(text).unwrap());
        let keys: Vec<&String> = ours.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["b", "a"]);
    }
}
