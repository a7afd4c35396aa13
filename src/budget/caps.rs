//! Caps: the most a chunk may cost in the prompt, set by kind, tag, tool or
//! chunk.
//!
//! A cap bounds what the whole rendered chunk costs, tag, attributes and
//! cut marker included: a chunk over its cap has its body cut until it fits
//! (see [`budget`](crate::budget)). Targets are typed ([`CapTarget`]), so a
//! misspelt kind does not compile; a tag, tool or chunk id is checked when a
//! build runs, against what can actually be capped.

use std::fmt;

use rustc_hash::FxHashMap;

use super::truncate::MIN_CAP;
use crate::error::{ErrorKind, Result};
use crate::model::memory::MemoryChunk;
use crate::model::roles::ChunkKind;

/// The default cap on tool results (`environment` chunks), in tokens: the
/// most one tool result costs in the prompt, tag and marker included.
pub(crate) const DEFAULT_TOOL_RESULT_CAP: usize = 8_192;

/// What a cap applies to. When several caps match a chunk, the most
/// specific wins: chunk id, then tool, then tag, then kind.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CapTarget {
    /// Every chunk of a kind that the default tag table renders (a custom
    /// renderer owns the size of what it renders).
    Kind(ChunkKind),
    /// Every chunk rendered with this tag: one of the default table's, or
    /// one a registered custom renderer declares. A build fails on a tag
    /// that no renderer emits.
    Tag(String),
    /// Every chunk whose `tool` attribute is this name (`bash`): the calls
    /// to the tool and their results. A build warns when no chunk has it,
    /// as for a chunk id.
    Tool(String),
    /// The chunk with this id. A build warns when no chunk has it (a
    /// session's policy outlives chunks, and may be set before they come).
    Chunk(String),
}

impl CapTarget {
    /// The target `name` names, `tags` being the tags a cap may name (see
    /// [`ContextBuilder::cap_target`](crate::ContextBuilder::cap_target),
    /// which knows the tags of its renderers):
    ///
    /// * a bare name is a kind (`environment`), else one of `tags`
    ///   (`tool_result`); a name that is both (`thinking`) is the kind;
    /// * `tool:NAME` is [`CapTarget::Tool`] and `id:CHUNK` is
    ///   [`CapTarget::Chunk`], which no list can check before a build;
    /// * `kind:NAME` and `tag:NAME` name only a kind or only a tag.
    ///
    /// A bare name is never taken for a tool or a chunk id, so that a typo
    /// is an error rather than a cap on nothing.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::UnknownCapTarget`], listing the kinds and `tags`, when
    /// `name` is none of these (or a prefix with nothing after it).
    pub fn from_name(name: &str, tags: &[String]) -> Result<CapTarget> {
        let known_tag = |tag: &str| tags.iter().any(|t| t == tag);
        if let Some(kind) = ChunkKind::from_name(name) {
            return Ok(CapTarget::Kind(kind));
        }
        if known_tag(name) {
            return Ok(CapTarget::Tag(name.to_owned()));
        }
        let target = match name.split_once(':') {
            Some(("tool", tool)) if !tool.is_empty() => Some(CapTarget::Tool(tool.to_owned())),
            Some(("id", id)) if !id.is_empty() => Some(CapTarget::Chunk(id.to_owned())),
            Some(("kind", kind)) => ChunkKind::from_name(kind).map(CapTarget::Kind),
            Some(("tag", tag)) if known_tag(tag) => Some(CapTarget::Tag(tag.to_owned())),
            _ => None,
        };
        target.ok_or_else(|| unknown(name, tags))
    }
}

impl From<ChunkKind> for CapTarget {
    fn from(kind: ChunkKind) -> Self {
        CapTarget::Kind(kind)
    }
}

impl fmt::Display for CapTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CapTarget::Kind(kind) => write!(f, "kind {}", kind.as_str()),
            CapTarget::Tag(tag) => write!(f, "tag {tag}"),
            CapTarget::Tool(tool) => write!(f, "tool {tool:?}"),
            CapTarget::Chunk(id) => write!(f, "chunk {id:?}"),
        }
    }
}

fn unknown(name: &str, tags: &[String]) -> crate::Error {
    ErrorKind::UnknownCapTarget {
        name: name.to_owned(),
        kinds: ChunkKind::ALL
            .iter()
            .map(|k| k.as_str().to_owned())
            .collect(),
        tags: tags.to_vec(),
    }
    .into()
}

