//! Markdown: GitHub Flavored or CommonMark, written so that text never turns
//! into markup.
//!
//! The shapes are the reference renderer's (`**strong**`, `*em*`, `` `code` ``,
//! `[text](href)`, padded tables, `- [x]` tasks, fenced code, `<collapsed>`),
//! but text is escaped, as little as keeps it text: a backslash goes before
//! `*` and `` ` ``; `_` unless between two letters; `]` before `(` or `:`
//! (every bracket inside a link's text); `<` that could open a tag or an autolink, `&` that
//! could start an entity, `\` that could escape what follows; `~` and `|` in
//! GFM; and what would open a block at a line's start (`#`, `>`, `-`, `+`,
//! `1.`, a `---` or `===` underline, a fence, a `[ ]` box). Indentation at a
//! line's start is dropped, as Markdown drops it (or reads it as code).
//!
//! Where Markdown cannot say what the tree says, the nearest form that reads
//! back is written:
//! * `mark`, `underline`, `subscript`, `superscript`, `small` and
//!   CommonMark's strikethrough are inline HTML (`<mark>C</mark>`, `<del>`).
//! * Emphasis whose delimiters could not open or close where they stand
//!   (`a**(b)**c`) becomes `<strong>`, `<em>` or `<del>`; emphasis inside the
//!   same emphasis is written once; spaces at its edges move outside.
//! * A code span holds the subtree's plain text, newlines as spaces; two
//!   side by side are parted by a space.
//! * A newline is `<br>` in a GFM cell, a space in a heading, a line break
//!   in list items and spans (a blank line would end them).
//! * A table without headers gets empty header cells, short rows empty
//!   cells. CommonMark has no tables: its table is the GFM text in a fenced
//!   block, cells escaping only `\`, `|` and newlines (`\\`, `\|`, `\n`).
//! * A `line-break` node is a hard break (two spaces, newline); a
//!   `horizontal-rule` node `---` between blank lines (a break inline).

mod buf;
mod ctx;
mod emphasis;
mod literal;
mod structure;

use serde_json::Value;

use super::block::{Block, ContentFormat, Node, Semantic, SemanticType as S, Structure};
use super::described::{json_text, state_change_text, tool_input_text};
use super::renderer::ContentRenderer;
use buf::{Buf, Newline};
use ctx::Ctx;
use emphasis::Emph;
use literal::{destination, push_code_span, push_fence, push_xml, xml_entity};

/// Which Markdown a [`MarkdownRenderer`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum Flavor {
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
        MarkdownRenderer {
            flavor: Flavor::Gfm,
        }
    }

    /// CommonMark.
    pub const fn commonmark() -> Self {
        MarkdownRenderer {
            flavor: Flavor::CommonMark,
        }
    }
}

impl ContentRenderer for MarkdownRenderer {
    fn write_block(&self, block: &Block, out: &mut String) {
        let mut buf = Buf::new(false);
        self.block(block, &mut buf);
        buf.trim_end();
        out.push_str(&buf.finish(None, None));
    }

    /// At a line's start the tree may open blocks; after text, it is inline.
    fn write_node(&self, node: &Node, out: &mut String) {
        let line_start = out.is_empty() || out.ends_with('\n');
        let mut buf = Buf::new(!line_start);
        let newline = if line_start {
            Newline::Paragraph
        } else {
            Newline::Line
        };
        self.node(node, Ctx::new(newline), &mut buf);
        let before = out.chars().next_back();
        out.push_str(&buf.finish(before, None));
    }
}

