//! What a build carries over from the previous one: its cut, and its prompt
//! for measuring how much of the new prompt is unchanged.

use crate::budget::PreviousCut;
use crate::build_result::BuildResult;
use crate::message::{ContextMessage, MessageFingerprint, Summary, content_hash};
use crate::rows::Rows;
use crate::tokens::parts::SEPARATOR;

/// The parts of a previous build that the next one uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PreviousBuild {
    messages: Rows<MessageFingerprint>,
    pub(crate) cut: PreviousCut,
    /// The summary that stood for the cut, if any.
    pub(crate) summary: Option<Summary>,
}

impl From<&BuildResult> for PreviousBuild {
    /// The previous build as a one-shot builder takes it: its cut by id.
    fn from(result: &BuildResult) -> Self {
        PreviousBuild::new(result, PreviousCut::by_id(&result.decisions))
    }
}

impl PreviousBuild {
    pub(crate) fn new(result: &BuildResult, cut: PreviousCut) -> Self {
        PreviousBuild {
            messages: result.fingerprints.clone(),
            cut,
            summary: result.summary.clone(),
        }
    }

    /// Takes `result`'s messages and summary, keeping the cut: the caller
    /// recorded in it what `result` cut.
    pub(crate) fn follow(&mut self, result: &BuildResult) {
        self.messages = result.fingerprints.clone();
        self.summary = result.summary.clone();
    }

    /// Tokens at the start of `messages` (fingerprinted as `fingerprints`)
    /// that are byte-identical to the previous build's, as far as a
    /// provider's prefix cache can tell: every leading message that is
    /// unchanged (framing included), then, when the next message only grew
    /// (same role, its old content then a separator then more), the content
    /// tokens of its old parts. A lower bound: the framing of a grown
    /// message is not counted.
    pub(crate) fn stable_prefix_tokens(
        &self,
        messages: &Rows<ContextMessage>,
        fingerprints: &Rows<MessageFingerprint>,
    ) -> usize {
        let mut stable = 0;
        let pairs = messages.iter().zip(fingerprints).zip(&self.messages);
        for ((new, print), old) in pairs {
            if print.role != old.role {
                break;
            }
            if print.len == old.len && print.hash == old.hash {
                stable += new.tokens;
                continue;
            }
            let content = new.content.as_str();
            let grew = content.len() > old.len
                && content.is_char_boundary(old.len)
                && content[old.len..].starts_with(SEPARATOR)
                && content_hash(&content[..old.len]) == old.hash;
            if grew {
                stable += old.growable;
            }
            break;
        }
        stable
    }
}
