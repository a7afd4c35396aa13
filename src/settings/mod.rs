//! The settings of a build: [`ContextBuilder`](crate::ContextBuilder), its
//! setters (`builder`), and [`Settings`], what the pipeline reads of it,
//! with the questions the pipeline asks of them: which chunks it selects,
//! which counter it counts with, which tags a cap may name, what budget
//! the model and `max_tokens` give.

pub(crate) mod builder;

use std::sync::Arc;

use rustc_hash::FxHashSet;

use crate::budget::{ELIDED_TAG, HISTORY_START_TAG, Policy, SUMMARY_TAG};
use crate::content::{ContentFormat, ContentRenderer};
use crate::error::{ErrorKind, Result};
use crate::format::{FormatOptions, FragmentFormat};
use crate::model::memory::{MemoryChunk, MemoryState};
use crate::model::roles::ChunkKind;
use crate::render::{ChunkRenderer, DefaultRenderer, EscapeMode, RendererRegistry};
use crate::tokens::{Calibration, Framing, TokenCounter, counter_for_model_calibrated, model_info};
use builder::DEFAULT_MODEL;

/// How chunks' `content` is written: a built-in format, or a caller's
/// renderer.
#[derive(Clone)]
pub(crate) enum ContentChoice {
    Format(ContentFormat),
    Custom(Arc<dyn ContentRenderer>),
}

impl ContentChoice {
    pub(crate) fn renderer(&self) -> &dyn ContentRenderer {
        match self {
            ContentChoice::Format(format) => format.renderer(),
            ContentChoice::Custom(renderer) => renderer.as_ref(),
        }
    }

    /// The built-in format, which keys kept counts; `None` for a custom
    /// renderer.
    pub(crate) fn format(&self) -> Option<ContentFormat> {
        match self {
            ContentChoice::Format(format) => Some(*format),
            ContentChoice::Custom(_) => None,
        }
    }
}

impl std::fmt::Debug for ContentChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ContentChoice::Format(format) => f.debug_tuple("Format").field(format).finish(),
            ContentChoice::Custom(_) => f.write_str("Custom(..)"),
        }
    }
}

/// What a build reads of its [`ContextBuilder`](crate::ContextBuilder):
/// every setting, and nothing of a build (the previous build a one-shot
/// build extends is the builder's, passed to the build beside these).
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) model: String,
    pub(crate) counter: Option<Arc<dyn TokenCounter>>,
    pub(crate) calibration: Calibration,
    pub(crate) max_tokens: Option<usize>,
    pub(crate) reserve_output: usize,
    pub(crate) system_prompt: Option<String>,
    pub(crate) escape: EscapeMode,
    pub(crate) framing: Framing,
    pub(crate) include_kinds: Option<Vec<ChunkKind>>,
    pub(crate) exclude_kinds: Vec<ChunkKind>,
    pub(crate) include_ids: Option<Vec<String>>,
    pub(crate) renderers: RendererRegistry,
    pub(crate) content: ContentChoice,
    pub(crate) user_first: bool,
    pub(crate) fragments_format: FragmentFormat,
    pub(crate) fragment_options: FormatOptions,
    pub(crate) policy: Policy,
    pub(crate) threads: usize,
}

impl Settings {
    /// The defaults: the default model, its whole window as budget.
    pub(crate) fn new() -> Self {
        Settings {
            model: DEFAULT_MODEL.to_owned(),
            counter: None,
            calibration: Calibration::new(),
            max_tokens: None,
            reserve_output: 0,
            system_prompt: None,
            escape: EscapeMode::default(),
            framing: Framing::default(),
            include_kinds: None,
            exclude_kinds: Vec::new(),
            include_ids: None,
            renderers: RendererRegistry::new(),
            content: ContentChoice::Format(ContentFormat::default()),
            user_first: false,
            fragments_format: FragmentFormat::default(),
            fragment_options: FormatOptions::default(),
            policy: Policy::default(),
            threads: 1,
        }
    }

    /// The tags a cap may name: those the default table gives chunks (not
    /// the builder's own markers) and those custom renderers declare.
    pub(crate) fn cap_tags(&self) -> Vec<String> {
        let markers = [ELIDED_TAG, HISTORY_START_TAG, SUMMARY_TAG];
        let mut tags: Vec<String> = DefaultRenderer
            .tags()
            .into_iter()
            .filter(|tag| !markers.contains(&tag.as_str()))
            .collect();
        for tag in self.renderers.custom_tags() {
            if !tags.contains(&tag) {
                tags.push(tag);
            }
        }
        tags
    }

    /// Whether a build under `policy` plans each chunk from what it holds
    /// alone, so a stored chat may be built from its newest chunks (see
    /// `engine::newest`): no filter, custom renderer, summarizer, context
    /// editing, or cap naming a tool or chunk (and, the caller checks, no
    /// previous build).
    pub(crate) fn plans_chunks_alone(&self, policy: &Policy, state: &MemoryState) -> bool {
        self.include_kinds.is_none()
            && self.exclude_kinds.is_empty()
            && self.include_ids.is_none()
            && self.renderers.only_default()
            && policy.summarizer().is_none()
            && policy
                .management_of(state)
                .is_none_or(|m| !m.edits_history())
            && !policy.caps.names_tools_or_chunks()
    }

