//! Markdown: GitHub Flavored or CommonMark, written so that text never turns
//! into markup.
//!
//! The shapes are the reference renderer's (`**strong**`, `*em*`,
//! `` `code` ``, `[text](href)`, padded tables, `- [x]` tasks, fenced code,
//! `<collapsed name="…">`), but every piece of text is escaped, as little as
//! keeps it text: a backslash goes before `*`, `` ` ``, `[` and `]` always;
//! before `_` unless it sits between two letters; before a `<` that could
//! open a tag or an autolink, an `&` that could start an entity and a `\`
//! that could escape what follows; before `~` and `|` in GFM; and before
//! what would open a block at the start of a line (`#`, `>`, `-`, `+`, `1.`,
//! a `---` or `===` underline, a `~~~` fence). Indentation at the start of a
//! line is dropped, as Markdown would drop it (or read it as code).
//!
//! Where Markdown cannot say what the tree says, the nearest form that a
//! parser reads back is written instead:
//! * `mark`, `underline`, `subscript`, `superscript` and `small` are inline
//!   HTML (`<mark>C</mark>`, …); so is CommonMark's strikethrough
//!   (`<del>C</del>`).
//! * Emphasis whose delimiters could not open or close where they stand
//!   (`a**(b)**`: punctuation inside, a letter outside) becomes `<strong>`,
//!   `<em>` or `<del>`; emphasis inside the same emphasis is written once.
//! * Code spans hold the subtree's plain text, newlines as spaces, between
//!   backtick runs longer than any inside.
//! * In GFM table cells a newline is `<br>`; in headings a space; in list
//!   items and inline spans one line break (blank lines would end them).
//! * A table without headers gets a header row of empty cells; short rows
//!   are padded with empty cells. CommonMark has no tables: its table is the
//!   GFM table's text in a fenced code block, with cells escaping only `\`,
//!   `|` and newlines (as `\\`, `\|`, `\n`).
//! * A `line-break` node is a hard break (two spaces and a newline), a
//!   `horizontal-rule` node `---` between blank lines (a break inline).

use serde_json::Value;

use super::block::{
    Alignment, Block, ContentFormat, List, Node, Semantic, SemanticType, Structure, Table,
};
use super::render::{ContentRenderer, write_subtree};

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

    fn format(&self) -> ContentFormat {
        match self.flavor {
            Flavor::Gfm => ContentFormat::Gfm,
            Flavor::CommonMark => ContentFormat::Commonmark,
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

    /// At the start of a line the tree may open blocks; after other text it
    /// is written inline.
    fn write_node(&self, node: &Node, out: &mut String) {
        let at_line_start = out.is_empty() || out.ends_with('\n');
        let mut buf = Buf::new(!at_line_start);
        let ctx = if at_line_start {
            Ctx::BLOCK
        } else {
            Ctx::BLOCK.inline()
        };
        self.node(node, ctx, &mut buf);
        let before = out.chars().next_back();
        out.push_str(&buf.finish(before, None));
    }
}

/// Where content is written: what it may open and what it is inside.
#[derive(Clone, Copy)]
struct Ctx {
    /// Blocks (paragraphs, headings, lists) may open here.
    block: bool,
    /// What a newline in text becomes.
    newline: Newline,
    /// The emphasis open around this point (bits of [`Emph`]).
    styles: u8,
    /// Inside brackets (a link's text, an alt text, a media marker):
    /// every bracket is escaped and no link opens.
    label: bool,
    /// `&`, `<`, `>`, `"` and `'` are written as XML entities (which
    /// Markdown reads back as the characters), as the reference writes a
    /// collapsed block's text.
    xml: bool,
}

/// What a newline in text becomes: what the surrounding construct allows.
#[derive(Clone, Copy, PartialEq)]
enum Newline {
    /// A newline; a blank line ends the paragraph.
    Paragraph,
    /// A newline, never a blank line.
    Line,
    /// A space.
    Space,
    /// `<br>` (a GFM table cell).
    Br,
}

impl Ctx {
    const BLOCK: Ctx = Ctx {
        block: true,
        newline: Newline::Paragraph,
        styles: 0,
        label: false,
        xml: false,
    };

    fn inline(self) -> Ctx {
        let newline = match self.newline {
            Newline::Paragraph => Newline::Line,
            other => other,
        };
        Ctx {
            block: false,
            newline,
            ..self
        }
    }

    /// Inside brackets, on one line.
    const LABEL: Ctx = Ctx {
        block: false,
        newline: Newline::Space,
        styles: 0,
        label: true,
        xml: false,
    };

    fn with_newline(self, newline: Newline) -> Ctx {
        Ctx {
            newline,
            ..self.inline()
        }
    }
}

/// Emphasis written with delimiters that must open and close where they
/// stand.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Emph {
    Strong,
    Em,
    Strike,
}

