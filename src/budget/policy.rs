//! What the planner may do to make room, and in which order.
//!
//! Defaults, and why:
//!
//! | kind | priority | retention | cap |
//! |---|---|---|---|
//! | agent, role user | 90 | compressible | |
//! | output | 80 | compressible | |
//! | agent, role assistant | 70 | compressible | |
//! | delegation | 60 | compressible | |
//! | workflow | 40 | compressible | |
//! | environment | 40 | disposable once older than the last 3 model calls | 8,192 tokens, whole chunk |
//! | thinking | 10 | disposable | |
//!
//! What the user asked and what was decided (outputs, answers) outlive the
//! bulk that led to them; subagent results condense much work; tool output is
//! bulky and can be fetched again, and stale reasoning is the cheapest loss.
//! A tool result keeps its body for the last 3 model calls (steps: see
//! the budget module) because the agent is still acting on it;
//! ages count model calls, not user messages, so an autonomous loop that
//! runs hundreds of steps after one instruction ages its results as it goes. The cap keeps one huge
//! tool output from eating the window even when everything fits: a cap
//! bounds what the whole rendered chunk costs, tag and marker included, so
//! no tool result costs more than 8,192 tokens (see [`Caps`]).
//!
//! A chunk's own `priority` and `retention` override its kind's. A priority
//! set for a role (see [`PriorityTarget`]) overrides the kind's for the
//! `agent` chunks of that role: chunk's own > role > kind > default.

use std::fmt;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::caps::{Caps, sorted_entries};
use crate::error::{ErrorKind, Result};
use crate::model::context_management::ContextManagement;
use crate::model::memory::{MemoryChunk, MemoryState};
use crate::model::roles::{ChunkClass, ChunkKind, Retention, Role};

/// Replaces dropped history with a summary the runtime writes.
///
/// Called once per build that drops history; cache on your side if it is
/// expensive. Return `None` to keep the plain elision marker. It is handed
/// at most [`Policy::summary_input_tokens`] of the newest dropped chunks; a
/// summary no smaller than the history it stands for is discarded, and a
/// summarizer that panics is caught: the build keeps the plain marker and
/// its warnings say why. A dropped
/// chunk's body is its `text`, its `data` or its `content` blocks (render
/// those with [`crate::content::render_text`] in the format you summarize
/// from).
pub trait Summarizer: Send + Sync {
    /// A summary of `dropped` (oldest first) in at most `max_tokens` tokens.
    fn summarize(&self, dropped: &[&MemoryChunk], max_tokens: usize) -> Option<String>;
}

/// When compaction is due: at a number of tokens, or a fraction of the
/// budget.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CompactAt {
    /// Tokens.
    Tokens(usize),
    /// A fraction of the budget (positive; above 1 once the history before
    /// trimming outgrows the budget).
    Fraction(f64),
}

/// How the planner makes room. `Default` gives the documented defaults.
#[derive(Clone)]
#[non_exhaustive]
pub struct Policy {
    /// Caps on what a chunk costs.
    pub caps: Caps,
    /// When trimming is needed, trim down to this fraction of the budget so
    /// the next turns append without changing the start of the prompt.
    /// `1.0` trims to exactly the budget. Default `0.8`.
    pub low_water: f64,
    /// Tool results of the last this many model calls (steps, counted from
    /// the newest: the newest call's results are 0 steps old) are not
    /// disposable. Default 3.
    pub recent_turns: usize,
    /// The most tokens of dropped history a [`Summarizer`] is handed: the
    /// newest dropped chunks whose rendered tokens (counted exactly) sum to
    /// at most this. Default 8,192.
    pub summary_input_tokens: usize,
    /// Anthropic's `context_management` edits, applied before planning
    /// (see [`ContextManagement`]). Default none: nothing is cleared while
    /// the prompt fits.
    pub context_management: Option<ContextManagement>,
    /// When a build reports that compaction is due
    /// ([`BuildResult::compaction_due`](crate::BuildResult::compaction_due)):
    /// when the history before trimming costs more. Default none (a
    /// `compact_20260112` edit's trigger, if the `context_management` in
    /// effect has one).
    pub compact_at: Option<CompactAt>,
    priorities: FxHashMap<PriorityTarget, i64>,
    summarizer: Option<Arc<dyn Summarizer>>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            caps: Caps::default(),
            low_water: 0.8,
            recent_turns: 3,
            summary_input_tokens: 8_192,
            context_management: None,
            compact_at: None,
            priorities: FxHashMap::default(),
            summarizer: None,
        }
    }
}

impl fmt::Debug for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Policy")
            .field("caps", &self.caps)
            .field("low_water", &self.low_water)
            .field("recent_turns", &self.recent_turns)
            .field("summary_input_tokens", &self.summary_input_tokens)
            .field("context_management", &self.context_management)
            .field("compact_at", &self.compact_at)
            .field("priorities", &self.priorities)
            .field("summarizer", &self.summarizer.is_some())
            .finish()
    }
}

impl Policy {
    /// Everything of the policy that shapes a plan, written out in one
    /// order whatever order it was set in: part of the key a stored chat's
    /// last build is kept under (see `Settings::plan_key`).
    pub(crate) fn key_text(&self) -> String {
        let priorities = sorted_entries(&self.priorities);
        format!(
            "{} {} {} {} {:?} {priorities:?} {}",
            self.caps.key_text(),
            self.low_water,
            self.recent_turns,
            self.summary_input_tokens,
            self.context_management,
            self.summarizer.is_some(),
        )
    }

