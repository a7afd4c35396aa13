//! Turning chunks into tagged text: the [`ChunkRenderer`] trait, the
//! [`RendererRegistry`] that picks a renderer per chunk, and escaping.
//!
//! The default renderers follow the tag table in docs/rendering.md. A custom renderer
//! registered with [`RendererRegistry::register`] is asked before the defaults,
//! the latest registered first.

mod chunks;
mod escape;
mod native_records;
mod own_tag;
mod protocol;

use std::fmt;
use std::sync::Arc;

pub use chunks::{DefaultRenderer, default_tag};
pub use escape::EscapeMode;
pub use protocol::Protocol;

pub(crate) use native_records::{Record, history_note};

pub(crate) use chunks::{ELIDED_TAG, HISTORY_START_TAG, SUMMARY_TAG, body_text};
pub(crate) use escape::TagSet;

use native_records::{NativeRenderer, TextRecords};
use own_tag::OwnTagGuard;

use crate::model::memory::MemoryChunk;

use crate::model::roles::Role;

/// Renders chunks it accepts into tagged text.
///
/// Object safe; renderers write into the caller's buffer so a build reuses one
/// allocation per chunk. Use [`RenderContext::write_element`] to get escaping right.
pub trait ChunkRenderer: Send + Sync {
    /// Whether this renderer handles `chunk`.
    fn can_render(&self, chunk: &MemoryChunk) -> bool;

    /// The message role the rendered chunk belongs to.
    fn role(&self, chunk: &MemoryChunk) -> Role;

    /// Appends the rendered chunk to `out`.
    fn render(&self, chunk: &MemoryChunk, ctx: &RenderContext<'_>, out: &mut String);

    /// Appends a stub of `chunk` that keeps its tag, id and attributes and
    /// states how many tokens its body had, e.g.
    /// `<tool_result id="c5" call_id="k1" elided="1234 tokens"/>`. Returns
    /// `false`, writing nothing, when this renderer has no stub form (the
    /// default): such chunks are dropped rather than stubbed.
    fn render_stub(
        &self,
        _chunk: &MemoryChunk,
        _elided_tokens: usize,
        _ctx: &RenderContext<'_>,
        _out: &mut String,
    ) -> bool {
        false
    }

    /// The tag names this renderer may emit. Structural escaping protects
    /// them in every body of a build: no body can open or close one of these
    /// tags.
    ///
    /// Optional: a body can never close the element it is written in, declared
    /// or not. The registry reads the outer tag of what a custom renderer
    /// writes for a chunk and, when that tag is not protected yet, renders the
    /// chunk again with it protected (so an undeclared renderer renders each
    /// chunk twice). Declaring the tags also stops other chunks' bodies from
    /// forging this renderer's elements inside theirs.
    fn tags(&self) -> Vec<String> {
        Vec::new()
    }

    /// Whether what this renderer writes for a chunk (role, text, stub)
    /// depends on that chunk and the [`RenderContext`] alone: `true`, the
    /// default, is a promise that lets a [session](crate::ContextSession)
    /// keep each chunk rendered from turn to turn and extend its last
    /// build, as it does with the default renderers.
    ///
    /// Return `false` when the output may change from one build to the
    /// next for the same chunk (it reads a clock, or settings the caller
    /// changes between turns): a session then renders the chunks this
    /// renderer draws again every build and runs the full pipeline, so
    /// each build still equals a cold [`ContextBuilder::build`]. Within
    /// one build the output must not change either way: a build may
    /// render a chunk twice and counts on getting the same text.
    ///
    /// [`ContextBuilder::build`]: crate::ContextBuilder::build
    fn deterministic(&self) -> bool {
        true
    }
}

/// What a renderer needs to write escaped output.
#[derive(Debug, Clone, Copy)]
pub struct RenderContext<'a> {
    mode: EscapeMode,
    tags: &'a TagSet,
}