impl Emph {
    fn bit(self) -> u8 {
        1 << self as u8
    }

    fn delimiter(self) -> &'static str {
        match self {
            Emph::Strong => "**",
            Emph::Em => "*",
            Emph::Strike => "~~",
        }
    }

    fn tag(self) -> &'static str {
        match self {
            Emph::Strong => "strong",
            Emph::Em => "em",
            Emph::Strike => "del",
        }
    }
}

impl MarkdownRenderer {
    fn block(&self, block: &Block, buf: &mut Buf) {
        match block {
            Block::Text {
                text,
                semantic_node,
                semantic,
            } => self.text_block(text, semantic_node.as_ref(), semantic.as_ref(), buf),
            Block::Code { language, text } => {
                push_fence(buf, language.as_deref().unwrap_or(""), text)
            }
            Block::Json { data, .. } => {
                let pretty =
                    serde_json::to_string_pretty(data).unwrap_or_else(|_| data.to_string());
                push_fence(buf, "json", &pretty);
            }
            Block::Image(media) => {
                self.image(
                    buf,
                    media.alt_text.as_deref().unwrap_or(""),
                    &media.source.href(),
                );
            }
            Block::Audio(media) => self.media_marker(buf, "Audio", &media.source.href()),
            Block::Video(media) => self.media_marker(buf, "Video", &media.source.href()),
            Block::UserAction {
                action,
                actor,
                target,
                text,
            } => {
                let text =
                    describe_action(action, actor.as_deref(), target.as_deref(), text.as_deref());
                self.push_text(buf, &text, Ctx::BLOCK);
            }
            Block::Collapsed {
                name,
                child_blocks,
                text,
            } => self.collapsed(name, child_blocks, text.as_deref(), buf),
        }
    }

    /// A text block: preformatted, a list or table structure, a tree in a
    /// block shape, a legacy `semantic` around the text, or plain text.
    fn text_block(
        &self,
        text: &str,
        node: Option<&Node>,
        semantic: Option<&Semantic>,
        buf: &mut Buf,
    ) {
        let kind = semantic.map(|s| s.kind);
        if kind == Some(SemanticType::Preformatted)
            || semantic.and_then(|s| s.preformatted) == Some(true)
        {
            return push_fence(buf, "", &node.map_or_else(|| text.to_owned(), plain_text));
        }
        match (semantic.and_then(|s| s.structure.as_ref()), kind) {
            (Some(Structure::Table(table)), Some(SemanticType::Table)) => {
                return self.table(table, buf);
            }
            (Some(Structure::List(list)), Some(SemanticType::List)) => {
                return self.list(list, 0, buf);
            }
            _ => {}
        }
        match (node, semantic) {
            (Some(node), Some(s)) if s.kind == SemanticType::Heading => {
                let ctx = Ctx::BLOCK.with_newline(Newline::Space);
                self.heading(s.level.unwrap_or(1), buf, |b| self.child(node, ctx, b));
            }
            (Some(node), Some(s)) if s.kind == SemanticType::Blockquote => {
                self.blockquote(buf, |b| self.child(node, Ctx::BLOCK, b));
            }
            (Some(node), _) => self.child(node, Ctx::BLOCK, buf),
            (None, Some(semantic)) => self.legacy(semantic, text, buf),
            (None, None) => self.push_text(buf, text, Ctx::BLOCK),
        }
    }

