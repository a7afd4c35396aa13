//! Semantic content: formatted text as one tree, rendered as GitHub
//! Markdown, CommonMark or XML, valid by construction.
//!
//! A chunk (or a caller) holds content as [`Block`]s in the reference
//! design's JSON shape: text with an optional semantic tree ([`Node`]) or a
//! block-level shape ([`Semantic`]: heading, list, table, …), code, JSON,
//! media, user actions, state changes, tool calls and collapsed references.
//! A [`ContentRenderer`] writes them as text; the three built in
//! ([`ContentFormat`]) escape what they write so that text never turns into
//! markup: a `*` in a leaf is a `*` in the output, read back by a Markdown
//! or XML parser.

mod block;
mod described;
mod markdown;
mod read;
mod renderer;
mod xml_renderer;

pub use block::{
    Alignment, Block, ContentFormat, List, ListItem, Media, Node, RendererAttrs, Semantic,
    SemanticType, Source, Structure, Table,
};
pub use markdown::MarkdownRenderer;
pub use read::blocks_from_value;
pub use renderer::{ContentRenderer, Rendered, render_blocks, render_text};
pub use xml_renderer::XmlRenderer;
