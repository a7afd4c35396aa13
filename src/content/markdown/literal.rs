//! Escaping: text written so that it never turns into markup, and code
//! and link destinations that keep their text literal.

use std::borrow::Cow;
use std::fmt::Write as _;

use super::buf::{Buf, Newline};
use super::ctx::Ctx;
use super::emphasis::is_word;
use super::{Flavor, MarkdownRenderer};

impl MarkdownRenderer {
    /// Text escaped on one line, inside brackets.
    pub(super) fn label(&self, text: &str) -> String {
        self.inline_text(text, Ctx::new(Newline::Space).labelled())
    }

    /// Text escaped after other text on its line.
    pub(super) fn inline_text(&self, text: &str, ctx: Ctx) -> String {
        let mut buf = Buf::new(true);
        self.push_text(&mut buf, text, ctx);
        buf.text
    }

    /// Writes `text` so that it reads back as itself, its newlines as
    /// `ctx` allows.
    pub(super) fn push_text(&self, buf: &mut Buf, text: &str, ctx: Ctx) {
        let text = line_feeds(text);
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
                // A tag, a comment or an autolink (`<a@b.c>`, `<+x@y>`).
                '<' => next.is_none_or(|n| !n.is_whitespace()),
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
/// become character references, which XML and Markdown both decode. At a
/// line's start (`line_start`), leading spaces and a first digit or
/// punctuation mark are references too, and a first tag follows an empty
/// `<span></span>`, so that no block (a heading, a list item, an HTML
/// block that would leave the rest of the line raw) opens there.
pub(super) fn push_xml(out: &mut String, xml: &str, line_start: bool) {
    let mut leading = line_start;
    if leading && xml.starts_with('<') {
        out.push_str("<span></span>");
        leading = false;
    }
    let (mut in_tag, mut in_entity) = (false, false);
    for c in xml.chars() {
        let markup = matches!(c, '\\' | '*' | '_' | '`' | '[' | ']' | '~' | '|' | '\n');
        let opens_block =
            leading && (c.is_ascii_punctuation() || c.is_ascii_digit() || c == ' ' || c == '\t');
        match c {
            '<' if !in_entity => in_tag = true,
            '>' if in_tag => in_tag = false,
            '&' if !in_tag => in_entity = true,
            ';' if in_entity => in_entity = false,
            _ if !in_tag && !in_entity && (markup || opens_block) => {
                leading &= c == ' ' || c == '\t';
                let _ = write!(out, "&#{};", u32::from(c));
                continue;
            }
            _ => {}
        }
        leading = false;
        out.push(c);
    }
}

pub(super) fn xml_entity(c: char) -> Option<&'static str> {
    match c {
        '&' => Some("&amp;"),
        '<' => Some("&lt;"),
        '>' => Some("&gt;"),
        '"' => Some("&quot;"),
        '\'' => Some("&apos;"),
        _ => None,
    }
}

/// A fenced code block, its fence longer than any run of its character in
/// the code (tildes when the info string holds a backtick).
pub(super) fn push_fence(buf: &mut Buf, info: Option<&str>, code: &str) {
    let info = info
        .unwrap_or_default()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let code = line_feeds(code);
    let code = code.as_ref();
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
pub(super) fn push_code_span(buf: &mut Buf, code: &str) {
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

/// `text` with every line ending a line feed: Markdown reads a carriage
/// return as one.
fn line_feeds(text: &str) -> Cow<'_, str> {
    match text.contains('\r') {
        true => Cow::Owned(text.replace("\r\n", "\n").replace('\r', "\n")),
        false => Cow::Borrowed(text),
    }
}

fn longest_run(text: &str, mark: char) -> usize {
    text.split(|c| c != mark)
        .map(|run| run.len() / mark.len_utf8())
        .max()
        .unwrap_or(0)
}

/// A link destination, between `<>` when it holds spaces or controls;
/// escapes keep parentheses, brackets, backslashes and entities literal.
pub(super) fn destination(href: &str) -> String {
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
