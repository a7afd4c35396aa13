//! Each chunk made ready for planning: rendered, capped, stubbed, counted.

use std::borrow::Cow;
use std::sync::Arc;

use crate::budget::{Decision, Policy, truncate_to_cap};
use crate::memory::{MemoryChunk, Retention, Role};
use crate::render::{ChunkRenderer, RenderContext, default_tag};
use crate::tokens::TokenCounter;
use crate::tokens::parts::CountedText;

/// A rendered chunk: made by a build, or lent to it by a session's cache.
#[derive(Debug, Clone)]
pub(crate) struct PreparedChunk {
    pub(crate) role: Role,
    pub(crate) part: Arc<CountedText>,
    /// `Truncated` when a cap shortened the body, else `Kept`.
    pub(crate) decision: Decision,
}

/// Renders chunks for one build.
pub(crate) struct Preparer<'a> {
    pub(crate) counter: &'a dyn TokenCounter,
    pub(crate) ctx: RenderContext<'a>,
    pub(crate) policy: &'a Policy,
}

impl Preparer<'_> {
    /// The cap on `chunk`'s body. Pinned and critical chunks are exempt:
    /// the caller asked to keep them whole.
    pub(crate) fn cap_for(&self, chunk: &MemoryChunk) -> Option<usize> {
        let exempt = chunk.pinned || chunk.retention == Some(Retention::Critical);
        if exempt {
            None
        } else {
            self.policy.caps.cap_for(chunk, default_tag(chunk))
        }
    }

    /// Renders `chunk`, cutting its body to `cap` when it is over.
    pub(crate) fn prepare(
        &self,
        chunk: &MemoryChunk,
        renderer: &dyn ChunkRenderer,
        cap: Option<usize>,
    ) -> PreparedChunk {
        let role = renderer.role(chunk);
        let part = self.render(chunk, renderer);
        // A body costs fewer tokens than its rendered chunk, so only chunks
        // over the cap can have a body over it.
        if let Some(cap) = cap
            && part.alone() > cap
            && let Some(body) = body_text(chunk)
            && let Some(cut) = truncate_to_cap(self.counter, &body, cap)
        {
            let mut shortened = chunk.clone();
            shortened.text = Some(cut.text);
            shortened.data = None;
            let cut_part = self.render(&shortened, renderer);
            let decision = Decision::Truncated {
                tokens_before: part.alone(),
                tokens_after: cut_part.alone(),
                cap: cap.max(crate::budget::MIN_CAP),
            };
            return PreparedChunk {
                role,
                part: Arc::new(cut_part),
                decision,
            };
        }
        PreparedChunk {
            role,
            part: Arc::new(part),
            decision: Decision::Kept,
        }
    }

    /// The stub of a rendered chunk, when its renderer has one and the chunk
    /// has at least [`STUB_MIN_TOKENS`] tokens.
    pub(crate) fn stub(
        &self,
        chunk: &MemoryChunk,
        renderer: &dyn ChunkRenderer,
        part: &CountedText,
    ) -> Option<Arc<CountedText>> {
        if part.alone() < STUB_MIN_TOKENS {
            return None;
        }
        let mut text = String::new();
        if !renderer.render_stub(chunk, part.alone(), &self.ctx, &mut text) {
            return None;
        }
        Some(CountedText::new(text, self.counter))
            .filter(|stub| stub.alone() < part.alone())
            .map(Arc::new)
    }

    fn render(&self, chunk: &MemoryChunk, renderer: &dyn ChunkRenderer) -> CountedText {
        let mut text = String::with_capacity(body_len(chunk) + RENDER_SLACK);
        renderer.render(chunk, &self.ctx, &mut text);
        // A session keeps every rendered chunk: hold no spare capacity.
        text.shrink_to_fit();
        CountedText::new(text, self.counter)
    }
}

/// Chunks shorter than this are not worth a stub (it would save a few
/// tokens); they make room by being dropped with their unit instead.
pub(crate) const STUB_MIN_TOKENS: usize = 64;

/// Room for tags and attributes around a body, so rendering rarely regrows.
const RENDER_SLACK: usize = 160;

/// The length of a chunk's text body (data bodies are sized by rendering).
fn body_len(chunk: &MemoryChunk) -> usize {
    chunk.text.as_ref().map_or(0, String::len)
}

/// A chunk's body as the default renderers write it (before escaping).
pub(crate) fn body_text(chunk: &MemoryChunk) -> Option<Cow<'_, str>> {
    match (&chunk.text, &chunk.data) {
        (Some(text), _) => Some(Cow::Borrowed(text)),
        (None, Some(data)) => Some(Cow::Owned(data.to_pretty())),
        (None, None) => None,
    }
}