impl MarkdownRenderer {
    fn block(&self, block: &Block, buf: &mut Buf) {
        match block {
            Block::Text {
                text,
                semantic_node: node,
                semantic,
            } if !semantic.as_ref().is_some_and(Semantic::is_collapsed) => {
                self.text_block(text, node.as_ref(), semantic.as_ref(), buf);
            }
            Block::Text { .. } | Block::Collapsed { .. } => self.collapsed(block, buf),
            Block::Code { language, text } => push_fence(buf, language.as_deref(), text),
            Block::Json { data, text } => {
                push_fence(
                    buf,
                    Some("json"),
                    &json_text(data.as_ref(), text.as_deref()),
                );
            }
            Block::Image(media) => self.image(
                buf,
                media.alt_text.as_deref().unwrap_or(""),
                &media.source.href(),
            ),
            Block::Audio(media) => self.marker(buf, "Audio", &media.source.href()),
            Block::Video(media) => self.marker(buf, "Video", &media.source.href()),
            Block::UserAction {
                action,
                actor,
                target,
                text,
            } => {
                let text =
                    describe_action(action, actor.as_deref(), target.as_deref(), text.as_deref());
                self.push_text(buf, &text, Ctx::new(Newline::Paragraph));
            }
            Block::StateChange {
                entity,
                field,
                from,
                to,
                text,
                ..
            } => {
                let words = state_change_text(
                    entity.as_deref(),
                    field.as_deref(),
                    from.as_ref(),
                    to.as_ref(),
                    text.as_deref(),
                );
                self.push_text(buf, &words, Ctx::new(Newline::Paragraph));
            }
            Block::ToolUse {
                tool_use_id,
                name,
                input,
            } => {
                let words = format!("Tool use: {name} (id {tool_use_id})");
                self.push_text(buf, &words, Ctx::new(Newline::Paragraph));
                push_fence(buf, Some("json"), &tool_input_text(input));
            }
        }
    }

    /// A text block: preformatted, a list or a table, a tree in a block
    /// shape, legacy `semantic` text, or plain text.
    fn text_block(
        &self,
        text: &str,
        node: Option<&Node>,
        semantic: Option<&Semantic>,
        buf: &mut Buf,
    ) {
        let kind = semantic.map(|s| s.kind);
        let block = Ctx::new(Newline::Paragraph);
        if kind == Some(S::Preformatted) || semantic.and_then(|s| s.preformatted) == Some(true) {
            return push_fence(buf, None, &node.map_or_else(|| text.to_owned(), plain_text));
        }
        match (semantic.and_then(|s| s.structure.as_ref()), kind) {
            (Some(Structure::Table(table)), Some(S::Table)) => return self.table(table, buf),
            (Some(Structure::List(list)), Some(S::List)) => return self.list(list, 0, buf),
            _ => {}
        }
        match (node, semantic) {
            (Some(node), Some(s)) if s.kind == S::Heading => {
                let level = s.level.unwrap_or(1);
                self.heading(level, buf, |b| {
                    self.child(node, Ctx::new(Newline::Space), b)
                });
            }
            (Some(node), Some(s)) if s.kind == S::Blockquote => {
                self.blockquote(buf, |b| self.child(node, block, b))
            }
            (Some(node), _) => self.child(node, block, buf),
            (None, Some(semantic)) => self.legacy(semantic, text, buf),
            (None, None) => self.push_text(buf, text, block),
        }
    }

    /// The reference's legacy form: the text under its `semantic`, as a
    /// one-leaf tree (a heading is level 2 by default here).
    fn legacy(&self, semantic: &Semantic, text: &str, buf: &mut Buf) {
        match semantic.kind {
            S::LineBreak | S::HorizontalRule => {
                let rule = semantic.kind == S::HorizontalRule;
                buf.text.push_str(if rule { "\n---\n" } else { "\n" });
                buf.floor = buf.text.len();
            }
            S::Heading => {
                let ctx = Ctx::new(Newline::Space);
                self.heading(semantic.level.unwrap_or(2), buf, |b| {
                    self.push_text(b, text, ctx)
                });
            }
            // No legacy rule in the reference: the text as it is.
            S::Image | S::Audio | S::Video | S::Custom | S::ListItem | S::List | S::Table => {
                self.push_text(buf, text, Ctx::new(Newline::Paragraph))
            }
            kind => {
                let mut node = Node::text(text);
                node.semantic = Some(kind);
                if let Some(href) = &semantic.href {
                    node.props
                        .insert("href".to_owned(), Value::from(href.as_str()));
                }
                self.node(&node, Ctx::new(Newline::Paragraph), buf);
            }
        }
    }

    /// A subtree, by its own renderer when it names another one.
    ///
    /// A subtree in another Markdown flavour is written in this one: the
    /// document has one reader, and a flavour changes only what that
    /// reader must be told (`~~` or `<del>`), not what the tree says.
    fn child(&self, node: &Node, ctx: Ctx, buf: &mut Buf) {
        match node.renderer {
            Some(ContentFormat::Xml) => {
                let mut xml = String::new();
                ContentFormat::Xml.renderer().write_node(node, &mut xml);
                let line_start = buf.line_digits().is_some();
                push_xml(&mut buf.text, &xml, line_start);
            }
            _ => self.node(node, ctx, buf),
        }
    }

