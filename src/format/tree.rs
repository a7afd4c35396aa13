//! The one traversal: fragments or a JSON value -> the normalized [`Tree`]
//! every format writes, and the walk that feeds a [`TreeWriter`].

use std::borrow::Cow;
use std::fmt::Write as _;

use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::{Map, Number, Value};

use super::{MAX_DEPTH, ROOT_KEY, push_key};
use crate::error::Result;
use crate::fragment::{Fragment, FragmentData, for_each_child_entry, is_children_list, too_deep};

/// A document normalized for rendering: repeated fragment names gathered
/// into lists, depth checked, and, for fragments only, nulls and empty
/// containers gone (a tree built from a JSON value keeps them). See the
/// [module docs](super) for the rules.
#[derive(Debug, Clone, PartialEq)]
pub struct Tree {
    root: Option<Node>,
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    /// A string, number, boolean or (in a data tree) null.
    Leaf(Value),
    Map(Vec<(String, Node)>),
    /// `item` names the elements where a format needs a name (XML).
    List {
        item: String,
        items: Vec<Node>,
    },
}

/// Where a value sits, as a [`TreeWriter`] sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Slot<'a> {
    /// 0 for a top-level entry, one more per container above.
    pub depth: usize,
    /// The key or list position of the value.
    pub label: Label<'a>,
}

/// How a value is reached from its container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Label<'a> {
    /// An object key or fragment name (top-level entries included).
    Key(&'a str),
    /// A list element.
    Item {
        /// 0-based position.
        index: usize,
        /// What to call one element: the fragment name for repeated
        /// fragments, else the singular of the list's key, else `item`.
        name: &'a str,
    },
}

/// What a container holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Container {
    /// Keyed entries.
    Map,
    /// Ordered elements.
    List,
}

/// A primitive value.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Leaf<'a> {
    /// `null`: only a tree built by [`Tree::from_value`] holds one.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A JSON number, which holds the text it was read from: every digit.
    Number(&'a Number),
    /// A string, verbatim.
    String(&'a str),
}

impl<'a> Leaf<'a> {
    /// The value as text: `null`, `true`, `5432`, `1.5`, a number's digits
    /// as written (`12345678901234567890123`), or the string itself.
    pub fn text(&self) -> Cow<'a, str> {
        match *self {
            Leaf::Null => Cow::Borrowed("null"),
            Leaf::Bool(b) => Cow::Borrowed(if b { "true" } else { "false" }),
            Leaf::Number(n) => Cow::Borrowed(n.as_str()),
            Leaf::String(s) => Cow::Borrowed(s),
        }
    }
}

/// Writes a [`Tree`] as [`Tree::walk`] visits it: depth first, in key order,
/// each container between its `open` and `close`.
pub trait TreeWriter {
    /// Writes a primitive value at `slot`.
    fn leaf(&mut self, out: &mut String, slot: &Slot<'_>, leaf: Leaf<'_>);

    /// Starts a container at `slot`. [`Tree::walk`] calls it for containers
    /// that hold at least one value; an empty one goes to [`TreeWriter::empty`],
    /// whose default calls `open` and `close` with nothing between.
    fn open(&mut self, out: &mut String, slot: &Slot<'_>, container: Container);

    /// Ends the container `open` started. Default: writes nothing.
    fn close(&mut self, out: &mut String, slot: &Slot<'_>, container: Container) {
        let _ = (out, slot, container);
    }

    /// Writes a container that holds nothing, which only a tree built by
    /// [`Tree::from_value`] keeps. Default: `open` then `close`.
    fn empty(&mut self, out: &mut String, slot: &Slot<'_>, container: Container) {
        self.open(out, slot, container);
        self.close(out, slot, container);
    }

    /// Goes between two top-level entries. Default: writes nothing.
    fn separate(&mut self, out: &mut String) {
        let _ = out;
    }
}

impl Tree {
    /// Normalizes a list of fragments: each is the top-level key of its name.
    /// Nulls and empty containers are dropped: a prompt has no use for them.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Fragment`](crate::ErrorKind::Fragment) naming the path
    /// (`config.database.hosts[3]`) of a container nested past [`MAX_DEPTH`].
    pub fn from_fragments(fragments: &[Fragment]) -> Result<Tree> {
        let pairs = fragments
            .iter()
            .map(|f| (f.name.as_str(), Data::of(&f.data)));
        let entries = Builder::new(Empties::Drop).entries(pairs.collect(), 1)?;
        Ok(Tree {
            root: (!entries.is_empty()).then_some(Node::Map(entries)),
        })
    }