    /// The reference's legacy form: the block's text under its `semantic`,
    /// written as a one-leaf tree (a heading defaults to level 2 here).
    fn legacy(&self, semantic: &Semantic, text: &str, buf: &mut Buf) {
        match semantic.kind {
            SemanticType::LineBreak | SemanticType::HorizontalRule => {
                let rule = semantic.kind == SemanticType::HorizontalRule;
                buf.text.push_str(if rule { "\n---\n" } else { "\n" });
                buf.floor = buf.text.len();
            }
            SemanticType::Heading => {
                let ctx = Ctx::BLOCK.with_newline(Newline::Space);
                self.heading(semantic.level.unwrap_or(2), buf, |b| {
                    self.push_text(b, text, ctx)
                });
            }
            kind => {
                let mut node = Node::text(text);
                node.semantic = Some(kind);
                if let Some(href) = &semantic.href {
                    node.props
                        .insert("href".to_owned(), Value::from(href.as_str()));
                }
                self.node(&node, Ctx::BLOCK, buf);
            }
        }
    }

    /// A child tree: with its own renderer when it names another one.
    fn child(&self, node: &Node, ctx: Ctx, buf: &mut Buf) {
        match node.renderer {
            Some(format) if format != self.format() => write_subtree(self, node, &mut buf.text),
            _ => self.node(node, ctx, buf),
        }
    }

    fn node(&self, node: &Node, ctx: Ctx, buf: &mut Buf) {
        use SemanticType as S;
        let Some(kind) = node.semantic else {
            return self.content(node, ctx, buf);
        };
        let src = node.prop("src").unwrap_or_default();
        match kind {
            S::Strong => self.emphasis(node, ctx, Emph::Strong, buf),
            S::Em | S::Citation | S::Variable => self.emphasis(node, ctx, Emph::Em, buf),
            S::Strikethrough => self.emphasis(node, ctx, Emph::Strike, buf),
            S::Mark => self.tagged(node, ctx, "mark", buf),
            S::Underline => self.tagged(node, ctx, "u", buf),
            S::Subscript => self.tagged(node, ctx, "sub", buf),
            S::Superscript => self.tagged(node, ctx, "sup", buf),
            S::Small => self.tagged(node, ctx, "small", buf),
            S::Preformatted if ctx.block => push_fence(buf, "", &plain_text(node)),
            S::Code | S::Keyboard | S::Preformatted => push_code_span(buf, &plain_text(node)),
            S::Link => self.link(node, ctx, buf),
            S::Image => self.image(buf, node.prop("alt").unwrap_or_default(), src),
            S::Audio => self.media_marker(buf, "Audio", src),
            S::Video => self.media_marker(buf, "Video", src),
            S::Quote => {
                buf.text.push('"');
                self.content(node, ctx.inline(), buf);
                buf.text.push('"');
            }
            S::Heading if ctx.block => {
                let level = node.props.get("level").and_then(Value::as_u64).unwrap_or(1);
                let ctx = ctx.with_newline(Newline::Space);
                self.heading(level.min(6) as u8, buf, |b| self.content(node, ctx, b));
            }
            S::Blockquote if ctx.block => self.blockquote(buf, |b| self.content(node, ctx, b)),
            S::Paragraph if ctx.block => {
                buf.block_break();
                self.content(node, ctx, buf);
                buf.block_break();
            }
            S::HorizontalRule if ctx.block => {
                buf.block_break();
                buf.text.push_str("---");
                buf.block_break();
            }
            S::LineBreak | S::HorizontalRule => buf.hard_break(ctx.newline),
            _ => self.content(node, ctx, buf),
        }
    }

    /// The node's children in order (its text when it has none), keeping
    /// neighbours from joining into a link.
    fn content(&self, node: &Node, ctx: Ctx, buf: &mut Buf) {
        if node.children.is_empty() {
            if let Some(text) = &node.text {
                self.push_text(buf, text, ctx);
            }
            return;
        }
        for child in &node.children {
            let start = buf.text.len();
            self.child(child, ctx, buf);
            buf.guard_boundary(start);
        }
    }

    fn emphasis(&self, node: &Node, ctx: Ctx, emph: Emph, buf: &mut Buf) {
        if ctx.styles & emph.bit() != 0 {
            return self.content(node, ctx, buf);
        }
        let mut inner = Buf::new(true);
        let inner_ctx = Ctx {
            styles: ctx.styles | emph.bit(),
            ..ctx.inline()
        };
        self.content(node, inner_ctx, &mut inner);
        if emph == Emph::Strike && self.flavor == Flavor::CommonMark {
            buf.wrap(inner, "<del>", "</del>", None);
        } else {
            buf.wrap(inner, emph.delimiter(), emph.delimiter(), Some(emph));
        }
    }

