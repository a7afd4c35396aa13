//! Each chunk made ready for planning: rendered, capped, stubbed, counted.

use std::borrow::Cow;
use std::sync::Arc;

use crate::budget::{Decision, MIN_CAP, Policy, cut_body, marker_only, protects_itself};
use crate::content::{ContentRenderer, render_text};
use crate::error::{ChunkLocation, ErrorKind, Result};
use crate::model::memory::MemoryChunk;
use crate::model::roles::Role;
use crate::render::{ChunkRenderer, RenderContext, body_text, default_tag};
use crate::tokens::TokenCounter;
use crate::tokens::known;
use crate::tokens::parts::{CountedText, count_within};

/// A rendered chunk, as the build's cache holds it.
#[derive(Debug, Clone)]
pub(crate) struct PreparedChunk {
    pub(crate) role: Role,
    pub(crate) part: Arc<CountedText>,
    /// `Truncated` when a cap shortened the body, else `Kept`.
    pub(crate) decision: Decision,
}

/// Renders chunks for one build.
#[derive(Clone, Copy)]
pub(crate) struct Preparer<'a> {
    pub(crate) counter: &'a dyn TokenCounter,
    pub(crate) ctx: RenderContext<'a>,
    pub(crate) policy: &'a Policy,
    /// What writes a chunk's `content` as its text body.
    pub(crate) content: &'a dyn ContentRenderer,
}