    /// Normalizes a JSON value; an object's keys are the top-level entries.
    /// Lossless: nulls and empty containers are kept, for each format to show
    /// as it can (see the [module docs](super)). Arrays are plain data here,
    /// even fragment-shaped ones.
    ///
    /// # Errors
    ///
    /// As [`Tree::from_fragments`].
    pub fn from_value(value: &Value) -> Result<Tree> {
        let item = item_name(ROOT_KEY);
        let root = Builder::new(Empties::Keep).value(value, &item, 1)?;
        Ok(Tree { root })
    }

    /// Whether nothing is left to render: no root, or a root object with no
    /// keys (whose top-level entries are none).
    pub fn is_empty(&self) -> bool {
        match &self.root {
            None => true,
            Some(Node::Map(entries)) => entries.is_empty(),
            Some(_) => false,
        }
    }

    /// The tree as JSON, lists of repeated fragments included; `null` when
    /// empty. This is what TOML and TOON encode.
    pub fn to_value(&self) -> Value {
        self.root.as_ref().map_or(Value::Null, Node::to_value)
    }

    /// Feeds the tree to `writer`. A root that is not a map is presented as
    /// one top-level entry under [`ROOT_KEY`].
    pub fn walk<W: TreeWriter + ?Sized>(&self, writer: &mut W, out: &mut String) {
        match &self.root {
            None => {}
            Some(Node::Map(entries)) => {
                for (index, (key, node)) in entries.iter().enumerate() {
                    if index > 0 {
                        writer.separate(out);
                    }
                    node.walk(
                        Slot {
                            depth: 0,
                            label: Label::Key(key),
                        },
                        writer,
                        out,
                    );
                }
            }
            Some(node) => node.walk(
                Slot {
                    depth: 0,
                    label: Label::Key(ROOT_KEY),
                },
                writer,
                out,
            ),
        }
    }
}

impl Node {
    fn walk<W: TreeWriter + ?Sized>(&self, slot: Slot<'_>, writer: &mut W, out: &mut String) {
        let depth = slot.depth + 1;
        match self {
            Node::Leaf(value) => writer.leaf(out, &slot, leaf(value)),
            Node::Map(entries) if entries.is_empty() => writer.empty(out, &slot, Container::Map),
            Node::List { items, .. } if items.is_empty() => {
                writer.empty(out, &slot, Container::List);
            }
            Node::Map(entries) => {
                writer.open(out, &slot, Container::Map);
                for (key, node) in entries {
                    node.walk(
                        Slot {
                            depth,
                            label: Label::Key(key),
                        },
                        writer,
                        out,
                    );
                }
                writer.close(out, &slot, Container::Map);
            }
            Node::List { item, items } => {
                writer.open(out, &slot, Container::List);
                for (index, node) in items.iter().enumerate() {
                    let label = Label::Item { index, name: item };
                    node.walk(Slot { depth, label }, writer, out);
                }
                writer.close(out, &slot, Container::List);
            }
        }
    }

    fn to_value(&self) -> Value {
        match self {
            Node::Leaf(value) => value.clone(),
            Node::Map(entries) => {
                let map: Map<String, Value> = entries
                    .iter()
                    .map(|(k, n)| (k.clone(), n.to_value()))
                    .collect();
                Value::Object(map)
            }
            Node::List { items, .. } => items.iter().map(Node::to_value).collect(),
        }
    }
}

fn leaf(value: &Value) -> Leaf<'_> {
    match value {
        Value::Null => Leaf::Null,
        Value::Bool(b) => Leaf::Bool(*b),
        Value::Number(n) => Leaf::Number(n),
        Value::String(s) => Leaf::String(s),
        // Never reached: the builder makes leaves of primitives only.
        _ => Leaf::Null,
    }
}

