//! Structured standing context: [`Fragment`]s and the helpers that build
//! them. The JSON shape and how children fold are documented on [`Fragment`].

use rustc_hash::FxHashSet;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::ErrorKind;

mod from_json;

pub use from_json::fragments_from_json;

/// The deepest nesting of containers (objects, arrays, children lists) a
/// rendered document may have.
pub(crate) const MAX_DEPTH: usize = 64;

/// The key a document that is not an object renders under, where the format
/// needs one (XML, Markdown, TOML), and the key a bare primitive beside keyed
/// children takes in [`Fragment::with`].
pub(crate) const ROOT_KEY: &str = "value";

/// A named piece of structured context: a role, a hint, a config table.
///
/// A fragment is a name and its data. Rendered (see [`format`](crate::format)),
/// the name is a key and the data its value, so a list of fragments reads as
/// one document:
///
/// ```
/// use agent_context::format::{FormatOptions, FragmentFormat, render_fragments};
/// use agent_context::fragment::{fragment, hint, role};
/// use serde_json::json;
///
/// let context = [
///     role("You are a careful coding agent."),
///     hint("Run the tests before you answer."),
///     hint("Prefer small diffs."),
///     fragment("config", [json!({"debug": true})]),
/// ];
/// let toon = render_fragments(&context, FragmentFormat::Toon, &FormatOptions::default())?;
/// assert_eq!(
///     toon,
///     "role: You are a careful coding agent.\n\
///      hints[2]: Run the tests before you answer.,Prefer small diffs.\n\
///      config:\n  debug: true"
/// );
/// # Ok::<(), agent_context::Error>(())
/// ```
///
/// # JSON shape
///
/// A fragment is exactly `{"name": "<string>", "data": <any JSON>}`; any other
/// field is an error. `data` is a **children list** when it is an array in
/// which at least one element is itself exactly `{"name": "<string>", "data":
/// …}` (the shape the reference fragment engine persists). The elements of a
/// children list fold into the fragment's body as [`Fragment::with`] folds
/// children (see [Children](#children)): a fragment becomes the key of its
/// name, an object's entries become keys, `null` adds nothing, and any other
/// value (a primitive, an array) becomes the key `value`. Any
/// other `data` (a primitive, an object, an array with no fragment element)
/// is plain data. The same rule applies wherever a fragment's `data` is read
/// or rendered, so a [`FragmentData::Value`] holding a children list renders
/// as its folded body too, and serializing then parsing a fragment never
/// changes what it renders. Rendering reads a list holding a fragment as a
/// children list wherever it sits in the data, under an object's key too
/// (`{"columns": [{"name": "column", "data": …}]}`), as the reference does.
/// (The price: in a fragment, a record with exactly the fields `name` and
/// `data` inside a list is read as a fragment; [`render_value`] renders any
/// JSON as plain data.)
///
/// [`render_value`]: crate::format::render_value
///
/// The design's example in both forms:
///
/// ```
/// use agent_context::fragment::Fragment;
/// use agent_context::fragment::fragment;
/// use serde_json::json;
///
/// let built = fragment("config", [json!({"debug": true, "timeout": 30})])
///     .with(fragment("database", [json!({"host": "localhost", "port": 5432})]));
/// let written = Fragment::from_json(json!({
///     "name": "config",
///     "data": {"debug": true, "timeout": 30, "database": {"host": "localhost", "port": 5432}}
/// }))?;
/// // As the reference engine persists it: a children list.
/// let persisted = Fragment::from_json(json!({
///     "name": "config",
///     "data": [
///         {"debug": true, "timeout": 30},
///         {"name": "database", "data": {"host": "localhost", "port": 5432}}
///     ]
/// }))?;
/// assert_eq!(built, written);
/// assert_eq!(built, persisted);
/// # Ok::<(), agent_context::Error>(())
/// ```
///
/// # Children
///
/// [`fragment`] and [`Fragment::with`] fold children into the body: an
/// object's entries become keys, a child fragment becomes the key of its name,
/// and a primitive or array beside keyed children becomes the key
/// `value`; a `null` child adds nothing. Names may repeat:
/// each renders as it comes, or, grouped, as one list under the plural of
/// the name (see [`format`](crate::format)). When
/// every key is plain data and no name repeats, the body is stored as one
/// JSON object, so it serializes the way a person would write it; otherwise
/// it is stored as [`FragmentData::Fragments`], which serializes as a
/// children list of `{"name", "data"}` objects. Parsing a children list folds
/// it the same way, so the JSON of a fragment renders as the fragment does,
/// and the persisted form of `fragment(name, children)` parses to an equal
/// value when its children were built by these helpers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fragment {
    /// The key this fragment renders under.
    pub name: String,
    /// What it holds.
    pub data: FragmentData,
}

