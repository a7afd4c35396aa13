//! Markdown: GitHub Flavored or CommonMark, written so that text never turns
//! into markup.
//!
//! The shapes are the reference renderer's (`**strong**`, `*em*`, `` `code` ``,
//! `[text](href)`, padded tables, `- [x]` tasks, fenced code, `<collapsed>`),
//! but text is escaped, as little as keeps it text: a backslash goes before
//! `*` and `` ` ``; `_` unless between two letters; `]` before `(` or `:`
//! (every bracket inside a link's text); `<` that could open a tag, `&` that
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

use std::borrow::Cow;
use std::fmt::Write as _;

use serde_json::Value;

use super::block::{
    Alignment, Block, ContentFormat, List, Node, Semantic, SemanticType as S, Structure, Table,
};
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

    /// The flavour it writes.
    pub fn flavor(&self) -> Flavor {
        self.flavor
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

/// What a newline in text becomes: what the construct around it allows.
#[derive(Clone, Copy, PartialEq)]
enum Newline {
    /// A newline; a blank line ends a paragraph, and blocks may open.
    Paragraph,
    /// A newline, never a blank line.
    Line,
    Space,
    /// `<br>`, in a GFM table cell.
    Br,
}

/// Where content is written and what is open around it.
#[derive(Clone, Copy)]
struct Ctx {
    newline: Newline,
    /// The emphasis open around this point (bits of [`Emph`]).
    styles: u8,
    /// Inside brackets (a link's text, an alt text): brackets are escaped
    /// and no link opens.
    label: bool,
    /// `&`, `<`, `>`, `"`, `'` as XML entities (read back as themselves), as
    /// the reference writes a collapsed block's text.
    xml: bool,
}

impl Ctx {
    fn new(newline: Newline) -> Ctx {
        Ctx {
            newline,
            styles: 0,
            label: false,
            xml: false,
        }
    }

    fn block(self) -> bool {
        self.newline == Newline::Paragraph
    }

    fn inline(self) -> Ctx {
        if self.block() {
            return self.with_newline(Newline::Line);
        }
        self
    }

    fn with_newline(mut self, newline: Newline) -> Ctx {
        self.newline = newline;
        self
    }

    fn styled(mut self, bit: u8) -> Ctx {
        self.styles |= bit;
        self.inline()
    }

    fn labelled(mut self) -> Ctx {
        self.label = true;
        self.inline()
    }
}

/// Emphasis written with delimiters, which must open and close where they
/// stand ([`Buf::finish`]).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Emph {
    Strong,
    Em,
    Strike,
}

impl Emph {
    /// The delimiter, and the tag written instead where it cannot stand.
    fn marks(self) -> (&'static str, &'static str) {
        match self {
            Emph::Strong => ("**", "strong"),
            Emph::Em => ("*", "em"),
            Emph::Strike => ("~~", "del"),
        }
    }
}