    /// The tokens above which compaction is due for a build of `state`
    /// under a budget of `budget` tokens: [`compact_at`](Policy::compact_at),
    /// else the trigger of the `compact_20260112` edit in effect.
    pub(crate) fn compaction_trigger(&self, state: &MemoryState, budget: usize) -> Option<u64> {
        match self.compact_at {
            Some(CompactAt::Tokens(tokens)) => Some(tokens as u64),
            Some(CompactAt::Fraction(fraction)) => Some((budget as f64 * fraction) as u64),
            None => Some(self.management_of(state)?.compaction()?.trigger_tokens()),
        }
    }

    /// The `context_management` a build of `state` under this policy
    /// follows: the policy's, which replaces the session's, else the
    /// session's.
    pub(crate) fn management_of<'s>(
        &'s self,
        state: &'s MemoryState,
    ) -> Option<&'s ContextManagement> {
        self.context_management
            .as_ref()
            .or(state.context_management.as_ref())
    }

    /// Overrides the default priority of a kind, or of the `agent` chunks
    /// of one role: `set_priority(ChunkKind::Agent, 50)` sets both roles,
    /// `set_priority(Role::User, 95)` only the user's. A chunk's own
    /// `priority` wins over its role's, which wins over its kind's.
    pub fn set_priority(&mut self, target: impl Into<PriorityTarget>, priority: i64) -> &mut Self {
        self.priorities.insert(target.into(), priority);
        self
    }

    /// Replaces dropped history with summaries from `summarizer`.
    pub fn set_summarizer(&mut self, summarizer: Arc<dyn Summarizer>) -> &mut Self {
        self.summarizer = Some(summarizer);
        self
    }

    pub(crate) fn summarizer(&self) -> Option<&dyn Summarizer> {
        self.summarizer.as_deref()
    }

    /// Whether `other` makes room exactly as this policy does: the same
    /// caps, numbers and priorities, and no summarizer in either (what one
    /// writes cannot be compared).
    pub(crate) fn plans_like(&self, other: &Policy) -> bool {
        self.summarizer.is_none()
            && other.summarizer.is_none()
            && self.caps == other.caps
            && self.low_water == other.low_water
            && self.recent_turns == other.recent_turns
            && self.context_management == other.context_management
            && self.priorities == other.priorities
    }

    /// Checks the numbers.
    pub(crate) fn validate(&self) -> Result<()> {
        if !(self.low_water > 0.0 && self.low_water <= 1.0) {
            return Err(ErrorKind::Option {
                option: "low_water".into(),
                message: format!("{} is not a fraction in (0, 1]", self.low_water),
            }
            .into());
        }
        if let Some(CompactAt::Fraction(f)) = self.compact_at
            && !(f.is_finite() && f > 0.0)
        {
            return Err(ErrorKind::Option {
                option: "compact_at".into(),
                message: format!("{f} is not a positive fraction of the budget"),
            }
            .into());
        }
        Ok(())
    }

    /// The priority of `chunk`: its own, else its role's, else its kind's
    /// (as set, else by default).
    pub fn priority_of(&self, chunk: &MemoryChunk) -> i64 {
        chunk
            .priority
            .unwrap_or_else(|| self.class_priority(super::rules::class_of(chunk)))
    }

    /// The priority of a chunk of `class` that sets none of its own.
    pub(crate) fn class_priority(&self, class: ChunkClass) -> i64 {
        let set = |target| self.priorities.get(&target).copied();
        (!self.priorities.is_empty())
            .then(|| {
                class
                    .role
                    .and_then(|role| set(PriorityTarget::Role(role)))
                    .or_else(|| set(PriorityTarget::Kind(class.kind)))
            })
            .flatten()
            .unwrap_or(match class.kind {
                ChunkKind::Compaction => 100,
                ChunkKind::Agent if class.role == Some(Role::User) => 90,
                ChunkKind::Output => 80,
                ChunkKind::Agent => 70,
                ChunkKind::Delegation => 60,
                ChunkKind::Workflow | ChunkKind::Environment | ChunkKind::System => 40,
                ChunkKind::Thinking => 10,
            })
    }

    /// The retention of `chunk`, when `steps_back` model calls started
    /// after it (0 for the newest call's chunks).
    pub fn retention_of(&self, chunk: &MemoryChunk, steps_back: usize) -> Retention {
        chunk.retention.unwrap_or(match chunk.kind {
            ChunkKind::Thinking => Retention::Disposable,
            ChunkKind::Environment if steps_back >= self.recent_turns => Retention::Disposable,
            _ => Retention::Compressible,
        })
    }
}

/// What a priority applies to: every chunk of a kind, or the `agent` chunks
/// spoken by a role (the `role` field; tool results rendered in the user
/// role are `environment` chunks, not the user's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PriorityTarget {
    /// Every chunk of this kind.
    Kind(ChunkKind),
    /// The `agent` chunks of this role.
    Role(Role),
}

impl From<ChunkKind> for PriorityTarget {
    fn from(kind: ChunkKind) -> Self {
        PriorityTarget::Kind(kind)
    }
}

impl From<Role> for PriorityTarget {
    fn from(role: Role) -> Self {
        PriorityTarget::Role(role)
    }
}
