//! What a build carries over from the previous one: its cut, and its prompt
//! for measuring how much of the new prompt is unchanged.

use crate::budget::{Decision, DropReason, PreviousCut};
use crate::memory::Role;
use crate::message::{BuildResult, ContextMessage};

/// The parts of a previous build that the next one uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PreviousBuild {
    messages: Vec<(Role, String)>,
    pub(crate) cut: PreviousCut,
}

impl From<&BuildResult> for PreviousBuild {
    fn from(result: &BuildResult) -> Self {
        let mut cut = PreviousCut::default();
        for decision in &result.decisions {
            match decision.decision {
                Decision::Stubbed { .. } => cut.stub(&decision.id),
                Decision::Dropped {
                    reason: DropReason::Budget,
                } => cut.drop(&decision.id),
                _ => {}
            }
        }
        PreviousBuild {
            messages: result
                .messages
                .iter()
                .map(|m| (m.role, m.content.clone()))
                .collect(),
            cut,
        }
    }
}

impl PreviousBuild {
    /// Tokens of the leading messages of `messages` that are byte-identical
    /// (role and content) to the previous build's: the part of the prompt a
    /// provider's prefix cache can still serve.
    pub(crate) fn stable_prefix_tokens(&self, messages: &[ContextMessage]) -> usize {
        messages
            .iter()
            .zip(&self.messages)
            .take_while(|(new, (role, content))| new.role == *role && new.content == *content)
            .map(|(new, _)| new.tokens)
            .sum()
    }
}