/// Token caps on chunks: by chunk id, by tool, by tag, by kind (the most
/// specific wins, in that order). `None` lifts a cap, a default one too.
///
/// ```
/// use agent_context::ChunkKind;
/// use agent_context::budget::{CapTarget, Caps};
///
/// let mut caps = Caps::default();
/// caps.set(ChunkKind::Thinking, Some(500))
///     .set_tag("tool_result", Some(2_000))
///     .set_tool("bash", Some(500))
///     .set(CapTarget::Chunk("r7".into()), None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caps {
    by_kind: FxHashMap<ChunkKind, Option<usize>>,
    by_tag: FxHashMap<String, Option<usize>>,
    by_tool: FxHashMap<String, Option<usize>>,
    by_chunk: FxHashMap<String, Option<usize>>,
}

impl Default for Caps {
    fn default() -> Self {
        let mut caps = Caps::none();
        caps.set_kind(ChunkKind::Environment, Some(DEFAULT_TOOL_RESULT_CAP));
        caps
    }
}

impl Caps {
    /// Every cap, written out in one order whatever order they were set
    /// in (see [`Policy::key_text`](super::Policy::key_text)).
    pub(crate) fn key_text(&self) -> String {
        let maps = [
            sorted_entries(&self.by_kind),
            sorted_entries(&self.by_tag),
            sorted_entries(&self.by_tool),
            sorted_entries(&self.by_chunk),
        ];
        format!("{maps:?}")
    }

    /// The smallest cap set, if any is.
    pub(crate) fn smallest(&self) -> Option<usize> {
        (self.by_kind.values())
            .chain(self.by_tag.values())
            .chain(self.by_tool.values())
            .chain(self.by_chunk.values())
            .filter_map(|cap| *cap)
            .min()
    }

    /// Whether a cap names a tool or a chunk (whose warnings depend on
    /// which chunks a state holds).
    pub(crate) fn names_tools_or_chunks(&self) -> bool {
        !self.by_tool.is_empty() || !self.by_chunk.is_empty()
    }

    /// No caps at all.
    pub fn none() -> Self {
        Caps {
            by_kind: FxHashMap::default(),
            by_tag: FxHashMap::default(),
            by_tool: FxHashMap::default(),
            by_chunk: FxHashMap::default(),
        }
    }

    /// Caps (or with `None`, uncaps) what each chunk of `target` costs.
    /// Caps below 64 tokens are raised to 64, with a warning.
    pub fn set(&mut self, target: impl Into<CapTarget>, tokens: Option<usize>) -> &mut Self {
        match target.into() {
            CapTarget::Kind(kind) => self.by_kind.insert(kind, tokens),
            CapTarget::Tag(tag) => self.by_tag.insert(tag, tokens),
            CapTarget::Tool(tool) => self.by_tool.insert(tool, tokens),
            CapTarget::Chunk(id) => self.by_chunk.insert(id, tokens),
        };
        self
    }

    /// Caps the chunks of a kind, as [`set`](Caps::set).
    pub fn set_kind(&mut self, kind: ChunkKind, tokens: Option<usize>) -> &mut Self {
        self.set(CapTarget::Kind(kind), tokens)
    }

    /// Caps the chunks rendered with `tag`, as [`set`](Caps::set); a build
    /// fails when no renderer emits that tag.
    pub fn set_tag(&mut self, tag: &str, tokens: Option<usize>) -> &mut Self {
        self.set(CapTarget::Tag(tag.to_owned()), tokens)
    }

    /// Caps the chunks whose `tool` attribute is `tool` (the calls and
    /// their results), as [`set`](Caps::set); a build warns when no chunk
    /// has that tool.
    pub fn set_tool(&mut self, tool: &str, tokens: Option<usize>) -> &mut Self {
        self.set(CapTarget::Tool(tool.to_owned()), tokens)
    }

    /// Caps one chunk, as [`set`](Caps::set); a build warns when no chunk
    /// has that id.
    pub fn set_chunk(&mut self, id: &str, tokens: Option<usize>) -> &mut Self {
        self.set(CapTarget::Chunk(id.to_owned()), tokens)
    }

    /// The cap set for `chunk`, rendered by the default table with `tag`,
    /// as set (before raising to 64 tokens).
    pub fn cap_for(&self, chunk: &MemoryChunk, tag: &str) -> Option<usize> {
        // Most policies set no cap by chunk, tool or tag: skip hashing for them.
        let by_chunk = || (!self.by_chunk.is_empty()).then(|| self.by_chunk.get(&chunk.id));
        let by_tag = || (!self.by_tag.is_empty()).then(|| self.by_tag.get(tag));
        by_chunk()
            .flatten()
            .or_else(|| self.tool_cap(chunk))
            .or_else(|| by_tag().flatten())
            .or_else(|| self.by_kind.get(&chunk.kind))
            .copied()
            .flatten()
    }

    /// The cap set on `chunk`'s tool, if it has one and one is set.
    fn tool_cap(&self, chunk: &MemoryChunk) -> Option<&Option<usize>> {
        if self.by_tool.is_empty() {
            return None;
        }
        self.by_tool.get(chunk.tool.as_deref()?)
    }