    /// The key under which a stored chat keeps the record of a build made
    /// with these settings and `policy`, which the next build extends only
    /// under the same key (see `engine::record`): this crate's version and
    /// every setting that shapes a plan, hashed. `None` with a caller's
    /// counter, code the key cannot name. A caller's renderers are named by
    /// their tags only: a build with other renderer code under the same
    /// tags extends the record, and still fits its budget.
    pub(crate) fn plan_key(&self, policy: &Policy) -> Option<String> {
        if self.counter.is_some() {
            return None;
        }
        let text = format!("{:?} {}", self.system_prompt, self.shaping_text(policy));
        Some(format!(
            "{} {:016x}",
            env!("CARGO_PKG_VERSION"),
            hash(&text)
        ))
    }

    /// A hash of what shapes a prompt under `policy` besides its input and
    /// the system prompt: a [`CacheReport`](crate::CacheReport) blames a
    /// broken prefix on the settings when two builds' keys differ.
    pub(crate) fn cache_key(&self, policy: &Policy) -> u64 {
        hash(&self.shaping_text(policy))
    }

    /// Every setting that shapes a plan but the system prompt, and the
    /// plan's policy, as text.
    fn shaping_text(&self, policy: &Policy) -> String {
        format!(
            "{:?}",
            (
                (&self.model, self.max_tokens, self.reserve_output),
                (self.escape, &self.framing),
                (&self.include_kinds, &self.exclude_kinds, &self.include_ids),
                (self.renderers.protocol(), self.renderers.tag_set().names()),
                (self.renderers.only_default(), &self.renderers.custom_tags()),
                (&self.content, self.user_first),
                (&self.fragments_format, &self.fragment_options),
                policy.key_text(),
            )
        )
    }

    /// The ids `include_ids` keeps, when set.
    pub(crate) fn only_ids(&self) -> Option<FxHashSet<&str>> {
        self.include_ids
            .as_ref()
            .map(|ids| ids.iter().map(String::as_str).collect())
    }

    /// Whether the filters keep `chunk` (`only_ids` as
    /// [`only_ids`](Settings::only_ids) gives it).
    pub(crate) fn selects(&self, chunk: &MemoryChunk, only_ids: Option<&FxHashSet<&str>>) -> bool {
        self.include_kinds
            .as_ref()
            .is_none_or(|kinds| kinds.contains(&chunk.kind))
            && !self.exclude_kinds.contains(&chunk.kind)
            && only_ids.is_none_or(|ids| ids.contains(chunk.id.as_str()))
    }

    /// The counter these settings count with: the caller's, else the model's
    /// (an estimate at its calibrated factor when the model has no public
    /// tokenizer).
    pub(crate) fn counter_in_use(&self) -> Result<Arc<dyn TokenCounter>> {
        match &self.counter {
            Some(counter) => Ok(Arc::clone(counter)),
            None => counter_for_model_calibrated(&self.model, &self.calibration),
        }
    }

    /// `(max_tokens, available)` for this build.
    pub(crate) fn budget(&self, warnings: &mut Vec<String>) -> Result<(usize, usize)> {
        let window = model_info(&self.model).map(|m| m.context_window);
        let max_tokens = match (self.max_tokens, window) {
            (Some(max), Some(window)) if max > window => {
                warnings.push(format!(
                    "max_tokens {max} is above the {window}-token context window of {}",
                    self.model
                ));
                max
            }
            (Some(max), _) => max,
            (None, Some(window)) => window,
            (None, None) => {
                return Err(ErrorKind::Option {
                    option: "max_tokens".into(),
                    message: format!(
                        "the context window of model {:?} is unknown; set max_tokens",
                        self.model
                    ),
                }
                .into());
            }
        };
        if max_tokens == 0 {
            return Err(ErrorKind::Option {
                option: "max_tokens".into(),
                message: "max_tokens must be at least 1".into(),
            }
            .into());
        }
        if self.reserve_output >= max_tokens {
            return Err(ErrorKind::Option {
                option: "reserve_output".into(),
                message: format!(
                    "reserve_output {} leaves no room in max_tokens {max_tokens}: lower \
                     reserve_output or raise max_tokens",
                    self.reserve_output
                ),
            }
            .into());
        }
        Ok((max_tokens, max_tokens - self.reserve_output))
    }

    /// An error naming the first id of `include_ids` no chunk of `state` has.
    pub(crate) fn check_included_ids(&self, state: &MemoryState) -> Result<()> {
        let Some(ids) = &self.include_ids else {
            return Ok(());
        };
        let known: FxHashSet<&str> = state.chunks.iter().map(|c| c.id.as_str()).collect();
        match ids.iter().find(|id| !known.contains(id.as_str())) {
            Some(missing) => Err(ErrorKind::Option {
                option: "include_ids".into(),
                message: format!("no chunk has id {missing:?}"),
            }
            .into()),
            None => Ok(()),
        }
    }
}

/// The 64-bit hash a key keeps of `text`.
fn hash(text: &str) -> u64 {
    let mut hasher = rustc_hash::FxHasher::default();
    std::hash::Hasher::write(&mut hasher, text.as_bytes());
    std::hash::Hasher::finish(&hasher)
}