    fn tagged(&self, node: &Node, ctx: Ctx, tag: &str, buf: &mut Buf) {
        let mut inner = Buf::new(true);
        self.content(node, ctx.inline(), &mut inner);
        buf.wrap(inner, &format!("<{tag}>"), &format!("</{tag}>"), None);
    }

    /// `[text](href)`; the text alone when there is no `href` or when inside
    /// another link's text, where links cannot nest.
    fn link(&self, node: &Node, ctx: Ctx, buf: &mut Buf) {
        let href = node.prop("href").unwrap_or_default();
        if href.is_empty() || ctx.label {
            return self.content(node, ctx, buf);
        }
        let mut label = Buf::new(true);
        let label_ctx = Ctx {
            label: true,
            ..ctx.inline()
        };
        self.content(node, label_ctx, &mut label);
        buf.text.push('[');
        buf.text.push_str(&label.finish(Some('['), Some(']')));
        buf.text.push_str("](");
        push_destination(&mut buf.text, href);
        buf.text.push(')');
    }

    fn image(&self, buf: &mut Buf, alt: &str, src: &str) {
        buf.text.push_str("![");
        buf.text.push_str(&self.inline_text(alt, Ctx::LABEL));
        buf.text.push_str("](");
        push_destination(&mut buf.text, src);
        buf.text.push(')');
    }

    /// `[Audio: src]`, as the reference writes sound and video in text.
    fn media_marker(&self, buf: &mut Buf, name: &str, src: &str) {
        buf.text.push('[');
        buf.text.push_str(name);
        buf.text.push_str(": ");
        buf.text.push_str(&self.inline_text(src, Ctx::LABEL));
        buf.text.push(']');
    }

