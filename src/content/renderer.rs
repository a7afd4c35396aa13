//! The renderer trait and the dispatch every renderer shares: blocks to
//! text, subtrees handed to their own renderer, media kept native.

use super::block::{Block, ContentFormat, Node};
use super::markdown::MarkdownRenderer;
use super::xml_renderer::XmlRenderer;

/// Renders content blocks and semantic trees as text.
///
/// Object safe: a custom renderer (say, plain text for a model that reads
/// no markup) is a `Box<dyn ContentRenderer>` or `Arc<dyn ContentRenderer>`
/// handed to [`render_text`] or to the builder. Write into the caller's
/// `String`; never allocate a result of your own.
pub trait ContentRenderer: Send + Sync {
    /// Writes `block` as text. Media blocks and tool calls are written as
    /// text too (a link, an image tag, the call's arguments):
    /// [`render_blocks`] keeps them native before asking.
    fn write_block(&self, block: &Block, out: &mut String);

    /// Writes the tree under `node`. A child that names a renderer of its
    /// own (`node.renderer`) is written by
    /// [`ContentFormat::renderer`]'s, as the built-in renderers do.
    fn write_node(&self, node: &Node, out: &mut String);
}

/// What a block becomes: text, or the block itself where the prompt can
/// carry it natively (media, tool calls).
#[derive(Debug, Clone, PartialEq)]
pub enum Rendered {
    /// The block as text.
    Text(String),
    /// A media block or a tool call, passed through.
    Native(Box<Block>),
}

/// Each block rendered by `renderer`; media blocks and tool calls stay
/// native, as the reference passes them through.
pub fn render_blocks(blocks: &[Block], renderer: &dyn ContentRenderer) -> Vec<Rendered> {
    blocks
        .iter()
        .map(|block| match block {
            Block::Image(_) | Block::Audio(_) | Block::Video(_) | Block::ToolUse { .. } => {
                Rendered::Native(Box::new(block.clone()))
            }
            _ => {
                let mut text = String::new();
                renderer.write_block(block, &mut text);
                Rendered::Text(text)
            }
        })
        .collect()
}

/// All blocks as one text, media included, each block's text joined to
/// the next by a blank line: what a text-only prompt holds.
pub fn render_text(blocks: &[Block], renderer: &dyn ContentRenderer) -> String {
    let mut out = String::new();
    write_text(blocks, renderer, &mut out);
    out
}

/// [`render_text`] into `out`.
pub(crate) fn write_text(blocks: &[Block], renderer: &dyn ContentRenderer, out: &mut String) {
    for (index, block) in blocks.iter().enumerate() {
        if index > 0 {
            out.push_str(BLOCK_SEPARATOR);
        }
        renderer.write_block(block, out);
    }
}

/// What joins the text of two blocks.
pub(crate) const BLOCK_SEPARATOR: &str = "\n\n";

static GFM: MarkdownRenderer = MarkdownRenderer::gfm();
static COMMONMARK: MarkdownRenderer = MarkdownRenderer::commonmark();
static XML: XmlRenderer = XmlRenderer;

impl ContentFormat {
    /// The built-in renderer of this format.
    pub fn renderer(self) -> &'static dyn ContentRenderer {
        match self {
            ContentFormat::Gfm => &GFM,
            ContentFormat::Commonmark => &COMMONMARK,
            ContentFormat::Xml => &XML,
        }
    }
}