/// A fragment's data, from Rust or from JSON.
#[derive(Clone, Copy)]
enum Data<'a> {
    Value(&'a Value),
    Fragments(&'a [Fragment]),
}

impl<'a> Data<'a> {
    fn of(data: &'a FragmentData) -> Self {
        match data {
            FragmentData::Value(value) => Data::Value(value),
            FragmentData::Fragments(list) => Data::Fragments(list),
        }
    }
}

/// What the traversal does with nulls and empty containers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Empties {
    /// Fragments: they say nothing to a model, so they cost no tokens.
    Drop,
    /// A JSON value (`render --data`): rendering must not lose data.
    Keep,
}

/// Builds nodes, keeping the path of the current value for error messages.
/// `depth` is the level a container built at that call would sit at.
struct Builder {
    path: String,
    empties: Empties,
}

impl Builder {
    fn new(empties: Empties) -> Self {
        Builder {
            path: String::new(),
            empties,
        }
    }

    /// Whether a container holding `len` values becomes a node.
    fn keeps(&self, len: usize) -> bool {
        len > 0 || self.empties == Empties::Keep
    }

    /// `depth` is the level of the entries' data.
    fn entries(
        &mut self,
        pairs: Vec<(&str, Data<'_>)>,
        depth: usize,
    ) -> Result<Vec<(String, Node)>> {
        let counts = counts(pairs.iter().map(|(name, _)| *name));
        let mut built: Vec<(&str, Node)> = Vec::with_capacity(pairs.len());
        for &(name, data) in &pairs {
            let len = self.path.len();
            push_key(&mut self.path, name);
            let mut level = depth;
            if counts[name] > 1 {
                // The list of a repeated name is a level of its own.
                if depth > MAX_DEPTH {
                    return Err(too_deep(&self.path));
                }
                level += 1;
            }
            if let Some(node) = self.data(data, name, level)? {
                built.push((name, node));
            }
            self.path.truncate(len);
        }
        Ok(group(built))
    }

    fn data(&mut self, data: Data<'_>, name: &str, depth: usize) -> Result<Option<Node>> {
        let pairs: Vec<(&str, Data<'_>)> = match data {
            Data::Fragments(list) => list
                .iter()
                .map(|f| (f.name.as_str(), Data::of(&f.data)))
                .collect(),
            Data::Value(value @ Value::Array(items)) if is_children_list(value) => {
                let mut pairs = Vec::with_capacity(items.len());
                for element in items {
                    for_each_child_entry(element, |key, data| pairs.push((key, Data::Value(data))));
                }
                pairs
            }
            Data::Value(value) => return self.value(value, &item_name(name), depth),
        };
        if depth > MAX_DEPTH {
            return Err(too_deep(&self.path));
        }
        let entries = self.entries(pairs, depth + 1)?;
        Ok((!entries.is_empty()).then_some(Node::Map(entries)))
    }

    /// `item` names the elements if `value` is a list.
    fn value(&mut self, value: &Value, item: &str, depth: usize) -> Result<Option<Node>> {
        let len = self.path.len();
        let node = match value {
            Value::Null => (self.empties == Empties::Keep).then_some(Node::Leaf(Value::Null)),
            Value::Array(items) => {
                if depth > MAX_DEPTH {
                    return Err(too_deep(&self.path));
                }
                let inner = item_name(item);
                let mut nodes = Vec::with_capacity(items.len());
                for (index, element) in items.iter().enumerate() {
                    let _ = write!(self.path, "[{index}]");
                    nodes.extend(self.value(element, &inner, depth + 1)?);
                    self.path.truncate(len);
                }
                let item = item.to_owned();
                self.keeps(nodes.len())
                    .then_some(Node::List { item, items: nodes })
            }
            Value::Object(object) => {
                if depth > MAX_DEPTH {
                    return Err(too_deep(&self.path));
                }
                let mut entries = Vec::with_capacity(object.len());
                for (key, element) in object {
                    push_key(&mut self.path, key);
                    if let Some(node) = self.value(element, &item_name(key), depth + 1)? {
                        entries.push((key.clone(), node));
                    }
                    self.path.truncate(len);
                }
                self.keeps(entries.len()).then_some(Node::Map(entries))
            }
            primitive => Some(Node::Leaf(primitive.clone())),
        };
        Ok(node)
    }
}

/// How often each name occurs among siblings.
fn counts<'a>(names: impl Iterator<Item = &'a str>) -> FxHashMap<&'a str, usize> {
    let mut counts = FxHashMap::default();
    for name in names {
        *counts.entry(name).or_insert(0) += 1;
    }
    counts
}