impl<'a> RenderContext<'a> {
    pub(crate) fn new(mode: EscapeMode, tags: &'a TagSet) -> Self {
        RenderContext { mode, tags }
    }

    /// The escape mode of this build.
    pub fn escape_mode(&self) -> EscapeMode {
        self.mode
    }

    /// Appends body text, escaped for this build's mode.
    pub fn write_body(&self, out: &mut String, body: &str) {
        escape::write_body(out, body, self.mode, self.tags);
    }

    /// Appends an attribute value (no quotes), escaped for this build's mode.
    pub fn write_attribute(&self, out: &mut String, value: &str) {
        escape::write_attribute(out, value, self.mode);
    }

    /// Appends `<tag a="v"…>\nBODY\n</tag>`, or `<tag a="v"…/>` when `body`
    /// is empty or absent. Attributes whose value is `None` are omitted.
    pub fn write_element(
        &self,
        out: &mut String,
        tag: &str,
        attributes: &[(&str, Option<&str>)],
        body: Option<&str>,
    ) {
        self.write_open_tag(out, tag, attributes);
        match body {
            Some(body) if !body.is_empty() => {
                out.push_str(">\n");
                self.write_body(out, body);
                out.push_str("\n</");
                out.push_str(tag);
                out.push('>');
            }
            _ => out.push_str("/>"),
        }
    }

    /// Appends `<tag a="v"…` (unterminated), for elements with extra attributes.
    pub fn write_open_tag(&self, out: &mut String, tag: &str, attributes: &[(&str, Option<&str>)]) {
        out.push('<');
        out.push_str(tag);
        for (name, value) in attributes {
            if let Some(value) = value {
                out.push(' ');
                out.push_str(name);
                out.push_str("=\"");
                self.write_attribute(out, value);
                out.push('"');
            }
        }
    }
}

/// A renderer made of closures; see [`RendererRegistry::register_fn`].
pub(crate) struct FnRenderer<C, R> {
    tags: Vec<String>,
    role: Role,
    can_render: C,
    render: R,
}

impl<C, R> ChunkRenderer for FnRenderer<C, R>
where
    C: Fn(&MemoryChunk) -> bool + Send + Sync,
    R: Fn(&MemoryChunk, &RenderContext<'_>, &mut String) + Send + Sync,
{
    fn can_render(&self, chunk: &MemoryChunk) -> bool {
        (self.can_render)(chunk)
    }

    fn role(&self, _chunk: &MemoryChunk) -> Role {
        self.role
    }

    fn render(&self, chunk: &MemoryChunk, ctx: &RenderContext<'_>, out: &mut String) {
        (self.render)(chunk, ctx, out)
    }

    fn tags(&self) -> Vec<String> {
        self.tags.clone()
    }
}

/// The renderers of a build: custom ones first (latest registered first), then
/// the defaults, which accept every chunk. In the [native](Protocol::Native)
/// protocol the defaults send tool calls and results as the provider's own
/// structures, and what a custom renderer writes is sent as text.
#[derive(Clone)]
pub struct RendererRegistry {
    custom: Vec<Arc<dyn ChunkRenderer>>,
    /// `custom`, each wrapped to write text records (native protocol only).
    custom_native: Vec<Arc<dyn ChunkRenderer>>,
    protocol: Protocol,
    tags: TagSet,
}

impl Default for RendererRegistry {
    fn default() -> Self {
        RendererRegistry::new()
    }
}

impl fmt::Debug for RendererRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RendererRegistry")
            .field("custom_renderers", &self.custom.len())
            .field("protocol", &self.protocol)
            .field("tags", &self.tags)
            .finish()
    }
}

impl RendererRegistry {
    /// The default renderers only.
    pub fn new() -> Self {
        let mut tags = TagSet::default();
        for tag in DefaultRenderer.tags() {
            tags.insert(&tag);
        }
        RendererRegistry {
            custom: Vec::new(),
            custom_native: Vec::new(),
            protocol: Protocol::Text,
            tags,
        }
    }