/// What a [`Fragment`] holds. Serializes as plain JSON: the value itself, or
/// an array of `{"name", "data"}` objects.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum FragmentData {
    /// A primitive, an object or an array. Nulls and empty containers inside
    /// are dropped when rendered; an array that is a children list renders
    /// as its folded body (see [`Fragment`]'s JSON shape).
    Value(Value),
    /// Nested fragments, each the key of its name; repeated names form a list.
    Fragments(Vec<Fragment>),
}

/// One child passed to [`fragment`] or [`Fragment::with`].
#[derive(Debug, Clone, PartialEq)]
pub enum Child {
    /// Plain data: an object's entries merge into the body.
    Value(Value),
    /// A nested fragment: becomes the key of its name.
    Fragment(Fragment),
}

impl From<Value> for Child {
    fn from(value: Value) -> Self {
        Child::Value(value)
    }
}

impl From<Fragment> for Child {
    fn from(fragment: Fragment) -> Self {
        Child::Fragment(fragment)
    }
}

impl From<&str> for Child {
    fn from(text: &str) -> Self {
        Child::Value(Value::from(text))
    }
}

impl From<String> for Child {
    fn from(text: String) -> Self {
        Child::Value(Value::from(text))
    }
}

impl From<Value> for FragmentData {
    fn from(value: Value) -> Self {
        FragmentData::Value(value)
    }
}

impl From<Vec<Fragment>> for FragmentData {
    fn from(fragments: Vec<Fragment>) -> Self {
        FragmentData::Fragments(fragments)
    }
}

impl From<&str> for FragmentData {
    fn from(text: &str) -> Self {
        FragmentData::Value(Value::from(text))
    }
}

impl From<String> for FragmentData {
    fn from(text: String) -> Self {
        FragmentData::Value(Value::from(text))
    }
}

/// Builds a fragment from its children.
///
/// * one child that is plain data: that value is the data (`role`, a list);
/// * several primitive or array children and nothing else: they form an array;
/// * otherwise the children are folded as [`Fragment::with`] does.
///
/// ```
/// use agent_context::fragment::FragmentData;
/// use agent_context::fragment::{fragment, hint};
/// use serde_json::json;
///
/// let steps = fragment("steps", ["read", "fix", "test"]);
/// assert_eq!(steps.data, FragmentData::Value(json!(["read", "fix", "test"])));
///
/// let rules = fragment("rules", [hint("a"), hint("b")]);
/// assert!(matches!(rules.data, FragmentData::Fragments(ref f) if f.len() == 2));
/// ```
pub fn fragment<I>(name: impl Into<String>, children: I) -> Fragment
where
    I: IntoIterator,
    I::Item: Into<Child>,
{
    let mut children: Vec<Child> = children.into_iter().map(Into::into).collect();
    let name = name.into();
    if children.len() == 1 && matches!(children[0], Child::Value(_)) {
        let Some(Child::Value(value)) = children.pop() else {
            unreachable!("checked above")
        };
        return Fragment::new(name, value);
    }
    let unkeyed = |child: &Child| matches!(child, Child::Value(v) if !v.is_object());
    if children.len() > 1 && children.iter().all(unkeyed) {
        let items = children
            .into_iter()
            .filter_map(|child| match child {
                Child::Value(value) => Some(value),
                Child::Fragment(_) => None,
            })
            .collect();
        return Fragment::new(name, Value::Array(items));
    }
    let mut entries = Vec::new();
    for child in children {
        push_child(&mut entries, child);
    }
    Fragment {
        name,
        data: collapse(entries),
    }
}

impl Fragment {
    /// A fragment holding `data` as it is.
    pub fn new(name: impl Into<String>, data: impl Into<FragmentData>) -> Fragment {
        Fragment {
            name: name.into(),
            data: data.into(),
        }
    }

    /// Adds `child` to the keyed body: an object's entries become keys, a
    /// fragment the key of its name, anything else the key `value`. A body
    /// that was a primitive or an array first becomes the key `value`.
    pub fn with(mut self, child: impl Into<Child>) -> Fragment {
        let mut entries = into_entries(self.data);
        push_child(&mut entries, child.into());
        self.data = collapse(entries);
        self
    }

    /// This fragment as JSON: `{"name": …, "data": …}`.
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        object.insert("name".to_owned(), Value::from(self.name.as_str()));
        let data = match &self.data {
            FragmentData::Value(value) => value.clone(),
            FragmentData::Fragments(list) => list.iter().map(Fragment::to_json).collect(),
        };
        object.insert("data".to_owned(), data);
        Value::Object(object)
    }
}

/// The role the agent plays: `role: …`.
pub fn role(text: impl Into<String>) -> Fragment {
    Fragment::new("role", text.into())
}

