//! Markdown: GitHub Flavored or CommonMark.

use super::block::{Block, Node};
use super::render::ContentRenderer;

/// Which Markdown a [`MarkdownRenderer`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Flavor {
    /// GitHub Flavored Markdown.
    Gfm,
    /// CommonMark without extensions.
    CommonMark,
}

/// Writes content as Markdown.
#[derive(Debug, Clone, Copy)]
pub struct MarkdownRenderer {
    flavor: Flavor,
}

impl MarkdownRenderer {
    /// GitHub Flavored Markdown.
    pub const fn gfm() -> Self {
        MarkdownRenderer { flavor: Flavor::Gfm }
    }

    /// CommonMark.
    pub const fn commonmark() -> Self {
        MarkdownRenderer {
            flavor: Flavor::CommonMark,
        }
    }

    /// The flavour it writes.
    pub fn flavor(&self) -> Flavor {
        self.flavor
    }
}

impl ContentRenderer for MarkdownRenderer {
    fn write_block(&self, _block: &Block, _out: &mut String) {}

    fn write_node(&self, _node: &Node, _out: &mut String) {}
}