    /// The cap set on `chunk` itself (its id, then its tool), else the
    /// smallest set on one of the tags a custom renderer declares (`tags`,
    /// asked only when a tag is capped): kind caps aside.
    pub(crate) fn explicit_cap_for(
        &self,
        chunk: &MemoryChunk,
        tags: impl FnOnce() -> Vec<String>,
    ) -> Option<usize> {
        if let Some(cap) = self.by_chunk.get(&chunk.id) {
            return *cap;
        }
        if let Some(cap) = self.tool_cap(chunk) {
            return *cap;
        }
        if self.by_tag.is_empty() {
            return None;
        }
        tags()
            .iter()
            .filter_map(|tag| self.by_tag.get(tag.as_str()).copied().flatten())
            .min()
    }

    /// Whether a cap names a chunk id or a tool: whether a new chunk can
    /// change what [`check`](Caps::check) warns of.
    pub(crate) fn names_chunks_or_tools(&self) -> bool {
        !self.by_chunk.is_empty() || !self.by_tool.is_empty()
    }

    /// Checks the caps against what a build can cap: an error for a tag not
    /// among `tags`, and a warning (returned) for each cap below
    /// [`MIN_CAP`], each chunk id that `has_chunk` does not know and each
    /// tool that `has_tool` does not know.
    pub(crate) fn check(
        &self,
        tags: impl FnOnce() -> Vec<String>,
        has_chunk: impl Fn(&str) -> bool,
        has_tool: impl Fn(&str) -> bool,
    ) -> Result<Vec<String>> {
        // Most policies cap no tag: the tags are listed only when one is.
        if !self.by_tag.is_empty() {
            let tags = tags();
            let mut unknown_tags: Vec<&String> = self
                .by_tag
                .keys()
                .filter(|tag| !tags.contains(tag))
                .collect();
            unknown_tags.sort();
            if let Some(tag) = unknown_tags.first() {
                return Err(unknown(tag, &tags));
            }
        }
        let mut warnings = Vec::new();
        // Sorted by name, so warnings do not depend on hashing order.
        let mut below_floor: Vec<(String, usize)> = self
            .targets()
            .filter_map(|(target, tokens)| Some((target.to_string(), tokens?)))
            .filter(|(_, tokens)| *tokens < MIN_CAP)
            .collect();
        below_floor.sort();
        for (target, tokens) in below_floor {
            warnings.push(format!(
                "cap of {tokens} tokens on {target} is below the floor of {MIN_CAP} \
                 (a tag, its attributes and the cut marker need room): {MIN_CAP} applies"
            ));
        }
        let mut missing: Vec<&String> = self.by_chunk.keys().filter(|id| !has_chunk(id)).collect();
        missing.sort();
        for id in missing {
            warnings.push(format!(
                "cap on chunk {id:?}: no chunk has this id, so it caps nothing"
            ));
        }
        let mut missing: Vec<&String> = self.by_tool.keys().filter(|t| !has_tool(t)).collect();
        missing.sort();
        for tool in missing {
            warnings.push(format!(
                "cap on tool {tool:?}: no chunk has this tool, so it caps nothing"
            ));
        }
        Ok(warnings)
    }

    /// Every cap set, with its target.
    fn targets(&self) -> impl Iterator<Item = (CapTarget, Option<usize>)> + '_ {
        let kinds = self.by_kind.iter().map(|(k, t)| (CapTarget::Kind(*k), *t));
        let tags = self
            .by_tag
            .iter()
            .map(|(k, t)| (CapTarget::Tag(k.clone()), *t));
        let tools = self
            .by_tool
            .iter()
            .map(|(k, t)| (CapTarget::Tool(k.clone()), *t));
        let chunks = self
            .by_chunk
            .iter()
            .map(|(k, t)| (CapTarget::Chunk(k.clone()), *t));
        kinds.chain(tags).chain(tools).chain(chunks)
    }
}