/// A piece of advice; several hints render one after another, or grouped
/// as the list `hints` (always so in TOML and TOON).
pub fn hint(text: impl Into<String>) -> Fragment {
    Fragment::new("hint", text.into())
}

/// A glossary entry `{name, definition}`; several, grouped, form the table
/// `terms`.
pub fn term(name: impl Into<String>, definition: impl Into<String>) -> Fragment {
    let mut data = Map::new();
    data.insert("name".to_owned(), Value::String(name.into()));
    data.insert("definition".to_owned(), Value::String(definition.into()));
    Fragment::new("term", Value::Object(data))
}

/// A rule the agent must keep, why, and what to do instead; absent parts
/// are left out. Several, grouped, form the list `guardrails`.
pub fn guardrail(rule: impl Into<String>, reason: Option<&str>, action: Option<&str>) -> Fragment {
    let mut data = Map::new();
    data.insert("rule".to_owned(), Value::String(rule.into()));
    if let Some(reason) = reason {
        data.insert("reason".to_owned(), Value::from(reason));
    }
    if let Some(action) = action {
        data.insert("action".to_owned(), Value::from(action));
    }
    Fragment::new("guardrail", Value::Object(data))
}

/// A worked example `{input, output}`; several, grouped, form the table
/// `examples`.
pub fn example(input: impl Into<String>, output: impl Into<String>) -> Fragment {
    let mut data = Map::new();
    data.insert("input".to_owned(), Value::String(input.into()));
    data.insert("output".to_owned(), Value::String(output.into()));
    Fragment::new("example", Value::Object(data))
}

/// A procedure `{task, steps: [...]}`.
pub fn workflow<S>(task: impl Into<String>, steps: impl IntoIterator<Item = S>) -> Fragment
where
    S: Into<String>,
{
    let mut data = Map::new();
    data.insert("task".to_owned(), Value::String(task.into()));
    let steps = steps.into_iter().map(|s| Value::String(s.into())).collect();
    data.insert("steps".to_owned(), Value::Array(steps));
    Fragment::new("workflow", Value::Object(data))
}

/// Something the user said, as standing context: `user: …`.
pub fn user(text: impl Into<String>) -> Fragment {
    Fragment::new("user", text.into())
}

/// Something the assistant said, as standing context: `assistant: …`.
pub fn assistant(text: impl Into<String>) -> Fragment {
    Fragment::new("assistant", text.into())
}

/// Whether `value`, as a fragment's data, is a children list: an array with
/// at least one fragment among its elements.
pub(crate) fn is_children_list(value: &Value) -> bool {
    match value {
        Value::Array(items) => items.iter().any(is_fragment_object),
        _ => false,
    }
}

/// What one element of a children list adds to its fragment's body: the one
/// rule [`Fragment::with`], parsing and rendering share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChildShape {
    /// A fragment: the key of its name.
    Fragment,
    /// An object: its entries are keys.
    Keys,
    /// `null`: nothing.
    Nothing,
    /// Anything else: the key `value`.
    Root,
}

/// The [`ChildShape`] of one element of a children list.
pub(crate) fn child_shape(element: &Value) -> ChildShape {
    match element {
        _ if is_fragment_object(element) => ChildShape::Fragment,
        Value::Null => ChildShape::Nothing,
        Value::Object(_) => ChildShape::Keys,
        _ => ChildShape::Root,
    }
}

/// Calls `entry` with each `(key, data)` that one element of a children list
/// adds to its fragment's body, by its [`ChildShape`].
pub(crate) fn for_each_child_entry<'a>(
    element: &'a Value,
    mut entry: impl FnMut(&'a str, &'a Value),
) {
    match (child_shape(element), element) {
        (ChildShape::Fragment, Value::Object(object)) => {
            if let (Some(Value::String(name)), Some(data)) =
                (object.get("name"), object.get("data"))
            {
                entry(name, data);
            }
        }
        (ChildShape::Keys, Value::Object(object)) => {
            object.iter().for_each(|(key, data)| entry(key, data));
        }
        (ChildShape::Nothing, _) => {}
        (_, other) => entry(ROOT_KEY, other),
    }
}

/// `{"name": "<string>", "data": …}` and nothing else.
pub(crate) fn is_fragment_object(value: &Value) -> bool {
    match value {
        Value::Object(object) => {
            object.len() == 2
                && object.get("name").is_some_and(Value::is_string)
                && object.contains_key("data")
        }
        _ => false,
    }
}

/// The body as keyed entries, for folding more children in.
fn into_entries(data: FragmentData) -> Vec<Fragment> {
    match data {
        FragmentData::Fragments(list) => list,
        FragmentData::Value(Value::Array(items)) if items.iter().any(is_fragment_object) => {
            let mut entries = Vec::new();
            for element in &items {
                for_each_child_entry(element, |key, data| {
                    entries.push(Fragment::new(key, data.clone()));
                });
            }
            entries
        }
        FragmentData::Value(value) => {
            let mut entries = Vec::new();
            push_child(&mut entries, Child::Value(value));
            entries
        }
    }
}