    fn node(&self, node: &Node, ctx: Ctx, buf: &mut Buf) {
        let Some(kind) = node.semantic else {
            return self.content(node, ctx, buf);
        };
        let src = node.prop("src").unwrap_or_default();
        match kind {
            S::Strong => self.emphasis(node, ctx, Emph::Strong, buf),
            S::Em | S::Citation | S::Variable => self.emphasis(node, ctx, Emph::Em, buf),
            S::Strikethrough => self.emphasis(node, ctx, Emph::Strike, buf),
            S::Mark | S::Underline | S::Subscript | S::Superscript | S::Small => {
                let tag = match kind {
                    S::Mark => "mark",
                    S::Underline => "u",
                    S::Subscript => "sub",
                    S::Superscript => "sup",
                    _ => "small",
                };
                self.tagged(node, ctx, tag, buf);
            }
            S::Preformatted if ctx.block() => push_fence(buf, None, &plain_text(node)),
            S::Code | S::Keyboard | S::Preformatted => push_code_span(buf, &plain_text(node)),
            S::Link => self.link(node, ctx, buf),
            S::Image => self.image(buf, node.prop("alt").unwrap_or_default(), src),
            S::Audio => self.marker(buf, "Audio", src),
            S::Video => self.marker(buf, "Video", src),
            S::Quote => {
                buf.text.push('"');
                self.content(node, ctx.inline(), buf);
                buf.text.push('"');
            }
            S::Heading if ctx.block() => {
                let level = node.props.get("level").and_then(Value::as_u64).unwrap_or(1);
                let ctx = ctx.with_newline(Newline::Space);
                self.heading(level.min(6) as u8, buf, |b| self.content(node, ctx, b));
            }
            S::Blockquote if ctx.block() => self.blockquote(buf, |b| self.content(node, ctx, b)),
            S::Paragraph | S::HorizontalRule if ctx.block() => {
                buf.block_break();
                match kind {
                    S::Paragraph => self.content(node, ctx, buf),
                    _ => buf.text.push_str("---"),
                }
                buf.block_break();
            }
            S::LineBreak | S::HorizontalRule => buf.hard_break(ctx.newline),
            _ => self.content(node, ctx, buf),
        }
    }

    /// The children in order (the text when there are none), kept from
    /// joining their neighbours ([`Buf::guarded`]).
    fn content(&self, node: &Node, ctx: Ctx, buf: &mut Buf) {
        if node.children.is_empty() {
            return self.push_text(buf, node.text.as_deref().unwrap_or_default(), ctx);
        }
        for child in &node.children {
            buf.guarded(|buf| self.child(child, ctx, buf));
        }
    }

    fn emphasis(&self, node: &Node, ctx: Ctx, emph: Emph, buf: &mut Buf) {
        let bit = 1 << emph as u8;
        if ctx.styles & bit != 0 {
            return self.content(node, ctx, buf);
        }
        let mut inner = Buf::new(true);
        self.content(node, ctx.styled(bit), &mut inner);
        match (emph, self.flavor) {
            (Emph::Strike, Flavor::CommonMark) => buf.wrap(inner, "<del>", "</del>", None),
            _ => buf.wrap(inner, emph.marks().0, emph.marks().0, Some(emph)),
        }
    }

    fn tagged(&self, node: &Node, ctx: Ctx, tag: &str, buf: &mut Buf) {
        let mut inner = Buf::new(true);
        self.content(node, ctx.inline(), &mut inner);
        buf.wrap(inner, &format!("<{tag}>"), &format!("</{tag}>"), None);
    }

    /// `[text](href)`, or the text alone without `href` or inside another
    /// link's text (links do not nest).
    fn link(&self, node: &Node, ctx: Ctx, buf: &mut Buf) {
        let href = node.prop("href").unwrap_or_default();
        if href.is_empty() || ctx.label {
            return self.content(node, ctx, buf);
        }
        let mut label = Buf::new(true);
        self.content(node, ctx.labelled(), &mut label);
        let label = label.finish(Some('['), Some(']'));
        buf.text
            .push_str(&format!("[{label}]({})", destination(href)));
    }

    fn image(&self, buf: &mut Buf, alt: &str, src: &str) {
        buf.text
            .push_str(&format!("![{}]({})", self.label(alt), destination(src)));
    }

    /// `[Audio: src]`, as the reference writes sound and video in text.
    fn marker(&self, buf: &mut Buf, name: &str, src: &str) {
        buf.text.push_str(&format!("[{name}: {}]", self.label(src)));
    }

