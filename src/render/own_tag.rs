//! A custom renderer's own tag is protected in its bodies, declared or not.
//!
//! Structural escaping must know a tag before the body inside it is written,
//! and a renderer may forget to list its tags in [`ChunkRenderer::tags`]. So
//! the registry wraps every custom renderer: it renders the chunk, reads the
//! outer tag from what was written, and when structural escaping did not
//! protect that tag, renders the chunk again with it protected. A renderer
//! that declares its tags never renders twice.

use std::sync::Arc;

use crate::model::memory::MemoryChunk;

use crate::model::roles::Role;
use crate::render::escape::continues_name;
use crate::render::{ChunkRenderer, EscapeMode, RenderContext, TagSet};

/// A custom renderer as the registry holds it.
pub(super) struct OwnTagGuard(pub(super) Arc<dyn ChunkRenderer>);

impl ChunkRenderer for OwnTagGuard {
    fn can_render(&self, chunk: &MemoryChunk) -> bool {
        self.0.can_render(chunk)
    }

    fn role(&self, chunk: &MemoryChunk) -> Role {
        self.0.role(chunk)
    }

    fn render(&self, chunk: &MemoryChunk, ctx: &RenderContext<'_>, out: &mut String) {
        let start = out.len();
        self.0.render(chunk, ctx, out);
        if let Some(wider) = with_outer_tag(ctx, &out[start..]) {
            out.truncate(start);
            self.0
                .render(chunk, &RenderContext::new(ctx.mode, &wider), out);
        }
    }

    fn render_stub(
        &self,
        chunk: &MemoryChunk,
        elided_tokens: usize,
        ctx: &RenderContext<'_>,
        out: &mut String,
    ) -> bool {
        let start = out.len();
        if !self.0.render_stub(chunk, elided_tokens, ctx, out) {
            return false;
        }
        match with_outer_tag(ctx, &out[start..]) {
            Some(wider) => {
                out.truncate(start);
                let ctx = RenderContext::new(ctx.mode, &wider);
                self.0.render_stub(chunk, elided_tokens, &ctx, out)
            }
            None => true,
        }
    }

    fn tags(&self) -> Vec<String> {
        self.0.tags()
    }

    fn deterministic(&self) -> bool {
        self.0.deterministic()
    }
}

/// `ctx`'s tags plus the outer tag of `written`, when structural escaping
/// applies and does not protect that tag yet.
fn with_outer_tag(ctx: &RenderContext<'_>, written: &str) -> Option<TagSet> {
    if ctx.mode != EscapeMode::Structural {
        return None;
    }
    let tag = outer_tag(written)?;
    if ctx.tags.contains(tag) {
        return None;
    }
    let mut wider = ctx.tags.clone();
    wider.insert(tag);
    Some(wider)
}

/// The name of the element `written` opens with (`memory_note` in
/// `<memory_note id="n1">…`), if it opens with one.
fn outer_tag(written: &str) -> Option<&str> {
    let rest = written.trim_start().strip_prefix('<')?;
    let end = rest.find(|c| !continues_name(c)).unwrap_or(rest.len());
    let name = &rest[..end];
    name.starts_with(|c: char| c.is_alphabetic() || c == '_')
        .then_some(name)
}

#[cfg(test)]
mod tests {
    use super::outer_tag;

    #[test]
    fn the_outer_tag_is_the_first_element_name() {
        assert_eq!(
            outer_tag("<memory_note id=\"n\">\nx\n</memory_note>"),
            Some("memory_note")
        );
        assert_eq!(outer_tag("\n <note/>"), Some("note"));
        assert_eq!(outer_tag("<a:b-c.d>"), Some("a:b-c.d"));
        assert_eq!(outer_tag("plain text <note>"), None);
        assert_eq!(outer_tag("</note>"), None);
        assert_eq!(outer_tag("<!-- note -->"), None);
        assert_eq!(outer_tag(""), None);
    }
}