/// A map's entries as `key=value` text, sorted: the same whatever order
/// they were set in (see [`Policy::key_text`](super::Policy::key_text)).
pub(super) fn sorted_entries<K: fmt::Debug, V: fmt::Debug>(map: &FxHashMap<K, V>) -> Vec<String> {
    let mut entries: Vec<String> = map.iter().map(|(k, v)| format!("{k:?}={v:?}")).collect();
    entries.sort();
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags() -> Vec<String> {
        ["tool_result", "thinking"].map(String::from).to_vec()
    }

    #[test]
    fn a_name_is_a_kind_or_a_known_tag_and_nothing_else() {
        assert_eq!(
            CapTarget::from_name("environment", &tags()).unwrap(),
            CapTarget::Kind(ChunkKind::Environment)
        );
        assert_eq!(
            CapTarget::from_name("tool_result", &tags()).unwrap(),
            CapTarget::Tag("tool_result".into())
        );
        let error = CapTarget::from_name("tool_results", &tags()).unwrap_err();
        assert_eq!(
            error.to_string(),
            "unknown cap target \"tool_results\": expected a kind (system, agent, workflow, \
             delegation, environment, thinking, output, compaction) or a tag (tool_result, thinking), or \
             tool:NAME for the chunks of a tool, id:CHUNK for one chunk"
        );
    }

    #[test]
    fn a_prefix_names_a_tool_a_chunk_or_only_a_kind_or_a_tag() {
        let target = |name| CapTarget::from_name(name, &tags());
        assert_eq!(target("tool:bash").unwrap(), CapTarget::Tool("bash".into()));
        assert_eq!(target("id:r7").unwrap(), CapTarget::Chunk("r7".into()));
        assert_eq!(target("id:a:b").unwrap(), CapTarget::Chunk("a:b".into()));
        assert_eq!(
            target("thinking").unwrap(),
            CapTarget::Kind(ChunkKind::Thinking)
        );
        assert_eq!(
            target("tag:thinking").unwrap(),
            CapTarget::Tag("thinking".into())
        );
        assert_eq!(
            target("kind:environment").unwrap(),
            CapTarget::Kind(ChunkKind::Environment)
        );
        // A bare name is never a tool, and a prefix needs a name after it.
        for bad in [
            "bash",
            "tool:",
            "id:",
            "kind:tool_result",
            "tag:environment",
            "tools:bash",
        ] {
            let error = target(bad).unwrap_err();
            assert!(
                matches!(error.kind(), ErrorKind::UnknownCapTarget { name, .. } if name == bad),
                "{bad}: {error}"
            );
        }
    }

    fn chunk(id: &str, kind: ChunkKind, tool: Option<&str>) -> MemoryChunk {
        let chunk = MemoryChunk::new(id, kind).with_text("body");
        match tool {
            Some(tool) => chunk.with_tool(tool),
            None => chunk,
        }
    }

    #[test]
    fn the_most_specific_cap_wins_id_then_tool_then_tag_then_kind() {
        let bash = chunk("r1", ChunkKind::Environment, Some("bash"));
        let grep = chunk("r2", ChunkKind::Environment, Some("grep"));
        let mut caps = Caps::none();
        caps.set_kind(ChunkKind::Environment, Some(4_000));
        assert_eq!(caps.cap_for(&bash, "tool_result"), Some(4_000));
        caps.set_tag("tool_result", Some(3_000));
        assert_eq!(caps.cap_for(&bash, "tool_result"), Some(3_000));
        caps.set_tool("bash", Some(2_000));
        assert_eq!(caps.cap_for(&bash, "tool_result"), Some(2_000));
        assert_eq!(caps.cap_for(&grep, "tool_result"), Some(3_000));
        caps.set_chunk("r1", Some(1_000));
        assert_eq!(caps.cap_for(&bash, "tool_result"), Some(1_000));
        // `None` on a tool lifts the caps below it for that tool only.
        caps.set_tool("grep", None);
        assert_eq!(caps.cap_for(&grep, "tool_result"), None);
        // A custom renderer's chunk: its id, then its tool, then its tags.
        assert_eq!(caps.explicit_cap_for(&grep, tags), None);
        let other = chunk("r3", ChunkKind::Environment, Some("bash"));
        assert_eq!(caps.explicit_cap_for(&other, tags), Some(2_000));
    }

    #[test]
    fn a_check_rejects_unknown_tags_and_warns_below_the_floor_and_of_missing_chunks() {
        let mut caps = Caps::default();
        caps.set_tag("tool_reslut", Some(100));
        assert!(matches!(
            caps.check(tags, |_| true, |_| true).unwrap_err().kind(),
            ErrorKind::UnknownCapTarget { name, .. } if name == "tool_reslut"
        ));
        let mut caps = Caps::default();
        caps.set_tag("thinking", Some(0))
            .set_kind(ChunkKind::Agent, Some(MIN_CAP))
            .set_chunk("gone", Some(500))
            .set_tool("bash", Some(500))
            .set_tool("bsah", Some(500));
        let warnings = caps
            .check(tags, |id| id != "gone", |tool| tool == "bash")
            .unwrap();
        assert_eq!(
            warnings,
            [
                format!(
                    "cap of 0 tokens on tag thinking is below the floor of {MIN_CAP} (a tag, its \
                     attributes and the cut marker need room): {MIN_CAP} applies"
                ),
                "cap on chunk \"gone\": no chunk has this id, so it caps nothing".to_owned(),
                "cap on tool \"bsah\": no chunk has this tool, so it caps nothing".to_owned(),
            ]
        );
        assert!(
            Caps::default()
                .check(tags, |_| false, |_| false)
                .unwrap()
                .is_empty()
        );
    }
}