/// Gathers repeated names into one list at the first one's position.
fn group(built: Vec<(&str, Node)>) -> Vec<(String, Node)> {
    let counts = counts(built.iter().map(|(name, _)| *name));
    let mut entries: Vec<(String, Node)> = Vec::with_capacity(counts.len());
    let mut slots: FxHashMap<&str, usize> = FxHashMap::default();
    let mut plurals: FxHashSet<String> = FxHashSet::default();
    for (name, node) in built {
        if let Some(&at) = slots.get(name) {
            if let Node::List { items, .. } = &mut entries[at].1 {
                items.push(node);
            }
            continue;
        }
        slots.insert(name, entries.len());
        if counts[name] == 1 {
            entries.push((name.to_owned(), node));
            continue;
        }
        let plural = plural(name);
        let taken = counts.contains_key(plural.as_str()) || plurals.contains(&plural);
        let key = if taken {
            name.to_owned()
        } else {
            plurals.insert(plural.clone());
            plural
        };
        let item = name.to_owned();
        entries.push((
            key,
            Node::List {
                item,
                items: vec![node],
            },
        ));
    }
    entries
}

/// What one element of a list under `key` is called.
fn item_name(key: &str) -> String {
    singular(key).unwrap_or_else(|| "item".to_owned())
}

/// The singular of a word that looks like a regular English plural.
fn singular(word: &str) -> Option<String> {
    let lower = word.to_ascii_lowercase();
    let strip = |n: usize| word[..word.len() - n].to_owned();
    if lower.len() > 3 && lower.ends_with("ies") {
        return Some(strip(3) + "y");
    }
    if ["sses", "shes", "ches", "xes", "zes"]
        .iter()
        .any(|end| lower.ends_with(end))
    {
        return Some(strip(2));
    }
    let plain_s = lower.len() > 1
        && lower.ends_with('s')
        && !["ss", "us", "is"].iter().any(|end| lower.ends_with(end));
    plain_s.then(|| strip(1))
}

