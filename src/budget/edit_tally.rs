//! The tool uses a `clear_tool_uses` edit finds and what it stubs of each,
//! which the full pipeline's edit stage and a session's turn share; and
//! what the edit measured and cleared in one build, kept so a session's
//! next turn can carry the edit on without measuring the whole history
//! again (see `pipeline::clear`).

use std::collections::VecDeque;

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::budget::{ContextManagement, Item, answered_call, call_id_of, is_tool_use};
use crate::model::context_management::{ClearToolInputs, ClearToolUses, ContextEdit};
use crate::model::memory::{MemoryChunk, MemoryState};

/// One tool use: its call and the results that answer it, by the index
/// the caller gave each (an item's position, or a chunk's).
#[derive(Debug, Clone)]
pub(crate) struct ToolUse {
    pub(crate) call: usize,
    pub(crate) results: SmallVec<[usize; 2]>,
}

impl ToolUse {
    /// What `edit` stubs of this use, whose call names `tool`: its results,
    /// and its call when the edit clears that tool's inputs. `None` when
    /// the edit spares it: an excluded tool, or a member that `pinned`
    /// says protects itself (the caller's `keep` decides the rest, even
    /// inside the newest tool use, as Anthropic counts parallel calls one
    /// by one).
    pub(crate) fn stubbed_by(
        &self,
        edit: &ClearToolUses,
        tool: Option<&str>,
        pinned: impl Fn(usize) -> bool,
    ) -> Option<SmallVec<[usize; 3]>> {
        let members = std::iter::once(self.call).chain(self.results.iter().copied());
        if edit.excludes(tool) || members.clone().any(pinned) {
            return None;
        }
        let mut stubs: SmallVec<[usize; 3]> = self.results.iter().copied().collect();
        if edit.clears_input(tool) {
            stubs.push(self.call);
        }
        Some(stubs)
    }
}

/// The tool uses among `entries` (each chunk with the index to name it
/// by), oldest first, as the edit finds them: a call opens a use (a call
/// id seen before among them does not), a result joins the use of an
/// earlier call among them that it answers.
pub(crate) fn tool_uses<'s>(
    entries: impl IntoIterator<Item = (usize, &'s MemoryChunk)>,
) -> Vec<ToolUse> {
    let mut uses: Vec<ToolUse> = Vec::new();
    let mut by_call: FxHashMap<&'s str, usize> = FxHashMap::default();
    for (index, chunk) in entries {
        if is_tool_use(chunk) {
            let call_id = call_id_of(chunk);
            if call_id.is_some_and(|id| by_call.contains_key(id)) {
                continue;
            }
            if let Some(id) = call_id {
                by_call.insert(id, uses.len());
            }
            uses.push(ToolUse {
                call: index,
                results: SmallVec::new(),
            });
        } else if let Some(&u) = answered_call(chunk).and_then(|id| by_call.get(id)) {
            uses[u].results.push(index);
        }
    }
    uses
}

/// What a build's lone `clear_tool_uses` edit measured and cleared: what
/// the next turn needs to carry it on.
#[derive(Debug, Clone)]
pub(crate) struct Tally {
    pub(crate) edit: ClearToolUses,
    /// Exact tokens of the prompt with every item kept, before the edit.
    pub(crate) unedited: usize,
    /// The same with the edit's stubs.
    pub(crate) edited: usize,
    /// Tool uses among the items.
    pub(crate) uses: usize,
    /// Of them, those the edit cleared (the report's figure).
    pub(crate) cleared: usize,
    /// The newest uses by chunk index, which `keep` spares (at most
    /// `keep`), oldest first.
    pub(crate) recent: VecDeque<ToolUse>,
}

impl Tally {
    /// The tally of an edit that applied to `items`, with the prompt's
    /// tokens before and after it and the tool uses it cleared.
    pub(crate) fn of(
        edit: &ClearToolUses,
        (items, state): (&[Item], &MemoryState),
        (unedited, edited): (usize, usize),
        cleared: usize,
    ) -> Self {
        let mut tally = Tally {
            edit: edit.clone(),
            unedited,
            edited,
            uses: 0,
            cleared,
            recent: VecDeque::new(),
        };
        tally.take_uses(items.iter().map(|item| item.chunk), state);
        tally.spare_newest();
        tally
    }

    /// Whether `management` is this tally's edit alone.
    pub(crate) fn follows(&self, management: &ContextManagement) -> bool {
        matches!(&management.edits[..], [ContextEdit::ClearToolUses(edit)] if *edit == self.edit)
    }

    /// Whether a warning of the last build about `tool`, which the edit
    /// names, may go now that a chunk has it (see
    /// `ContextManagement::unknown_tool_warnings`).
    pub(crate) fn may_unwarn(&self, tool: &str, warnings: &[String]) -> bool {
        let named = self.edit.exclude_tools.iter().flatten().any(|t| t == tool)
            || matches!(&self.edit.clear_tool_inputs,
                Some(ClearToolInputs::Tools(tools)) if tools.iter().any(|t| t == tool));
        let warning = format!("names tool {tool:?}");
        named && warnings.iter().any(|w| w.contains(&warning))
    }

    /// Takes in the tool uses among the items at `indices` (see
    /// [`tool_uses`]). A turn's new chunks are taken in alone: one sharing
    /// a call id with an older chunk sends the turn to the full pipeline.
    pub(crate) fn take_uses(&mut self, indices: impl Iterator<Item = usize>, state: &MemoryState) {
        let uses = tool_uses(indices.map(|index| (index, &state.chunks[index])));
        self.uses += uses.len();
        self.recent.extend(uses);
    }

    /// Lets go of the uses `keep` no longer spares, returning them.
    pub(crate) fn spare_newest(&mut self) -> Vec<ToolUse> {
        let leaving = self.recent.len().saturating_sub(self.edit.keeps());
        self.recent.drain(..leaving).collect()
    }
}