    fn heading(&self, level: u8, buf: &mut Buf, write: impl FnOnce(&mut Buf)) {
        let mut body = Buf::new(true);
        write(&mut body);
        body.trim_end();
        let mut text = body.finish(Some(' '), None);
        // A run of `#` after a space would close the heading: it is text.
        let kept = text.trim_end_matches('#').len();
        if kept < text.len() && (kept == 0 || text[..kept].ends_with([' ', '\t'])) {
            text.insert(kept, '\\');
        }
        buf.block_break();
        buf.text.push_str(&"#".repeat(level.clamp(1, 6).into()));
        let text = text.trim_start_matches([' ', '\t']);
        if !text.is_empty() {
            buf.text.push(' ');
            buf.text.push_str(text);
        }
        buf.block_break();
    }

    fn blockquote(&self, buf: &mut Buf, write: impl FnOnce(&mut Buf)) {
        let mut body = Buf::new(false);
        write(&mut body);
        body.trim_end();
        buf.block_break();
        for (index, line) in body.finish(None, None).split('\n').enumerate() {
            let newline = if index > 0 { "\n" } else { "" };
            let mark = if line.is_empty() { ">" } else { "> " };
            buf.text.push_str(&format!("{newline}{mark}{line}"));
        }
        buf.block_break();
    }

    /// `<collapsed name="…" group="…">` around the child blocks forced to
    /// text, joined by blank lines, or around its text, XML-escaped, as the
    /// reference.
    fn collapsed(&self, block: &Block, buf: &mut Buf) {
        let Some(collapsed) = block.as_collapsed() else {
            return;
        };
        buf.text.push_str("<collapsed");
        push_attribute(&mut buf.text, "name", collapsed.name);
        if let Some(group) = collapsed.group.filter(|g| !g.is_empty()) {
            push_attribute(&mut buf.text, "group", group);
        }
        buf.text.push('>');
        let children = collapsed.child_blocks;
        if children.is_empty() {
            // Right after the tag: a tag alone on its line opens HTML.
            let mut ctx = Ctx::new(Newline::Line);
            ctx.xml = true;
            let text = collapsed.text.trim_start();
            buf.text.push_str(&self.inline_text(text, ctx));
            return buf.text.push_str("</collapsed>");
        }
        // Child blocks stand between blank lines, as Markdown inside HTML
        // must: glued to the tags, a fence would never close (the
        // reference writes "```</collapsed>", which swallows the rest).
        for child in children {
            buf.text.push_str("\n\n");
            let mut body = Buf::new(false);
            self.block(child, &mut body);
            body.trim_end();
            buf.text.push_str(&body.finish(None, None));
        }
        buf.text.push_str("\n\n</collapsed>");
    }
}

/// ` name="value"`, the value XML-escaped as the reference escapes it.
fn push_attribute(out: &mut String, name: &str, value: &str) {
    out.push(' ');
    out.push_str(name);
    out.push_str("=\"");
    for c in value.chars() {
        match (c, xml_entity(c)) {
            (_, Some(entity)) => out.push_str(entity),
            ('\n', None) => out.push_str("&#10;"),
            ('\r', None) => out.push_str("&#13;"),
            (c, None) => out.push(c),
        }
    }
    out.push('"');
}

/// The leaves' text, concatenated: what code shows.
fn plain_text(node: &Node) -> String {
    if node.children.is_empty() {
        return node.text.clone().unwrap_or_default();
    }
    node.children.iter().map(plain_text).collect()
}

/// A user action in words: its text, or `Actor action on target`, the actor
/// `User` when missing or "user".
fn describe_action(
    action: &str,
    actor: Option<&str>,
    target: Option<&str>,
    text: Option<&str>,
) -> String {
    if let Some(text) = text.filter(|t| !t.trim().is_empty()) {
        return text.to_owned();
    }
    let actor = actor
        .filter(|a| !a.eq_ignore_ascii_case("user"))
        .unwrap_or("User");
    let target = target.map(|t| format!("on {t}"));
    let parts = [Some(actor), Some(action), target.as_deref()];
    let parts: Vec<&str> = parts
        .into_iter()
        .flatten()
        .filter(|p| !p.is_empty())
        .collect();
    if parts.is_empty() {
        "User action".to_owned()
    } else {
        parts.join(" ")
    }
}