/// The plural of a name, or the name if it already looks plural.
fn plural(word: &str) -> String {
    if singular(word).is_some() {
        return word.to_owned();
    }
    let lower = word.to_ascii_lowercase();
    if ["s", "x", "z", "ch", "sh"]
        .iter()
        .any(|end| lower.ends_with(end))
    {
        return format!("{word}es");
    }
    let mut chars = lower.chars().rev();
    if let (Some('y'), Some(before)) = (chars.next(), chars.next())
        && !"aeiou".contains(before)
    {
        return format!("{}ies", &word[..word.len() - 1]);
    }
    format!("{word}s")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::fragment::{fragment, hint, role};

    #[test]
    fn plural_and_singular_agree_on_regular_words() {
        for (one, many) in [
            ("hint", "hints"),
            ("guardrail", "guardrails"),
            ("policy", "policies"),
            ("box", "boxes"),
            ("process", "processes"),
            ("branch", "branches"),
        ] {
            assert_eq!(plural(one), many);
            assert_eq!(singular(many).as_deref(), Some(one));
        }
        assert_eq!(plural("tags"), "tags");
        assert_eq!(plural("key"), "keys");
        assert_eq!(singular("status"), None);
        assert_eq!(item_name("data"), "item");
    }

    #[test]
    fn repeated_names_form_one_list_at_the_first_position() {
        let tree = Tree::from_fragments(&[hint("a"), role("r"), hint("b")]).unwrap();
        assert_eq!(tree.to_value(), json!({"hints": ["a", "b"], "role": "r"}));
        let Some(Node::Map(entries)) = &tree.root else {
            panic!()
        };
        assert!(matches!(&entries[0].1, Node::List { item, .. } if item == "hint"));
    }

    #[test]
    fn a_taken_plural_keeps_the_name() {
        let list = [hint("a"), Fragment::new("hints", "x"), hint("b")];
        let tree = Tree::from_fragments(&list).unwrap();
        assert_eq!(tree.to_value(), json!({"hint": ["a", "b"], "hints": "x"}));
    }

    #[test]
    fn nulls_and_empties_go_before_grouping() {
        let list = [
            hint("a"),
            Fragment::new("hint", Value::Null),
            Fragment::new("e", json!({"x": [null]})),
        ];
        let tree = Tree::from_fragments(&list).unwrap();
        assert_eq!(tree.to_value(), json!({"hint": "a"}));
    }

    #[test]
    fn fragment_shaped_arrays_are_fragments_in_data_only() {
        let shaped = json!([{"name": "a", "data": 1}, {"name": "a", "data": 2}]);
        let tree = Tree::from_fragments(&[Fragment::new("x", shaped.clone())]).unwrap();
        assert_eq!(tree.to_value(), json!({"x": {"as": [1, 2]}}));
        let plain = Tree::from_value(&json!({"x": shaped.clone()})).unwrap();
        assert_eq!(plain.to_value(), json!({"x": shaped}));
    }

    #[test]
    fn one_fragment_makes_an_array_a_children_list() {
        let mixed = json!([{"k": 1}, {"name": "f", "data": {"g": 2}}, null, "bare", [3], {}]);
        let tree = Tree::from_fragments(&[Fragment::new("x", mixed)]).unwrap();
        assert_eq!(
            tree.to_value(),
            json!({"x": {"k": 1, "f": {"g": 2}, "values": ["bare", [3]]}})
        );
        let no_fragment = json!([{"k": 1}, {"name": "f"}]);
        let tree = Tree::from_fragments(&[Fragment::new("x", no_fragment.clone())]).unwrap();
        assert_eq!(tree.to_value(), json!({ "x": no_fragment }));
    }

    #[test]
    fn a_value_tree_keeps_nulls_and_empties_a_fragment_tree_drops() {
        let value = json!({"a": [null, {}, []], "b": {"c": null}, "d": {}});
        assert_eq!(Tree::from_value(&value).unwrap().to_value(), value);
        let fragment = Fragment::new("f", value);
        assert!(Tree::from_fragments(&[fragment]).unwrap().is_empty());
        assert!(Tree::from_value(&json!({})).unwrap().is_empty());
        assert!(!Tree::from_value(&json!(null)).unwrap().is_empty());
    }

    #[test]
    fn depth_errors_name_the_logical_path() {
        let mut value = json!(1);
        for _ in 0..MAX_DEPTH {
            value = json!([value]);
        }
        assert!(Tree::from_value(&value).is_ok());
        let error = Tree::from_value(&json!({"hosts": value}))
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("invalid structured context at `hosts[0]"),
            "{error}"
        );

        let mut nested = fragment("leaf", [json!({"k": 1})]);
        for _ in 0..MAX_DEPTH {
            nested = fragment("n", [nested]);
        }
        let error = Tree::from_fragments(&[nested]).unwrap_err().to_string();
        assert!(error.contains("at `n.n.n."), "{error}");
    }
}
