//! Repeated fragment names gathered under their plural, and the English
//! rules that name lists and their elements.
//!
//! A tree keeps fragments as they come, a name given twice appearing
//! twice. Grouping is a view over that: TOML and TOON, whose tables cannot
//! repeat a key, always take it; XML and Markdown when asked
//! ([`FormatOptions::group_fragments`](super::FormatOptions::group_fragments)).

use rustc_hash::{FxHashMap, FxHashSet};

use super::tree::Node;

/// One entry of a map as grouping sees it.
pub(super) enum Entry<'a> {
    /// A name that occurs once.
    One(&'a str, &'a Node),
    /// A name that repeats, under `key` (its plural, or the name itself
    /// when a sibling already uses the plural) at the first one's position.
    Group {
        key: String,
        name: &'a str,
        nodes: Vec<&'a Node>,
    },
}

/// The entries of a map, repeated names gathered.
pub(super) fn grouped(entries: &[(String, Node)]) -> Vec<Entry<'_>> {
    let counts = counts(entries.iter().map(|(name, _)| name.as_str()));
    let mut out: Vec<Entry<'_>> = Vec::with_capacity(counts.len());
    let mut slots: FxHashMap<&str, usize> = FxHashMap::default();
    let mut plurals: FxHashSet<String> = FxHashSet::default();
    for (name, node) in entries {
        let name = name.as_str();
        if counts[name] == 1 {
            out.push(Entry::One(name, node));
            continue;
        }
        if let Some(&at) = slots.get(name) {
            if let Entry::Group { nodes, .. } = &mut out[at] {
                nodes.push(node);
            }
            continue;
        }
        slots.insert(name, out.len());
        let plural = plural(name);
        let taken = counts.contains_key(plural.as_str()) || plurals.contains(&plural);
        let key = if taken {
            name.to_owned()
        } else {
            plurals.insert(plural.clone());
            plural
        };
        out.push(Entry::Group {
            key,
            name,
            nodes: vec![node],
        });
    }
    out
}

/// Whether any name repeats among `entries`.
pub(super) fn repeats(entries: &[(String, Node)]) -> bool {
    let mut seen = FxHashSet::default();
    !entries.iter().all(|(name, _)| seen.insert(name.as_str()))
}

/// How often each name occurs among siblings.
pub(super) fn counts<'a>(names: impl Iterator<Item = &'a str>) -> FxHashMap<&'a str, usize> {
    let mut counts = FxHashMap::default();
    for name in names {
        *counts.entry(name).or_insert(0) += 1;
    }
    counts
}

/// What one element of a list under `key` is called.
pub(super) fn item_name(key: &str) -> String {
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
    use serde_json::Value;

    use super::*;

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
    fn repeats_gather_at_the_first_position_under_a_free_plural() {
        let leaf = |n: i64| Node::Leaf(Value::from(n));
        let entries: Vec<(String, Node)> = [("hint", 1), ("role", 2), ("hint", 3), ("x", 4)]
            .into_iter()
            .map(|(name, n)| (name.to_owned(), leaf(n)))
            .collect();
        assert!(repeats(&entries));
        let keys: Vec<String> = grouped(&entries)
            .iter()
            .map(|entry| match entry {
                Entry::One(name, _) => (*name).to_owned(),
                Entry::Group { key, nodes, .. } => format!("{key}×{}", nodes.len()),
            })
            .collect();
        assert_eq!(keys, ["hints×2", "role", "x"]);
        assert!(!repeats(&entries[1..]));
    }
}