impl MarkdownRenderer {
    fn block(&self, block: &Block, buf: &mut Buf) {
        match block {
            Block::Text {
                text,
                semantic_node: node,
                semantic,
            } => self.text_block(text, node.as_ref(), semantic.as_ref(), buf),
            Block::Code { language, text } => push_fence(buf, language.as_deref(), text),
            Block::Json { data, .. } => {
                let pretty =
                    serde_json::to_string_pretty(data).unwrap_or_else(|_| data.to_string());
                push_fence(buf, Some("json"), &pretty);
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
            Block::Collapsed {
                name,
                child_blocks,
                text,
            } => self.collapsed(name, child_blocks, text.as_deref(), buf),
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
    fn child(&self, node: &Node, ctx: Ctx, buf: &mut Buf) {
        let own = match self.flavor {
            Flavor::Gfm => ContentFormat::Gfm,
            Flavor::CommonMark => ContentFormat::Commonmark,
        };
        match node.renderer {
            Some(ContentFormat::Xml) => {
                let mut xml = String::new();
                ContentFormat::Xml.renderer().write_node(node, &mut xml);
                push_xml(&mut buf.text, &xml);
            }
            Some(format) if format != own => format.renderer().write_node(node, &mut buf.text),
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
    /// joining their neighbours ([`Buf::guard`]).
    fn content(&self, node: &Node, ctx: Ctx, buf: &mut Buf) {
        if node.children.is_empty() {
            return self.push_text(buf, node.text.as_deref().unwrap_or_default(), ctx);
        }
        for child in &node.children {
            let start = buf.text.len();
            self.child(child, ctx, buf);
            buf.guard(start);
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

    /// Text escaped on one line, inside brackets.
    fn label(&self, text: &str) -> String {
        self.inline_text(text, Ctx::new(Newline::Space).labelled())
    }

    /// Text escaped after other text on its line.
    fn inline_text(&self, text: &str, ctx: Ctx) -> String {
        let mut buf = Buf::new(true);
        self.push_text(&mut buf, text, ctx);
        buf.text
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

    /// A legacy list, nested lists indented to their item's content column.
    fn list(&self, list: &List, indent: usize, buf: &mut Buf) {
        for (index, item) in list.items.iter().enumerate() {
            let checkbox = match (list.task, self.flavor, item.checked()) {
                (false, ..) => "",
                (true, Flavor::Gfm, true) => "[x] ",
                (true, Flavor::Gfm, false) => "[ ] ",
                (true, Flavor::CommonMark, true) => "✓ ",
                (true, Flavor::CommonMark, false) => "○ ",
            };
            let mut body = Buf::new(!checkbox.is_empty());
            self.push_text(&mut body, item.text(), Ctx::new(Newline::Line));
            body.trim_end();
            let text = body.finish(Some(' '), None);
            let text = text.trim_start_matches([' ', '\t', '\n']);
            let marker = if list.ordered {
                format!("{}.", index + 1)
            } else {
                "-".to_owned()
            };
            push_item(buf, indent, &marker, &format!("{checkbox}{text}"));
            // An empty task keeps the space after its box: `- [ ]` is text.
            buf.floor = buf.text.len();
            let Some(nested) = item.nested() else {
                continue;
            };
            // An empty first item cannot interrupt a paragraph (`-` would
            // underline it): a blank line first. A GFM box alone is none.
            let paragraph = !text.is_empty() || (list.task && self.flavor == Flavor::CommonMark);
            let empty = nested
                .items
                .first()
                .is_some_and(|i| i.text().trim().is_empty());
            if paragraph && empty && !nested.task {
                buf.text.push_str("\n\n");
            }
            self.list(nested, indent + marker.len() + 1, buf);
        }
    }

    /// A padded, aligned table: GFM's, or its text fenced in CommonMark.
    fn table(&self, table: &Table, buf: &mut Buf) {
        let columns = table
            .rows
            .iter()
            .map(Vec::len)
            .fold(table.headers.len(), usize::max);
        if columns == 0 {
            return;
        }
        let cells = |row: &[String]| -> Vec<String> {
            (0..columns)
                .map(|i| self.cell(row.get(i).map_or("", String::as_str)))
                .collect()
        };
        let rows: Vec<Vec<String>> = std::iter::once(&table.headers)
            .chain(&table.rows)
            .map(|row| cells(row))
            .collect();
        let aligns: Vec<Alignment> = (0..columns)
            .map(|i| table.alignments.get(i).copied().unwrap_or_default())
            .collect();
        let widths: Vec<usize> = (0..columns)
            .map(|i| {
                rows.iter()
                    .map(|row| row[i].chars().count())
                    .fold(3, usize::max)
            })
            .collect();
        let rule = |(&width, &align): (&usize, &Alignment)| match align {
            Alignment::Left => "-".repeat(width),
            Alignment::Center => format!(":{}:", "-".repeat(width - 2)),
            Alignment::Right => format!("{}:", "-".repeat(width - 1)),
        };
        let rules: Vec<String> = widths.iter().zip(&aligns).map(rule).collect();
        let mut lines = vec![
            table_row(&rows[0], &widths, &aligns),
            format!("| {} |", rules.join(" | ")),
        ];
        lines.extend(rows[1..].iter().map(|row| table_row(row, &widths, &aligns)));
        match self.flavor {
            Flavor::Gfm => buf.text.push_str(&lines.join("\n")),
            Flavor::CommonMark => push_fence(buf, None, &lines.join("\n")),
        }
    }

    /// A cell: escaped Markdown on one line in GFM; in CommonMark's fenced
    /// table, only what would split the row or the line.
    fn cell(&self, text: &str) -> String {
        if self.flavor == Flavor::Gfm {
            return self
                .inline_text(text, Ctx::new(Newline::Br))
                .trim()
                .to_owned();
        }
        let text = text.trim().replace('\\', "\\\\").replace('|', "\\|");
        text.replace("\r\n", "\\n").replace(['\r', '\n'], "\\n")
    }

    /// `<collapsed name="…">` around the child blocks forced to text, joined
    /// by blank lines, or around its text, XML-escaped, as the reference.
    fn collapsed(&self, name: &str, children: &[Block], text: Option<&str>, buf: &mut Buf) {
        buf.text.push_str("<collapsed name=\"");
        for c in name.chars() {
            match (c, xml_entity(c)) {
                (_, Some(entity)) => buf.text.push_str(entity),
                ('\n', None) => buf.text.push_str("&#10;"),
                ('\r', None) => buf.text.push_str("&#13;"),
                (c, None) => buf.text.push(c),
            }
        }
        buf.text.push_str("\">");
        if children.is_empty() {
            // Right after the tag: a tag alone on its line opens HTML.
            let mut ctx = Ctx::new(Newline::Line);
            ctx.xml = true;
            let text = text.unwrap_or_default().trim_start();
            buf.text.push_str(&self.inline_text(text, ctx));
        }
        for (index, child) in children.iter().enumerate() {
            if index > 0 {
                buf.text.push_str("\n\n");
            }
            let mut body = Buf::new(false);
            self.block(child, &mut body);
            body.trim_end();
            let before = (index == 0).then_some('>');
            buf.text
                .push_str(&body.finish(before, (index + 1 == children.len()).then_some('<')));
        }
        buf.text.push_str("</collapsed>");
    }

    /// Writes `text` so that it reads back as itself, its newlines as
    /// `ctx` allows.
    fn push_text(&self, buf: &mut Buf, text: &str, ctx: Ctx) {
        let text = match text.contains('\r') {
            true => Cow::Owned(text.replace("\r\n", "\n").replace('\r', "\n")),
            false => Cow::Borrowed(text),
        };
        let mut newlines = 0;
        for (index, line) in text.split('\n').enumerate() {
            if index > 0 {
                newlines += 1;
                if line.trim_matches([' ', '\t']).is_empty() {
                    continue;
                }
            }
            if newlines > 0 {
                buf.newline(newlines, ctx.newline);
                newlines = 0;
            }
            self.push_line(buf, line, ctx);
        }
        if newlines > 0 {
            buf.newline(newlines, ctx.newline);
        }
    }

    fn push_line(&self, buf: &mut Buf, mut line: &str, ctx: Ctx) {
        if let Some(digits) = buf.line_digits() {
            if digits == 0 {
                line = escape_block_start(buf, line.trim_start_matches([' ', '\t']), ctx.xml);
            }
            if let Some(end) = ordered_marker(digits, line) {
                buf.text.push_str(&line[..end]);
                buf.text.push('\\');
                line = &line[end..];
            }
        }
        self.push_inline(buf, line, ctx);
    }

    /// Escapes what could become inline markup.
    fn push_inline(&self, buf: &mut Buf, text: &str, ctx: Ctx) {
        let gfm = self.flavor == Flavor::Gfm;
        let mut last = None;
        for (index, c) in text.char_indices() {
            let (prev, next) = (last.replace(c), text[index + c.len_utf8()..].chars().next());
            if let Some(entity) = xml_entity(c).filter(|_| ctx.xml) {
                buf.text.push_str(entity);
                continue;
            }
            let escape = match c {
                '*' | '`' => true,
                '[' => ctx.label,
                ']' => ctx.label || matches!(next, Some('(' | ':')),
                // Before a space too: a span may move the space away.
                '\\' => next.is_none_or(|n| n.is_ascii_punctuation() || n.is_whitespace()),
                '_' => !(is_word(prev) && is_word(next)),
                '<' => next.is_none_or(|n| n.is_ascii_alphabetic() || matches!(n, '/' | '!' | '?')),
                '&' => entity_like(&text[index + 1..]),
                '~' | '|' => gfm,
                _ => false,
            };
            if escape {
                buf.text.push('\\');
            }
            buf.text.push(c);
        }
    }
}

/// Escapes what would open a block at a line's start (`# `, `>`, `- `, `+ `,
/// a `---` or `===` underline, a `~~~` fence, a `[ ]` box or `[label]:`);
/// returns the rest. XML text writes `>` as an entity instead.
fn escape_block_start<'t>(buf: &mut Buf, line: &'t str, xml: bool) -> &'t str {
    let Some(first) = line.chars().next() else {
        return line;
    };
    let rest = &line[first.len_utf8()..];
    let only = |mark: char| rest.chars().all(|c| c == mark || c == ' ' || c == '\t');
    let opens_item = rest.is_empty() || rest.starts_with([' ', '\t']);
    let after_hashes = rest.trim_start_matches('#');
    let escape = match first {
        '~' | '[' => true,
        '>' => !xml,
        '#' => after_hashes.is_empty() || after_hashes.starts_with([' ', '\t']),
        '-' => opens_item || only('-'),
        '+' => opens_item,
        '=' => only('='),
        _ => false,
    };
    if !escape {
        return line;
    }
    buf.text.push('\\');
    buf.text.push(first);
    rest
}

/// Where the `.` or `)` of an ordered-list marker is when `line` continues
/// a line of `digits` digits (`1. `, `12) `, a `1.` that ends the text).
fn ordered_marker(digits: usize, line: &str) -> Option<usize> {
    let own = line.bytes().take_while(u8::is_ascii_digit).count();
    let rest = &line[own..];
    let opens =
        rest.starts_with(['.', ')']) && (rest.len() == 1 || rest[1..].starts_with([' ', '\t']));
    (opens && (1..=9).contains(&(digits + own))).then_some(own)
}

/// Whether `&` then `rest` could read as an entity (`&amp;`, `&#35;`),
/// counting one the text's end leaves unfinished.
fn entity_like(rest: &str) -> bool {
    let body = rest.strip_prefix('#').unwrap_or(rest);
    let name = body
        .find(|c: char| !c.is_ascii_alphanumeric())
        .unwrap_or(body.len());
    body.len() == name || (name > 0 && body[name..].starts_with(';'))
}

/// Appends what the XML renderer wrote as one line of inline HTML whose
/// text a Markdown reader reads as the XML's text: outside tags and
/// entities, a newline and every character Markdown could read as markup
/// become character references, which XML and Markdown both decode.
fn push_xml(out: &mut String, xml: &str) {
    let (mut in_tag, mut in_entity) = (false, false);
    for (index, c) in xml.char_indices() {
        let opens_block = index == 0 && (c.is_ascii_digit() || matches!(c, '#' | '+' | '-' | '='));
        let markup = matches!(c, '\\' | '*' | '_' | '`' | '[' | ']' | '~' | '|' | '\n');
        match c {
            '<' if !in_entity => in_tag = true,
            '>' if in_tag => in_tag = false,
            '&' if !in_tag => in_entity = true,
            ';' if in_entity => in_entity = false,
            _ if !in_tag && !in_entity && (markup || opens_block) => {
                let _ = write!(out, "&#{};", u32::from(c));
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
}

fn xml_entity(c: char) -> Option<&'static str> {
    match c {
        '&' => Some("&amp;"),
        '<' => Some("&lt;"),
        '>' => Some("&gt;"),
        '"' => Some("&quot;"),
        '\'' => Some("&apos;"),
        _ => None,
    }
}

/// A letter or digit to every Markdown reader: `_` between two does not
/// delimit.
fn is_word(c: Option<char>) -> bool {
    classes(c) == [Class::Other]
}

/// What a character next to an emphasis delimiter counts as.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Class {
    Space,
    Punct,
    Other,
}

/// The classes `c` may have: one when certain, several where readers'
/// tables differ (symbols, rare separators); `None` is the text's edge.
fn classes(c: Option<char>) -> &'static [Class] {
    match c {
        None => &[Class::Space],
        Some('\u{b}' | '\u{85}' | '\u{2028}' | '\u{2029}') => {
            &[Class::Space, Class::Punct, Class::Other]
        }
        Some(c) if c.is_whitespace() => &[Class::Space],
        Some(c) if c.is_ascii_punctuation() => &[Class::Punct],
        Some(c) if c.is_ascii() => &[Class::Other],
        // Circled and squared letters are alphabetic, yet symbols (So).
        Some('\u{24B6}'..='\u{24E9}' | '\u{1F130}'..='\u{1F189}') => &[Class::Punct, Class::Other],
        Some(c) if c.is_alphanumeric() => &[Class::Other],
        Some(_) => &[Class::Punct, Class::Other],
    }
}

/// Whether a delimiter run between `prev` and `next` is left- and
/// right-flanking (CommonMark 6.2).
fn flanking(prev: Class, next: Class) -> (bool, bool) {
    let left = next != Class::Space && (next != Class::Punct || prev != Class::Other);
    let right = prev != Class::Space && (prev != Class::Punct || next != Class::Other);
    (left, right)
}

/// One list item, its further lines indented to the content column so that
/// they stay in it.
fn push_item(buf: &mut Buf, indent: usize, marker: &str, text: &str) {
    if !buf.text.is_empty() && !buf.text.ends_with('\n') {
        buf.text.push('\n');
    }
    buf.text
        .push_str(&format!("{}{marker}", " ".repeat(indent)));
    let column = " ".repeat(indent + marker.len() + 1);
    for (index, line) in text.split('\n').enumerate() {
        match (index, line.is_empty()) {
            (0, false) => buf.text.push(' '),
            (0, true) | (_, true) => {}
            (_, false) => buf.text.push_str(&column),
        }
        buf.text.push_str(line);
        buf.text.push('\n');
    }
    buf.text.pop();
}

fn table_row(cells: &[String], widths: &[usize], aligns: &[Alignment]) -> String {
    let mut line = String::from("|");
    for ((cell, &width), &align) in cells.iter().zip(widths).zip(aligns) {
        let room = width.saturating_sub(cell.chars().count());
        let (left, right) = match align {
            Alignment::Left => (0, room),
            Alignment::Right => (room, 0),
            Alignment::Center => (room / 2, room - room / 2),
        };
        line.push_str(&format!(
            " {}{cell}{} |",
            " ".repeat(left),
            " ".repeat(right)
        ));
    }
    line
}

/// A fenced code block, its fence longer than any run of its character in
/// the code (tildes when the info string holds a backtick).
fn push_fence(buf: &mut Buf, info: Option<&str>, code: &str) {
    let info = info
        .unwrap_or_default()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let mark = if info.contains('`') { '~' } else { '`' };
    let fence = mark.to_string().repeat(longest_run(code, mark).max(2) + 1);
    let end = if code.is_empty() || code.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    buf.block_break();
    buf.text
        .push_str(&format!("{fence}{info}\n{code}{end}{fence}"));
    buf.block_break();
}

/// A code span: backticks longer than any run inside, and a space of
/// padding where a reader strips one (a backtick, or spaces, at both ends).
fn push_code_span(buf: &mut Buf, code: &str) {
    let code = code.replace(['\r', '\n'], " ");
    if code.is_empty() {
        return;
    }
    let ticks = "`".repeat(longest_run(&code, '`') + 1);
    let spaced = code.starts_with(' ') && code.ends_with(' ') && !code.trim_matches(' ').is_empty();
    let pad = if code.starts_with('`') || code.ends_with('`') || spaced {
        " "
    } else {
        ""
    };
    buf.text
        .push_str(&format!("{ticks}{pad}{code}{pad}{ticks}"));
}

fn longest_run(text: &str, mark: char) -> usize {
    text.split(|c| c != mark)
        .map(|run| run.len() / mark.len_utf8())
        .max()
        .unwrap_or(0)
}

/// A link destination, between `<>` when it holds spaces or controls;
/// escapes keep parentheses, brackets, backslashes and entities literal.
fn destination(href: &str) -> String {
    let pointy = href.chars().any(|c| c == ' ' || c.is_control());
    let mut out = String::from(if pointy { "<" } else { "" });
    for (index, c) in href.char_indices() {
        match c {
            '\n' => out.push_str("%0A"),
            '\r' => out.push_str("%0D"),
            '(' | ')' | '<' | '>' | '\\' => out.push_str(&format!("\\{c}")),
            '&' if entity_like(&href[index + 1..]) => out.push_str("\\&"),
            c => out.push(c),
        }
    }
    out.push_str(if pointy { ">" } else { "" });
    out
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

/// Markdown being written, with the emphasis in it whose delimiters are
/// checked once their neighbours are known ([`Buf::finish`]).
struct Buf {
    text: String,
    /// Emphasis: the byte offsets of its delimiters.
    spans: Vec<(usize, usize, Emph)>,
    /// The text starts after other text on its line.
    mid_line: bool,
    /// Trimming stops here (a space that matters, a legacy newline).
    floor: usize,
}

impl Buf {
    fn new(mid_line: bool) -> Buf {
        Buf {
            text: String::new(),
            spans: Vec::new(),
            mid_line,
            floor: 0,
        }
    }

    /// How many digits the current line holds when it holds nothing else:
    /// `Some(0)` at a line's start, `None` after other text.
    fn line_digits(&self) -> Option<usize> {
        let line = match self.text.rfind('\n') {
            Some(index) => &self.text[index + 1..],
            None if self.mid_line => return None,
            None => &self.text,
        };
        line.bytes()
            .all(|b| b.is_ascii_digit())
            .then_some(line.len())
    }

    fn at_line_start(&self) -> bool {
        self.line_digits() == Some(0)
    }

    /// `count` newlines of text as `mode` writes them; none at the start.
    fn newline(&mut self, count: usize, mode: Newline) {
        if self.text.is_empty() && !self.mid_line {
            return;
        }
        match mode {
            Newline::Paragraph if count > 1 => self.block_break(),
            Newline::Paragraph | Newline::Line if !self.at_line_start() => self.text.push('\n'),
            Newline::Paragraph | Newline::Line => {}
            Newline::Space => self.text.push(' '),
            Newline::Br => self.text.push_str("<br>"),
        }
    }

    fn hard_break(&mut self, mode: Newline) {
        match mode {
            Newline::Space => self.text.push(' '),
            Newline::Br => self.text.push_str("<br>"),
            _ if !self.at_line_start() => self.text.push_str("  \n"),
            _ => {}
        }
    }

    /// Drops trailing spaces and newlines, as Markdown would; other
    /// whitespace is text (`---` before a no-break space is no rule).
    fn trim_end(&mut self) {
        let end = self.text.trim_end_matches([' ', '\t', '\n']).len();
        self.text.truncate(end.max(self.floor));
    }

    /// Ends the block with a blank line (none at the start). Appends only,
    /// so that offsets taken before stay valid.
    fn block_break(&mut self) {
        if !self.text.is_empty() {
            let newlines = self.text.len() - self.text.trim_end_matches('\n').len();
            (newlines..2).for_each(|_| self.text.push('\n'));
        }
    }

    /// `inner` between `open` and `close`, its edges' whitespace moved
    /// outside (a delimiter next to a space does not open or close);
    /// nothing around an empty inner.
    fn wrap(&mut self, inner: Buf, open: &str, close: &str, emph: Option<Emph>) {
        let start = inner.text.len() - inner.text.trim_start().len();
        let end = inner.text.trim_end().len().max(start);
        self.push_space(&inner.text[..start]);
        if start < end {
            let open_at = self.text.len();
            let shift = open_at + open.len();
            self.text
                .push_str(&format!("{open}{}", &inner.text[start..end]));
            let spans = inner
                .spans
                .iter()
                .map(|&(o, c, e)| (o + shift - start, c + shift - start, e));
            self.spans.extend(spans);
            let close_at = self.text.len();
            self.spans
                .extend(emph.map(|emph| (open_at, close_at, emph)));
            self.text.push_str(close);
        }
        self.push_space(&inner.text[end..]);
    }

    /// Whitespace moved out of a span; no spaces or newline at a line's
    /// start, where they would indent or end the paragraph.
    fn push_space(&mut self, space: &str) {
        for c in space.chars() {
            if !matches!(c, ' ' | '\t' | '\n') || !self.at_line_start() {
                self.text.push(c);
            }
        }
    }

    /// Keeps the text from `start` from joining what precedes it: into a
    /// link (`](`, `]:`, `![`) or into one backtick run (a space between).
    fn guard(&mut self, start: usize) {
        let (head, tail) = self.text.split_at(start);
        if head.ends_with('`') && tail.starts_with('`') {
            self.splice(start, 0, " ");
        } else if head.ends_with(']') && tail.starts_with(['(', ':']) {
            self.splice(start, 0, "\\");
        } else if head.ends_with('!')
            && tail.starts_with('[')
            && !escaped(head.as_bytes(), start - 1)
        {
            self.splice(start - 1, 0, "\\");
        }
    }

    /// Replaces `len` bytes at `at`, moving the spans after them.
    fn splice(&mut self, at: usize, len: usize, with: &str) {
        self.text.replace_range(at..at + len, with);
        for (open, close, _) in &mut self.spans {
            for offset in [open, close] {
                if *offset >= at + len {
                    *offset = *offset + with.len() - len;
                }
            }
        }
    }

    /// The text, every emphasis whose delimiters would not open and close
    /// where they stand (`before` and `after` the text: `None` for a line's
    /// edge) rewritten as HTML tags, until all that remain do.
    fn finish(mut self, before: Option<char>, after: Option<char>) -> String {
        let fits = |buf: &Buf, &(open, close, emph): &(usize, usize, Emph)| {
            let len = emph.marks().0.len();
            buf.run_is(open, len, before, after, (true, false))
                && buf.run_is(close, len, before, after, (false, true))
        };
        while let Some(index) = self.spans.iter().position(|span| !fits(&self, span)) {
            let (open, close, emph) = self.spans.swap_remove(index);
            let (delimiter, tag) = emph.marks();
            self.splice(close, delimiter.len(), &format!("</{tag}>"));
            self.splice(open, delimiter.len(), &format!("<{tag}>"));
        }
        self.text
    }

    /// Whether the delimiter run around `at` is left- and right-flanking as
    /// `want` says, whatever class an uncertain neighbour has.
    fn run_is(
        &self,
        at: usize,
        len: usize,
        before: Option<char>,
        after: Option<char>,
        want: (bool, bool),
    ) -> bool {
        let bytes = self.text.as_bytes();
        let (mut start, mut end) = (at, at + len);
        while start > 0 && bytes[start - 1] == bytes[at] && !escaped(bytes, start - 1) {
            start -= 1;
        }
        while end < bytes.len() && bytes[end] == bytes[at] {
            end += 1;
        }
        let prev = self.text[..start].chars().next_back().or(before);
        let next = self.text[end..].chars().next().or(after);
        let pairs = classes(prev)
            .iter()
            .flat_map(|&p| classes(next).iter().map(move |&n| (p, n)));
        pairs
            .collect::<Vec<_>>()
            .into_iter()
            .all(|(p, n)| flanking(p, n) == want)
    }
}

/// Whether the byte at `index` follows an odd run of backslashes.
fn escaped(bytes: &[u8], index: usize) -> bool {
    bytes[..index]
        .iter()
        .rev()
        .take_while(|&&b| b == b'\\')
        .count()
        % 2
        == 1
}