    /// Text escaped after other text on its line: a label, a cell.
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
        // `# a #` closes with its `#`s: a trailing run after a space is text.
        let kept = text.trim_end_matches('#').len();
        if kept < text.len() && (kept == 0 || text[..kept].ends_with([' ', '\t'])) {
            text.insert(kept, '\\');
        }
        buf.block_break();
        buf.text.push_str(&"#".repeat(level.clamp(1, 6).into()));
        if !text.trim_start().is_empty() {
            buf.text.push(' ');
            buf.text.push_str(text.trim_start());
        }
        buf.block_break();
    }

    fn blockquote(&self, buf: &mut Buf, write: impl FnOnce(&mut Buf)) {
        let mut body = Buf::new(false);
        write(&mut body);
        body.trim_end();
        let text = body.finish(None, None);
        buf.block_break();
        for (index, line) in text.split('\n').enumerate() {
            if index > 0 {
                buf.text.push('\n');
            }
            buf.text.push_str(if line.is_empty() { ">" } else { "> " });
            buf.text.push_str(line);
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
            self.push_text(&mut body, item.text(), Ctx::BLOCK.inline());
            body.trim_end();
            let text = body.finish(Some(' '), None);
            let marker = marker(list.ordered, index);
            push_item(
                buf,
                indent,
                &marker,
                &format!("{checkbox}{}", text.trim_start()),
            );
            // An empty task keeps the space after its box: `- [ ]` is text.
            buf.floor = buf.text.len();
            if let Some(nested) = item.nested() {
                self.list(nested, indent + marker.len() + 1, buf);
            }
        }
    }

    /// A padded, aligned table: GFM's pipes, or that text fenced in
    /// CommonMark, which has no tables.
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
        let header = cells(&table.headers);
        let rows: Vec<Vec<String>> = table.rows.iter().map(|row| cells(row)).collect();
        let aligns: Vec<Alignment> = (0..columns)
            .map(|i| table.alignments.get(i).copied().unwrap_or_default())
            .collect();
        let widths: Vec<usize> = (0..columns)
            .map(|i| {
                rows.iter()
                    .chain([&header])
                    .map(|row| row[i].chars().count())
                    .fold(3, usize::max)
            })
            .collect();
        let mut text = table_row(&header, &widths, &aligns);
        text.push_str("\n|");
        for (&width, &align) in widths.iter().zip(&aligns) {
            let dashes = |n: usize| "-".repeat(n);
            let rule = match align {
                Alignment::Left => dashes(width),
                Alignment::Center => format!(":{}:", dashes(width - 2)),
                Alignment::Right => format!("{}:", dashes(width - 1)),
            };
            text.push_str(&format!(" {rule} |"));
        }
        for row in &rows {
            text.push('\n');
            text.push_str(&table_row(row, &widths, &aligns));
        }
        match self.flavor {
            Flavor::Gfm => buf.text.push_str(&text),
            Flavor::CommonMark => push_fence(buf, "", &text),
        }
    }

    /// A cell's text: escaped Markdown on one line in GFM; in CommonMark's
    /// fenced table only what would split the row or the line is escaped.
    fn cell(&self, text: &str) -> String {
        match self.flavor {
            Flavor::Gfm => {
                let ctx = Ctx::BLOCK.with_newline(Newline::Br);
                self.inline_text(text, ctx).trim().to_owned()
            }
            Flavor::CommonMark => {
                let mut out = String::new();
                for c in text.trim().chars() {
                    match c {
                        '\\' => out.push_str("\\\\"),
                        '|' => out.push_str("\\|"),
                        '\n' => out.push_str("\\n"),
                        '\r' => {}
                        c => out.push(c),
                    }
                }
                out
            }
        }
    }

    /// `<collapsed name="…">` around the child blocks forced to text,
    /// joined by blank lines, or around its text (XML-escaped), as the
    /// reference writes it.
    fn collapsed(&self, name: &str, children: &[Block], text: Option<&str>, buf: &mut Buf) {
        buf.text.push_str("<collapsed name=\"");
        push_attribute(&mut buf.text, name);
        buf.text.push_str("\">");
        if children.is_empty() {
            let ctx = Ctx {
                xml: true,
                ..Ctx::BLOCK.inline()
            };
            buf.text
                .push_str(&self.inline_text(text.unwrap_or_default(), ctx));
        }
        for (index, child) in children.iter().enumerate() {
            let before = if index == 0 {
                Some('>')
            } else {
                buf.text.push_str("\n\n");
                None
            };
            let after = (index + 1 == children.len()).then_some('<');
            let mut body = Buf::new(false);
            self.block(child, &mut body);
            body.trim_end();
            buf.text.push_str(&body.finish(before, after));
        }
        buf.text.push_str("</collapsed>");
    }

    /// Writes `text` so that it reads back as itself. Newlines become what
    /// `ctx` allows.
    fn push_text(&self, buf: &mut Buf, text: &str, ctx: Ctx) {
        let text = if text.contains('\r') {
            text.replace("\r\n", "\n").replace('\r', "\n")
        } else {
            text.to_owned()
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
                line = line.trim_start_matches([' ', '\t']);
                line = escape_block_start(buf, line, ctx.xml);
            }
            if let Some(end) = ordered_marker(digits, line) {
                buf.text.push_str(&line[..end]);
                buf.text.push('\\');
                line = &line[end..];
            }
        }
        self.push_inline(buf, line, ctx);
    }

    /// Escapes what could become inline markup: emphasis, code, links
    /// (a `]` before `(` or `:`; every bracket in a label), tags, entities,
    /// and GFM's strikethrough and cell separators.
    fn push_inline(&self, buf: &mut Buf, text: &str, ctx: Ctx) {
        let gfm = self.flavor == Flavor::Gfm;
        let mut prev = None;
        let mut chars = text.char_indices().peekable();
        while let Some((index, c)) = chars.next() {
            let next = chars.peek().map(|&(_, n)| n);
            if let Some(entity) = xml_entity(c).filter(|_| ctx.xml) {
                buf.text.push_str(entity);
                prev = Some(c);
                continue;
            }
            let escape = match c {
                '*' | '`' => true,
                '[' => ctx.label,
                ']' => ctx.label || next.is_some_and(|n| matches!(n, '(' | ':')),
                '\\' => next.is_none_or(|n| n.is_ascii_punctuation()),
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
            prev = Some(c);
        }
    }
}