    /// Renders for `protocol` (default [`Protocol::Text`]).
    pub fn set_protocol(&mut self, protocol: Protocol) -> &mut Self {
        self.protocol = protocol;
        self.custom_native = match protocol {
            Protocol::Text => Vec::new(),
            Protocol::Native => self
                .custom
                .iter()
                .map(|r| Arc::new(TextRecords(Arc::clone(r))) as Arc<dyn ChunkRenderer>)
                .collect(),
        };
        self
    }

    /// The protocol chunks render for.
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// Puts `renderer` ahead of every renderer registered so far. The tags it
    /// declares are protected in every body; the outer tag it writes a chunk
    /// in is protected in that chunk's body even when undeclared (see
    /// [`ChunkRenderer::tags`]).
    pub fn register(&mut self, renderer: Arc<dyn ChunkRenderer>) -> &mut Self {
        for tag in renderer.tags() {
            self.tags.insert(&tag);
        }
        self.custom.insert(0, Arc::new(OwnTagGuard(renderer)));
        self.set_protocol(self.protocol)
    }

    /// Registers closures as a renderer whose chunks all take `role` and which
    /// may emit `tags`. The renderer is [deterministic](ChunkRenderer::deterministic):
    /// `render` must write from the chunk and context alone; a renderer
    /// that reads other state implements [`ChunkRenderer`] and says so.
    pub fn register_fn<C, R>(
        &mut self,
        tags: &[&str],
        role: Role,
        can_render: C,
        render: R,
    ) -> &mut Self
    where
        C: Fn(&MemoryChunk) -> bool + Send + Sync + 'static,
        R: Fn(&MemoryChunk, &RenderContext<'_>, &mut String) + Send + Sync + 'static,
    {
        let tags = tags.iter().map(|t| (*t).to_owned()).collect();
        self.register(Arc::new(FnRenderer {
            tags,
            role,
            can_render,
            render,
        }))
    }

    /// Declares a tag that bodies must not forge even though no renderer
    /// advertises it (e.g. one the caller adds around the prompt).
    pub fn protect_tag(&mut self, tag: &str) -> &mut Self {
        self.tags.insert(tag);
        self
    }

    /// The context renderers write with, for `mode` and this registry's tags
    /// (to call renderers directly, e.g. in a custom renderer's tests).
    pub fn context(&self, mode: EscapeMode) -> RenderContext<'_> {
        RenderContext::new(mode, &self.tags)
    }

    /// The tags the custom renderers declare, in registration order.
    pub(crate) fn custom_tags(&self) -> Vec<String> {
        self.custom.iter().rev().flat_map(|r| r.tags()).collect()
    }

    /// Whether no custom renderer is registered.
    pub(crate) fn only_default(&self) -> bool {
        self.custom.is_empty()
    }

    /// Whether every renderer writes a chunk the same way in every build
    /// (see [`ChunkRenderer::deterministic`]).
    pub(crate) fn all_deterministic(&self) -> bool {
        self.custom.iter().all(|r| r.deterministic())
    }

    /// Whether `chunk` falls to the default renderer (no custom one claims it).
    pub fn renders_by_default(&self, chunk: &MemoryChunk) -> bool {
        !self.custom.iter().any(|r| r.can_render(chunk))
    }

    /// The renderer that handles `chunk` (a custom one guarded so that its
    /// outer tag is protected in its bodies).
    pub fn renderer_for(&self, chunk: &MemoryChunk) -> &dyn ChunkRenderer {
        let (custom, default): (_, &dyn ChunkRenderer) = match self.protocol {
            Protocol::Text => (&self.custom, &DefaultRenderer),
            Protocol::Native => (&self.custom_native, &NativeRenderer),
        };
        custom
            .iter()
            .find(|r| r.can_render(chunk))
            .map(|r| r.as_ref())
            .unwrap_or(default)
    }

    pub(crate) fn tag_set(&self) -> &TagSet {
        &self.tags
    }
}