fn push_child(entries: &mut Vec<Fragment>, child: Child) {
    match child {
        Child::Fragment(fragment) => entries.push(fragment),
        Child::Value(Value::Null) => {}
        Child::Value(Value::Object(object)) => {
            entries.extend(object.into_iter().map(|(k, v)| Fragment::new(k, v)));
        }
        Child::Value(other) => entries.push(Fragment::new(ROOT_KEY, other)),
    }
}

/// One JSON object when every entry is plain data under a unique name, so
/// the fragment serializes as a person would write it; the list otherwise.
fn collapse(entries: Vec<Fragment>) -> FragmentData {
    let plain = |f: &Fragment| matches!(&f.data, FragmentData::Value(v) if !is_children_list(v));
    let mut names = FxHashSet::default();
    let unique = entries.iter().all(|f| names.insert(f.name.as_str()));
    if !(unique && entries.iter().all(plain)) {
        return FragmentData::Fragments(entries);
    }
    let object = entries
        .into_iter()
        .filter_map(|f| match f.data {
            FragmentData::Value(value) => Some((f.name, value)),
            FragmentData::Fragments(_) => None,
        })
        .collect();
    FragmentData::Value(Value::Object(object))
}

pub(crate) fn too_deep(path: &str) -> crate::Error {
    error(
        path,
        format!("nested deeper than {MAX_DEPTH} levels; flatten the data"),
    )
}

pub(crate) fn error(path: &str, message: String) -> crate::Error {
    let path = if path.is_empty() { "(root)" } else { path };
    ErrorKind::Fragment {
        path: path.to_owned(),
        message,
    }
    .into()
}

/// Appends `key` to a path: `a.b`, or `a["odd key"]` when it is not a plain
/// identifier.
pub(crate) fn push_key(path: &mut String, key: &str) {
    let plain = key.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain {
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(key);
    } else {
        path.push('[');
        path.push_str(&Value::from(key).to_string());
        path.push(']');
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn objects_merge_and_fragments_become_keys() {
        let config = fragment("config", [json!({"debug": true}), json!({"timeout": 30})])
            .with(fragment("database", [json!({"port": 5432})]));
        let expected = json!({"debug": true, "timeout": 30, "database": {"port": 5432}});
        assert_eq!(config.data, FragmentData::Value(expected));
    }

    #[test]
    fn repeated_names_keep_the_fragment_list() {
        let rules = fragment("rules", [hint("a")]).with(hint("b"));
        assert_eq!(
            rules.data,
            FragmentData::Fragments(vec![hint("a"), hint("b")])
        );
    }

    #[test]
    fn a_primitive_beside_keys_becomes_the_value_key() {
        let mixed = fragment("x", [Child::from("text"), json!({"k": 1}).into()]);
        assert_eq!(
            mixed.data,
            FragmentData::Value(json!({"value": "text", "k": 1}))
        );
        let list = Fragment::new("y", json!([1, 2])).with(json!({"k": 1}));
        assert_eq!(
            list.data,
            FragmentData::Value(json!({"value": [1, 2], "k": 1}))
        );
    }

    #[test]
    fn a_children_list_folds_like_with() {
        let list = json!([
            {"name": "a", "data": 1},
            {"k": 2},
            null,
            "bare",
            {"name": "a", "data": 3}
        ]);
        let folded = Fragment::new("x", Value::Null)
            .with(Fragment::new("a", json!(1)))
            .with(json!({"k": 2}))
            .with(Child::from("bare"))
            .with(Fragment::new("a", json!(3)));
        assert_eq!(Fragment::new("x", list).with(json!({})), folded);
    }

    #[test]
    fn helpers_build_the_documented_shapes() {
        assert_eq!(role("r").to_json(), json!({"name": "role", "data": "r"}));
        assert_eq!(
            term("MRR", "monthly recurring revenue").data,
            FragmentData::Value(json!({"name": "MRR", "definition": "monthly recurring revenue"}))
        );
        assert_eq!(
            guardrail("no force-push", None, Some("open a PR")).data,
            FragmentData::Value(json!({"rule": "no force-push", "action": "open a PR"}))
        );
        assert_eq!(
            workflow("release", ["tag", "publish"]).data,
            FragmentData::Value(json!({"task": "release", "steps": ["tag", "publish"]}))
        );
        assert_eq!(example("2+2", "4").name, "example");
        assert_eq!(
            (user("u").name, assistant("a").name),
            ("user".into(), "assistant".into())
        );
    }
}