/// Escapes what would open a block at the start of a line (`# `, `>`,
/// `- `, `+ `, a `---` or `===` underline, a `~~~` fence, a `[ ]` task box
/// or a `[label]:` definition); returns the rest. `xml` text writes `>` as
/// an entity instead.
fn escape_block_start<'t>(buf: &mut Buf, line: &'t str, xml: bool) -> &'t str {
    let Some(first) = line.chars().next() else {
        return line;
    };
    let rest = &line[first.len_utf8()..];
    let only = |mark: char| rest.chars().all(|c| c == mark || c == ' ' || c == '\t');
    let opens_item = rest.is_empty() || rest.starts_with([' ', '\t']);
    let escape = match first {
        '~' | '[' => true,
        '>' => !xml,
        '#' => {
            let after = rest.trim_start_matches('#');
            after.is_empty() || after.starts_with([' ', '\t'])
        }
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
/// a line holding `digits` digits so far (`1. `, `12) `, `1.` at the end).
fn ordered_marker(digits: usize, line: &str) -> Option<usize> {
    let own = line.bytes().take_while(u8::is_ascii_digit).count();
    let rest = &line[own..];
    let opens =
        rest.starts_with(['.', ')']) && (rest.len() == 1 || rest[1..].starts_with([' ', '\t']));
    (opens && (1..=9).contains(&(digits + own))).then_some(own)
}

/// Whether an `&` followed by `rest` could be read as an entity
/// (`&amp;`, `&#35;`), counting an unfinished one at the end of the text.
fn entity_like(rest: &str) -> bool {
    let body = rest.strip_prefix('#').unwrap_or(rest);
    let name = body
        .find(|c: char| !c.is_ascii_alphanumeric())
        .unwrap_or(body.len());
    let after = &body[name..];
    after.is_empty() || (name > 0 && after.starts_with(';'))
}

/// A character that is a letter or digit to every Markdown reader, around
/// which `_` cannot open or close emphasis.
fn is_word(c: Option<char>) -> bool {
    c.is_some_and(|c| classes(Some(c)) == [Class::Other])
}

/// What a character next to an emphasis delimiter counts as.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Class {
    Space,
    Punct,
    Other,
}

