//! The one traversal: fragments or a JSON value -> the normalized [`Tree`]
//! every format writes, and the walk that feeds a [`TreeWriter`].

use std::borrow::Cow;

use serde_json::{Map, Number, Value};

#[cfg(doc)]
use super::MAX_DEPTH;
use super::ROOT_KEY;
use super::grouping::{Entry, grouped, item_name, repeats};
use super::normalize::{Builder, Data, Source};
use crate::error::Result;
use crate::fragment::Fragment;

/// A document normalized for rendering: depth checked, and, for fragments
/// only, nulls and empty containers gone (a tree built from a JSON value
/// keeps them). Fragments stay as they come, a name given twice appearing
/// twice; a grouped walk and [`Tree::to_value`] gather repeated
/// names under their plural. See the [module docs](super) for the rules.
#[derive(Debug, Clone, PartialEq)]
pub struct Tree {
    root: Option<Node>,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Node {
    /// A string, number, boolean or (in a data tree) null.
    Leaf(Value),
    /// Keyed entries; among fragments a name may repeat.
    Map(Vec<(String, Node)>),
    /// `item` names the elements where a format needs a name (XML).
    List { item: String, items: Vec<Node> },
    /// A top-level fragment's data that is a list of one primitive or one
    /// object (how the reference stores `fragment(name, "text")`): walked
    /// as that element, not wrapped again; a list of one in JSON.
    Single(Box<Node>),
}

/// Where a value sits, as a [`TreeWriter`] sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) struct Slot<'a> {
    /// 0 for a top-level entry, one more per container above.
    pub depth: usize,
    /// The key or list position of the value.
    pub label: Label<'a>,
}

/// How a value is reached from its container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum Label<'a> {
    /// An object key or fragment name (top-level entries included).
    Key(&'a str),
    /// A list element.
    Item {
        /// 0-based position.
        index: usize,
        /// What to call one element: the singular of the list's key, else
        /// `item`.
        name: &'a str,
    },
    /// The list of the fragments whose name repeats among siblings, under
    /// the plural of the name, when walked grouped ([`Tree::walk_grouped`]):
    /// its elements come as [`Label::Key`] of the name.
    Group(&'a str),
}

/// What a container holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Container {
    /// Keyed entries.
    Map,
    /// Ordered elements.
    List,
}

/// A primitive value.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub(crate) enum Leaf<'a> {
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
    pub(crate) fn text(&self) -> Cow<'a, str> {
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
pub(crate) trait TreeWriter {
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
    /// Normalizes a list of fragments: each is the top-level key of its name,
    /// in order, a name given twice appearing twice. Nulls and empty
    /// containers are dropped: a prompt has no use for them.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Fragment`](crate::ErrorKind::Fragment) naming the path
    /// (`config.database.hosts[3]`) of a container nested past 64 levels.
    pub fn from_fragments(fragments: &[Fragment]) -> Result<Tree> {
        let pairs = fragments
            .iter()
            .map(|f| (f.name.as_str(), Data::of(&f.data)));
        let entries = Builder::new(Source::Fragments).entries(pairs.collect(), 1)?;
        let entries: Vec<(String, Node)> = entries
            .into_iter()
            .map(|(name, node)| (name, node.single()))
            .collect();
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
        let root = Builder::new(Source::Value).value(value, &item, 1)?;
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

    /// The tree as JSON, `null` when empty. JSON cannot repeat a key, so
    /// repeated fragment names are gathered, as grouped XML and Markdown
    /// gather them: one list under the plural. This is what TOML and TOON
    /// encode.
    pub fn to_value(&self) -> Value {
        self.root.as_ref().map_or(Value::Null, Node::to_value)
    }

    /// Feeds the tree to `writer`, fragments as they come: a name given
    /// twice is two entries. A root that is not a map is presented as one
    /// top-level entry under `value`.
    pub(crate) fn walk<W: TreeWriter + ?Sized>(&self, writer: &mut W, out: &mut String) {
        Walk {
            writer,
            out,
            grouped: false,
        }
        .root(self.root.as_ref());
    }

    /// [`Tree::walk`], with the fragments whose name repeats among siblings
    /// gathered into one list ([`Label::Group`]) under the plural of the
    /// name (`hint` -> `hints`, by a simple English rule; the name itself
    /// when a sibling already uses the plural), at the first one's position.
    pub(crate) fn walk_grouped<W: TreeWriter + ?Sized>(&self, writer: &mut W, out: &mut String) {
        Walk {
            writer,
            out,
            grouped: true,
        }
        .root(self.root.as_ref());
    }
}

/// One walk of a tree into a writer.
struct Walk<'w, W: ?Sized> {
    writer: &'w mut W,
    out: &'w mut String,
    grouped: bool,
}

