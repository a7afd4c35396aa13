//! What a `clear_tool_uses` edit measured and cleared in one build, kept
//! so a session's next turn can carry the edit on without measuring the
//! whole history again (see `pipeline::clear`).

use std::collections::VecDeque;

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::budget::{ContextManagement, Item, answered_call, call_id_of, is_tool_use};
use crate::model::context_management::{ClearToolInputs, ClearToolUses, ContextEdit};
use crate::model::memory::MemoryState;

/// One tool use by chunk index: its call and the results that answer it.
#[derive(Debug, Clone)]
pub(crate) struct UseChunks {
    pub(crate) call: usize,
    pub(crate) results: SmallVec<[usize; 2]>,
    pub(crate) tool: Option<Box<str>>,
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
    /// The newest uses, which `keep` spares (at most `keep`), oldest first.
    pub(crate) recent: VecDeque<UseChunks>,
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

    /// Takes in the tool uses among the items at `indices`, as the edit
    /// finds them: a call opens a use (a call id seen before among them
    /// does not), a result joins the use of an earlier call among them it
    /// answers. A turn's new chunks are taken in alone: one sharing a call
    /// id with an older chunk sends the turn to the full pipeline.
    pub(crate) fn take_uses(&mut self, indices: impl Iterator<Item = usize>, state: &MemoryState) {
        let mut by_call: FxHashMap<&str, usize> = FxHashMap::default();
        for index in indices {
            let chunk = &state.chunks[index];
            if is_tool_use(chunk) {
                let id = call_id_of(chunk);
                if id.is_some_and(|id| by_call.contains_key(id)) {
                    continue;
                }
                let position = self.recent.len();
                if let Some(id) = id {
                    by_call.insert(id, position);
                }
                self.recent.push_back(UseChunks {
                    call: index,
                    results: SmallVec::new(),
                    tool: chunk.tool.clone(),
                });
                self.uses += 1;
            } else if let Some(&u) = answered_call(chunk).and_then(|id| by_call.get(id)) {
                self.recent[u].results.push(index);
            }
        }
    }

    /// Lets go of the uses `keep` no longer spares, returning them.
    pub(crate) fn spare_newest(&mut self) -> Vec<UseChunks> {
        let leaving = self.recent.len().saturating_sub(self.edit.keeps());
        self.recent.drain(..leaving).collect()
    }
}