/// The classes `c` may have: one when certain, several where readers'
/// tables differ (symbols, the rarer line separators); `None` is the start
/// or end of the text.
fn classes(c: Option<char>) -> &'static [Class] {
    match c {
        None => &[Class::Space],
        Some('\u{b}' | '\u{85}' | '\u{2028}' | '\u{2029}') => {
            &[Class::Space, Class::Punct, Class::Other]
        }
        Some(c) if c.is_whitespace() => &[Class::Space],
        Some(c) if c.is_ascii_punctuation() => &[Class::Punct],
        Some(c) if c.is_ascii() => &[Class::Other],
        // Circled and squared letters are alphabetic but symbols (So).
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

fn marker(ordered: bool, index: usize) -> String {
    if ordered {
        format!("{}.", index + 1)
    } else {
        "-".to_owned()
    }
}

/// One list item: `marker text`, its further lines indented to the content
/// column so that they stay in the item.
fn push_item(buf: &mut Buf, indent: usize, marker: &str, text: &str) {
    if !buf.text.is_empty() && !buf.text.ends_with('\n') {
        buf.text.push('\n');
    }
    let column = indent + marker.len() + 1;
    buf.text.push_str(&" ".repeat(indent));
    buf.text.push_str(marker);
    for (index, line) in text.split('\n').enumerate() {
        if index > 0 {
            buf.text.push('\n');
            if !line.is_empty() {
                buf.text.push_str(&" ".repeat(column));
            }
        } else if !line.is_empty() {
            buf.text.push(' ');
        }
        buf.text.push_str(line);
    }
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

/// A fenced code block whose fence is longer than any run of its character
/// in the code (tildes when the info string holds a backtick).
fn push_fence(buf: &mut Buf, info: &str, code: &str) {
    let info = info.split_whitespace().collect::<Vec<_>>().join(" ");
    let mark = if info.contains('`') { '~' } else { '`' };
    let fence = mark.to_string().repeat(longest_run(code, mark).max(2) + 1);
    buf.block_break();
    buf.text.push_str(&fence);
    buf.text.push_str(&info);
    buf.text.push('\n');
    buf.text.push_str(code);
    if !code.is_empty() && !code.ends_with('\n') {
        buf.text.push('\n');
    }
    buf.text.push_str(&fence);
    buf.block_break();
}

/// A code span: backticks longer than any run inside, padded with a space
/// where the content starts or ends with a backtick or with spaces on both
/// sides (one of each is stripped when read).
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

/// A link destination: bare, or between `<>` when it holds spaces or
/// control characters; escapes keep parentheses, brackets, backslashes and
/// entities literal.
fn push_destination(out: &mut String, href: &str) {
    let pointy = href.chars().any(|c| c == ' ' || c.is_control());
    if pointy {
        out.push('<');
    }
    for (index, c) in href.char_indices() {
        match c {
            '\n' => out.push_str("%0A"),
            '\r' => out.push_str("%0D"),
            '(' | ')' | '<' | '>' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '&' if entity_like(&href[index + 1..]) => out.push_str("\\&"),
            c => out.push(c),
        }
    }
    if pointy {
        out.push('>');
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

/// An XML attribute value, as the reference escapes the collapsed name.
fn push_attribute(out: &mut String, value: &str) {
    for c in value.chars() {
        match (c, xml_entity(c)) {
            (_, Some(entity)) => out.push_str(entity),
            ('\n', None) => out.push_str("&#10;"),
            ('\r', None) => out.push_str("&#13;"),
            (c, None) => out.push(c),
        }
    }
}

/// The leaves' text, concatenated: what a code span or block shows.
fn plain_text(node: &Node) -> String {
    if node.children.is_empty() {
        return node.text.clone().unwrap_or_default();
    }
    node.children.iter().map(plain_text).collect()
}

/// A user action in words: its text, or `Actor action on target` with the
/// actor `User` when it is missing or "user".
fn describe_action(
    action: &str,
    actor: Option<&str>,
    target: Option<&str>,
    text: Option<&str>,
) -> String {
    if let Some(text) = text.filter(|t| !t.trim().is_empty()) {
        return text.to_owned();
    }
    let actor = match actor {
        None => "User",
        Some(actor) if actor.eq_ignore_ascii_case("user") => "User",
        Some(actor) => actor,
    };
    let target = target.map(|t| format!("on {t}"));
    let parts: Vec<&str> = [Some(actor), Some(action), target.as_deref()]
        .into_iter()
        .flatten()
        .filter(|part| !part.is_empty())
        .collect();
    if parts.is_empty() {
        "User action".to_owned()
    } else {
        parts.join(" ")
    }
}

/// Markdown being written, with the emphasis spans in it whose delimiters
/// are checked once their neighbours are known ([`Buf::finish`]).
struct Buf {
    text: String,
    spans: Vec<Span>,
    /// The text starts after other text on its line.
    mid_line: bool,
    /// Trimming stops here (a space that matters, a legacy block's newline).
    floor: usize,
}

/// The byte offsets of an emphasis's opening and closing delimiters.
struct Span {
    open: usize,
    close: usize,
    emph: Emph,
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

    /// How many digits the current line holds, when it holds nothing else:
    /// `Some(0)` at the start of a line, `None` mid-text.
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

    /// `count` newlines of text, as `mode` writes them; none at the start.
    fn newline(&mut self, count: usize, mode: Newline) {
        if self.text.is_empty() && !self.mid_line {
            return;
        }
        match mode {
            Newline::Paragraph if count > 1 => self.block_break(),
            Newline::Paragraph | Newline::Line => {
                if !self.at_line_start() {
                    self.text.push('\n');
                }
            }
            Newline::Space => self.text.push(' '),
            Newline::Br => self.text.push_str("<br>"),
        }
    }

    fn hard_break(&mut self, mode: Newline) {
        match mode {
            Newline::Space => self.text.push(' '),
            Newline::Br => self.text.push_str("<br>"),
            Newline::Paragraph | Newline::Line if !self.at_line_start() => {
                self.text.push_str("  \n")
            }
            Newline::Paragraph | Newline::Line => {}
        }
    }

    fn trim_end(&mut self) {
        let end = self.text.trim_end().len().max(self.floor);
        self.text.truncate(end);
    }

    /// Ends the current block with a blank line (nothing at the start).
    fn block_break(&mut self) {
        self.trim_end();
        if !self.text.is_empty() {
            self.text.push_str("\n\n");
        }
    }

    /// `inner` between `open` and `close`, its outer whitespace moved
    /// outside (delimiters next to a space do not open or close); nothing
    /// around an empty inner.
    fn wrap(&mut self, mut inner: Buf, open: &str, close: &str, emph: Option<Emph>) {
        let start = inner.text.len() - inner.text.trim_start().len();
        let end = inner.text.trim_end().len().max(start);
        if start == end {
            return self.push_space(&inner.text);
        }
        self.push_space(&inner.text[..start]);
        let open_at = self.text.len();
        self.text.push_str(open);
        let base = self.text.len();
        self.text.push_str(&inner.text[start..end]);
        self.spans.extend(
            std::mem::take(&mut inner.spans)
                .into_iter()
                .map(|span| Span {
                    open: span.open - start + base,
                    close: span.close - start + base,
                    emph: span.emph,
                }),
        );
        let close_at = self.text.len();
        self.text.push_str(close);
        if let Some(emph) = emph {
            self.spans.push(Span {
                open: open_at,
                close: close_at,
                emph,
            });
        }
        self.push_space(&inner.text[end..]);
    }

    /// Whitespace moved out of a span: none at a line start, where spaces
    /// would indent and a newline would end the paragraph.
    fn push_space(&mut self, space: &str) {
        for c in space.chars() {
            if !self.at_line_start() {
                self.text.push(c);
            }
        }
    }

    /// Keeps the text written from `start` from joining what precedes it
    /// into a link: `](` or `]:` after a bracket, `![` after a `!`.
    fn guard_boundary(&mut self, start: usize) {
        let (head, tail) = self.text.split_at(start);
        if head.ends_with(']') && tail.starts_with(['(', ':']) {
            self.insert(start, "\\");
        } else if head.ends_with('!')
            && tail.starts_with('[')
            && !escaped(head.as_bytes(), start - 1)
        {
            self.insert(start - 1, "\\");
        }
    }

    fn insert(&mut self, at: usize, text: &str) {
        self.text.insert_str(at, text);
        self.shift(at, text.len());
    }

    fn replace(&mut self, at: usize, len: usize, with: &str) {
        self.text.replace_range(at..at + len, with);
        self.shift(at + 1, with.len().saturating_sub(len));
    }

    fn shift(&mut self, from: usize, by: usize) {
        for span in &mut self.spans {
            if span.open >= from {
                span.open += by;
            }
            if span.close >= from {
                span.close += by;
            }
        }
    }

    /// The text, every emphasis whose delimiters would not open and close
    /// where they stand (between `before` and `after`, `None` for a line's
    /// edge) rewritten as HTML tags, until all that remain do.
    fn finish(mut self, before: Option<char>, after: Option<char>) -> String {
        while let Some(index) = self
            .spans
            .iter()
            .position(|span| !self.delimits(span, before, after))
        {
            let span = self.spans.swap_remove(index);
            let (len, tag) = (span.emph.delimiter().len(), span.emph.tag());
            self.replace(span.close, len, &format!("</{tag}>"));
            self.replace(span.open, len, &format!("<{tag}>"));
        }
        self.text
    }

    /// Whether the opening run only opens and the closing run only closes,
    /// whatever class an uncertain neighbour has.
    fn delimits(&self, span: &Span, before: Option<char>, after: Option<char>) -> bool {
        let len = span.emph.delimiter().len();
        self.run_is(span.open, len, before, after, (true, false))
            && self.run_is(span.close, len, before, after, (false, true))
    }

    fn run_is(
        &self,
        at: usize,
        len: usize,
        before: Option<char>,
        after: Option<char>,
        want: (bool, bool),
    ) -> bool {
        let bytes = self.text.as_bytes();
        let mark = bytes[at];
        let mut start = at;
        while start > 0 && bytes[start - 1] == mark && !escaped(bytes, start - 1) {
            start -= 1;
        }
        let mut end = at + len;
        while end < bytes.len() && bytes[end] == mark {
            end += 1;
        }
        let prev = self.text[..start].chars().next_back().or(before);
        let next = self.text[end..].chars().next().or(after);
        classes(prev)
            .iter()
            .all(|&p| classes(next).iter().all(|&n| flanking(p, n) == want))
    }
}

/// Whether the byte at `index` is escaped by an odd run of backslashes.
fn escaped(bytes: &[u8], index: usize) -> bool {
    bytes[..index]
        .iter()
        .rev()
        .take_while(|&&b| b == b'\\')
        .count()
        % 2
        == 1
}