impl<W: TreeWriter + ?Sized> Walk<'_, W> {
    fn root(&mut self, root: Option<&Node>) {
        match root {
            None => {}
            Some(Node::Map(entries)) => self.entries(entries, 0),
            Some(node) => self.node(node, key_slot(0, ROOT_KEY)),
        }
    }

    /// The entries of a map at `depth`; top-level ones (depth 0) are
    /// separated.
    fn entries(&mut self, entries: &[(String, Node)], depth: usize) {
        let separate = |walk: &mut Self, index: usize| {
            if depth == 0 && index > 0 {
                walk.writer.separate(walk.out);
            }
        };
        if !self.grouped || !repeats(entries) {
            for (index, (key, node)) in entries.iter().enumerate() {
                separate(self, index);
                self.node(node, key_slot(depth, key));
            }
            return;
        }
        for (index, entry) in grouped(entries).iter().enumerate() {
            separate(self, index);
            match entry {
                Entry::One(key, node) => self.node(node, key_slot(depth, key)),
                Entry::Group { key, name, nodes } => {
                    let slot = Slot {
                        depth,
                        label: Label::Group(key),
                    };
                    self.writer.open(self.out, &slot, Container::List);
                    for node in nodes {
                        self.node(node, key_slot(depth + 1, name));
                    }
                    self.writer.close(self.out, &slot, Container::List);
                }
            }
        }
    }

    fn node(&mut self, node: &Node, slot: Slot<'_>) {
        let depth = slot.depth + 1;
        match node {
            Node::Leaf(value) => self.writer.leaf(self.out, &slot, leaf(value)),
            Node::Single(element) => self.node(element, slot),
            Node::Map(entries) if entries.is_empty() => {
                self.writer.empty(self.out, &slot, Container::Map);
            }
            Node::List { items, .. } if items.is_empty() => {
                self.writer.empty(self.out, &slot, Container::List);
            }
            Node::Map(entries) => {
                self.writer.open(self.out, &slot, Container::Map);
                self.entries(entries, depth);
                self.writer.close(self.out, &slot, Container::Map);
            }
            Node::List { item, items } => {
                self.writer.open(self.out, &slot, Container::List);
                for (index, node) in items.iter().enumerate() {
                    let label = Label::Item { index, name: item };
                    self.node(node, Slot { depth, label });
                }
                self.writer.close(self.out, &slot, Container::List);
            }
        }
    }
}

fn key_slot(depth: usize, key: &str) -> Slot<'_> {
    Slot {
        depth,
        label: Label::Key(key),
    }
}

impl Node {
    /// A list of one primitive or one object as [`Node::Single`]; any
    /// other node as it is.
    fn single(self) -> Node {
        match self {
            Node::List { mut items, .. }
                if items.len() == 1 && matches!(items[0], Node::Leaf(_) | Node::Map(_)) =>
            {
                Node::Single(Box::new(items.remove(0)))
            }
            node => node,
        }
    }

    fn to_value(&self) -> Value {
        match self {
            Node::Leaf(value) => value.clone(),
            Node::Single(element) => Value::Array(vec![element.to_value()]),
            Node::Map(entries) => {
                let map: Map<String, Value> = grouped(entries)
                    .into_iter()
                    .map(|entry| match entry {
                        Entry::One(key, node) => (key.to_owned(), node.to_value()),
                        Entry::Group { key, nodes, .. } => {
                            (key, nodes.iter().map(|node| node.to_value()).collect())
                        }
                    })
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::format::MAX_DEPTH;
    use crate::fragment::{fragment, hint, role};

    fn top_level(tree: &Tree) -> Vec<&str> {
        match &tree.root {
            Some(Node::Map(entries)) => entries.iter().map(|(k, _)| k.as_str()).collect(),
            _ => Vec::new(),
        }
    }

    #[test]
    fn fragments_stay_as_they_come_and_group_as_json() {
        let tree = Tree::from_fragments(&[hint("a"), role("r"), hint("b")]).unwrap();
        assert_eq!(top_level(&tree), ["hint", "role", "hint"]);
        assert_eq!(tree.to_value(), json!({"hints": ["a", "b"], "role": "r"}));
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
    fn a_top_level_list_of_one_is_its_element_but_a_list_in_json() {
        let list = [
            Fragment::new("a", json!(["text"])),
            Fragment::new("b", json!([{"k": 1}])),
            Fragment::new("c", json!([[1]])),
            Fragment::new("d", json!([null, "x"])),
            Fragment::new("e", json!({"k": ["one"]})),
        ];
        let tree = Tree::from_fragments(&list).unwrap();
        let singles: Vec<bool> = match &tree.root {
            Some(Node::Map(entries)) => entries
                .iter()
                .map(|(_, node)| matches!(node, Node::Single(_)))
                .collect(),
            _ => Vec::new(),
        };
        assert_eq!(singles, [true, true, false, true, false]);
        assert_eq!(
            tree.to_value(),
            json!({"a": ["text"], "b": [{"k": 1}], "c": [[1]], "d": ["x"], "e": {"k": ["one"]}})
        );
    }

    #[test]
    fn fragment_shaped_arrays_are_fragments_in_fragments_only() {
        let shaped = json!([{"name": "a", "data": 1}, {"name": "a", "data": 2}]);
        let tree = Tree::from_fragments(&[Fragment::new("x", shaped.clone())]).unwrap();
        assert_eq!(tree.to_value(), json!({"x": {"as": [1, 2]}}));
        // Under a key too: the reference's table grounding nests them so.
        let table = json!({"name": "users", "columns": shaped.clone()});
        let tree = Tree::from_fragments(&[Fragment::new("t", table)]).unwrap();
        assert_eq!(
            tree.to_value(),
            json!({"t": {"name": "users", "columns": {"as": [1, 2]}}})
        );
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