impl Preparer<'_> {
    /// The cap on `chunk` rendered by `renderer`, as set: [`prepare`](Preparer::prepare)
    /// raises it to [`MIN_CAP`], and a cap too small for the chunk is
    /// reported as it was asked for. Pinned and critical chunks are exempt: the caller asked to keep them
    /// whole. A custom renderer draws what it likes from the chunk and owns
    /// its size: only a cap on the chunk or on a tag it declares applies.
    pub(crate) fn cap_for(
        &self,
        chunk: &MemoryChunk,
        renderer: &dyn ChunkRenderer,
        by_default: bool,
    ) -> Option<usize> {
        cap_on(self.policy, chunk, renderer, by_default)
    }

    /// Renders `chunk` (the `index`-th of the session), cutting its body
    /// when the rendered chunk costs more than `cap` (as set: raised here
    /// to [`MIN_CAP`]).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::CapTooSmall`] when the chunk costs more than the raised
    /// cap even with its body cut to nothing.
    pub(crate) fn prepare(
        &self,
        index: usize,
        chunk: &MemoryChunk,
        renderer: &dyn ChunkRenderer,
        cap: Option<usize>,
    ) -> Result<PreparedChunk> {
        // A chunk's counts are stored with it, not with the build's own
        // texts (see `tokens::known`).
        known::uncaptured(|| self.prepare_counted(index, chunk, renderer, cap))
    }

    fn prepare_counted(
        &self,
        index: usize,
        chunk: &MemoryChunk,
        renderer: &dyn ChunkRenderer,
        cap: Option<usize>,
    ) -> Result<PreparedChunk> {
        let chunk = &*self.resolved(chunk);
        let role = renderer.role(chunk);
        let part = self.render(chunk, renderer);
        let (part, decision) = match cap.map(|asked| (asked, asked.max(MIN_CAP))) {
            Some((asked, cap)) if part.alone() > cap => {
                let cut = self.cut_to_cap(chunk, renderer, &part, cap);
                let cut = cut.map_err(|minimum| ErrorKind::CapTooSmall {
                    location: ChunkLocation {
                        index,
                        id: Some(chunk.id.clone()),
                    },
                    asked,
                    cap,
                    minimum,
                })?;
                let decision = Decision::Truncated {
                    tokens_before: part.alone(),
                    tokens_after: cut.alone(),
                    cap,
                };
                (cut, decision)
            }
            _ => (part, Decision::Kept),
        };
        Ok(PreparedChunk {
            role,
            part: Arc::new(part),
            decision,
        })
    }

    /// `chunk` rendered with its body cut so that the whole rendered chunk
    /// (tag, attributes, head, marker, tail) costs at most `cap`; `Err` with
    /// the smallest workable cap when even the marker alone does not fit.
    fn cut_to_cap(
        &self,
        chunk: &MemoryChunk,
        renderer: &dyn ChunkRenderer,
        rendered: &CountedText,
        cap: usize,
    ) -> std::result::Result<CountedText, usize> {
        let tokens = rendered.alone();
        let Some(body) = body_text(chunk) else {
            return Err(tokens);
        };
        let mut shortened = chunk.without_body();
        let mut render_with = |text: String| {
            shortened.text = Some(text);
            self.render(&shortened, renderer)
        };
        let body_tokens = self.body_tokens(rendered, &body);
        let smallest = render_with(marker_only(body_tokens));
        if smallest.alone() > cap {
            return Err(smallest.alone());
        }
        // Start from the cap minus what the tag and attributes cost, and
        // shrink by the overshoot: escaping and the joins around the body
        // can cost a few tokens more than the body alone.
        let mut body_cap = cap.saturating_sub(tokens.saturating_sub(body_tokens));
        while body_cap > 0 {
            let cut = cut_body(self.counter, &body, body_tokens, body_cap);
            let rendered = render_with(cut.text);
            if rendered.alone() <= cap {
                return Ok(rendered);
            }
            body_cap = body_cap.saturating_sub((rendered.alone() - cap).max(1));
        }
        // A body cut to nothing is the marker alone, which fits.
        Ok(smallest)
    }

    /// Tokens of `body`, the body of the chunk `rendered`: a long body that
    /// the rendering holds as it is, between cuts, is not counted again.
    fn body_tokens(&self, rendered: &CountedText, body: &str) -> usize {
        const RECOUNT_BELOW_BYTES: usize = 1 << 16;
        let within = || count_within(rendered, body, self.counter);
        let known = (body.len() >= RECOUNT_BELOW_BYTES).then(within).flatten();
        known.unwrap_or_else(|| self.counter.count(body))
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
        self.stub_always(chunk, renderer, part)
            .filter(|stub| stub.alone() < part.alone())
    }

    /// The stub of a rendered chunk whatever its size, when its renderer
    /// has one: an edit that clears a chunk stubs it even when the stub
    /// saves little.
    pub(crate) fn stub_always(
        &self,
        chunk: &MemoryChunk,
        renderer: &dyn ChunkRenderer,
        part: &CountedText,
    ) -> Option<Arc<CountedText>> {
        let chunk = &*self.resolved(chunk);
        let mut text = String::new();
        if !renderer.render_stub(chunk, part.alone(), &self.ctx, &mut text) {
            return None;
        }
        Some(Arc::new(CountedText::new(text, self.counter)))
    }

    /// `chunk` as the renderers see it: its `content` written as its text,
    /// so it is escaped, counted, cut and stubbed like any body.
    fn resolved<'c>(&self, chunk: &'c MemoryChunk) -> Cow<'c, MemoryChunk> {
        let Some(blocks) = &chunk.content else {
            return Cow::Borrowed(chunk);
        };
        let mut written = chunk.clone();
        written.text = Some(render_text(blocks, self.content));
        written.content = None;
        Cow::Owned(written)
    }

    fn render(&self, chunk: &MemoryChunk, renderer: &dyn ChunkRenderer) -> CountedText {
        CountedText::new(self.write(chunk, renderer), self.counter)
    }

    /// `chunk` rendered whole, not counted.
    pub(crate) fn render_text(&self, chunk: &MemoryChunk, renderer: &dyn ChunkRenderer) -> String {
        self.write(&self.resolved(chunk), renderer)
    }

    fn write(&self, chunk: &MemoryChunk, renderer: &dyn ChunkRenderer) -> String {
        let mut text = String::with_capacity(body_len(chunk) + RENDER_SLACK);
        renderer.render(chunk, &self.ctx, &mut text);
        // A session keeps every rendered chunk: hold no spare capacity.
        text.shrink_to_fit();
        text
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

/// The cap `policy` sets on `chunk` rendered by `renderer` (the default
/// one when `by_default`), as [`Preparer::cap_for`] describes it.
pub(crate) fn cap_on(
    policy: &Policy,
    chunk: &MemoryChunk,
    renderer: &dyn ChunkRenderer,
    by_default: bool,
) -> Option<usize> {
    let exempt = protects_itself(chunk);
    let caps = &policy.caps;
    if exempt {
        None
    } else if by_default {
        caps.cap_for(chunk, default_tag(chunk))
    } else {
        caps.explicit_cap_for(chunk, || renderer.tags())
    }
}
