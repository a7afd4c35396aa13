//! Building the normalized [`Tree`](super::Tree): fragments or a JSON
//! value -> nodes, depth checked, with the path of the value at fault.

use std::fmt::Write as _;

use serde_json::Value;

use super::grouping::{counts, item_name};
use super::tree::Node;
use super::{MAX_DEPTH, push_key};
use crate::error::Result;
use crate::fragment::{Fragment, FragmentData, for_each_child_entry, is_children_list, too_deep};

/// A fragment's data, from Rust or from JSON.
#[derive(Clone, Copy)]
pub(super) enum Data<'a> {
    Value(&'a Value),
    Fragments(&'a [Fragment]),
}

impl<'a> Data<'a> {
    pub(super) fn of(data: &'a FragmentData) -> Self {
        match data {
            FragmentData::Value(value) => Data::Value(value),
            FragmentData::Fragments(list) => Data::Fragments(list),
        }
    }
}

/// What is read: fragments, or a JSON value that must lose nothing.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Source {
    /// Fragments: nulls and empty containers say nothing to a model, so
    /// they are dropped; a list holding a fragment is a children list
    /// wherever it sits.
    Fragments,
    /// A JSON value (`render --data`): plain data, every bit kept.
    Value,
}

/// Builds nodes, keeping the path of the current value for error messages.
/// `depth` is the level a container built at that call would sit at.
pub(super) struct Builder {
    path: String,
    source: Source,
}

impl Builder {
    pub(super) fn new(source: Source) -> Self {
        Builder {
            path: String::new(),
            source,
        }
    }

    /// Whether a container holding `len` values becomes a node.
    fn keeps(&self, len: usize) -> bool {
        len > 0 || self.source == Source::Value
    }

    /// The entries of named data, in order, a repeated name repeated;
    /// `depth` is the level of the entries' data.
    pub(super) fn entries(
        &mut self,
        pairs: Vec<(&str, Data<'_>)>,
        depth: usize,
    ) -> Result<Vec<(String, Node)>> {
        let counts = counts(pairs.iter().map(|(name, _)| *name));
        let mut built = Vec::with_capacity(pairs.len());
        for &(name, data) in &pairs {
            let len = self.path.len();
            push_key(&mut self.path, name);
            let mut level = depth;
            if counts[name] > 1 {
                // Grouped, the list of a repeated name is a level of its
                // own: counted always, so no option changes the limit.
                if depth > MAX_DEPTH {
                    return Err(too_deep(&self.path));
                }
                level += 1;
            }
            if let Some(node) = self.data(data, name, level)? {
                built.push((name.to_owned(), node));
            }
            self.path.truncate(len);
        }
        Ok(built)
    }

    fn data(&mut self, data: Data<'_>, name: &str, depth: usize) -> Result<Option<Node>> {
        match data {
            Data::Fragments(list) => {
                let pairs = list
                    .iter()
                    .map(|f| (f.name.as_str(), Data::of(&f.data)))
                    .collect();
                self.children(pairs, depth)
            }
            Data::Value(value) => self.value(value, &item_name(name), depth),
        }
    }

    /// The keyed body that children fold into.
    fn children(&mut self, pairs: Vec<(&str, Data<'_>)>, depth: usize) -> Result<Option<Node>> {
        if depth > MAX_DEPTH {
            return Err(too_deep(&self.path));
        }
        let entries = self.entries(pairs, depth + 1)?;
        Ok((!entries.is_empty()).then_some(Node::Map(entries)))
    }

    /// `item` names the elements if `value` is a list.
    pub(super) fn value(
        &mut self,
        value: &Value,
        item: &str,
        depth: usize,
    ) -> Result<Option<Node>> {
        let len = self.path.len();
        let node = match value {
            Value::Null => (self.source == Source::Value).then_some(Node::Leaf(Value::Null)),
            Value::Array(items) if self.source == Source::Fragments && is_children_list(value) => {
                let mut pairs = Vec::with_capacity(items.len());
                for element in items {
                    for_each_child_entry(element, |key, data| pairs.push((key, Data::Value(data))));
                }
                return self.children(pairs, depth);
            }
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
