//! What a build carries over from the previous one: its cut, and its prompt
//! for measuring how much of the new prompt is unchanged.

use crate::assemble::Summary;
use crate::budget::{Decision, DropReason, PreviousCut};
use crate::memory::Role;
use crate::message::{BuildResult, ContextMessage};
use crate::tokens::parts::SEPARATOR;

/// The parts of a previous build that the next one uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PreviousBuild {
    /// Role, content, and the content tokens that stay if the message grows.
    messages: Vec<(Role, String, usize)>,
    pub(crate) cut: PreviousCut,
    /// The summary that stood for the cut, if any.
    pub(crate) summary: Option<Summary>,
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
                .zip(
                    result
                        .growable_prefix_tokens
                        .iter()
                        .chain(std::iter::repeat(&0)),
                )
                .map(|(m, &growable)| (m.role, m.content.clone(), growable))
                .collect(),
            cut,
            summary: result.summary.clone(),
        }
    }
}

impl PreviousBuild {
    /// Tokens at the start of `messages` that are byte-identical to the
    /// previous build's, as far as a provider's prefix cache can tell: every
    /// leading message that is unchanged (framing included), then, when the
    /// next message only grew (same role, its old content then a separator
    /// then more), the content tokens of its old parts. A lower bound: the
    /// framing of a grown message is not counted.
    pub(crate) fn stable_prefix_tokens(&self, messages: &[ContextMessage]) -> usize {
        let mut stable = 0;
        for (new, (role, content, growable)) in messages.iter().zip(&self.messages) {
            if new.role != *role {
                break;
            }
            if new.content == *content {
                stable += new.tokens;
                continue;
            }
            let grew = new
                .content
                .strip_prefix(content.as_str())
                .is_some_and(|rest| rest.starts_with(SEPARATOR));
            if grew {
                stable += growable;
            }
            break;
        }
        stable
    }
}
