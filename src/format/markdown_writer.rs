//! Markdown: a `## Title` per top-level key, one bullet per value.
//!
//! Values are written verbatim so code stays readable; only what could break
//! the bullet structure is touched: a line that would open a block gets a
//! backslash before its marker, and continuation lines are indented into
//! their bullet.

use std::borrow::Cow;

use super::tree::{Container, Label, Leaf, Slot, TreeWriter};

/// Spaces per nesting level: the width of `- `, so a nested bullet sits in
/// its parent's content.
const STEP: usize = 2;

pub(super) struct MarkdownWriter;

impl TreeWriter for MarkdownWriter {
    fn leaf(&mut self, out: &mut String, slot: &Slot<'_>, leaf: Leaf<'_>) {
        value_bullet(out, slot, &leaf.text());
    }

    /// JSON's own spelling, `[]` or `{}`, where a value would go.
    fn empty(&mut self, out: &mut String, slot: &Slot<'_>, container: Container) {
        let text = match container {
            Container::Map => "{}",
            Container::List => "[]",
        };
        value_bullet(out, slot, text);
    }

    fn open(&mut self, out: &mut String, slot: &Slot<'_>, _container: Container) {
        if slot.depth == 0 {
            if let Label::Key(key) | Label::Group(key) = slot.label {
                heading(out, key);
            }
            return;
        }
        push_spaces(out, (slot.depth - 1) * STEP);
        out.push_str("- **");
        match slot.label {
            Label::Key(key) => push_inline(out, key),
            // Title-cased, as the reference labels a group: `**Hints**`.
            Label::Group(key) => push_title(out, key),
            Label::Item { index, name } => {
                push_inline(out, name);
                out.push_str(&format!(" {}", index + 1));
            }
        }
        out.push_str("**:\n");
    }

    fn separate(&mut self, out: &mut String) {
        out.push('\n');
    }
}

/// One bullet holding a value's text: under a `## Title` at the top level,
/// `- **key**: text` under a key, `- text` in a list.
fn value_bullet(out: &mut String, slot: &Slot<'_>, text: &str) {
    let text = line_feeds(text);
    let (pad, keyed) = match slot.label {
        Label::Key(key) | Label::Group(key) if slot.depth == 0 => {
            heading(out, key);
            (0, None)
        }
        Label::Key(key) | Label::Group(key) => ((slot.depth - 1) * STEP, Some(key)),
        Label::Item { .. } => ((slot.depth - 1) * STEP, None),
    };
    push_spaces(out, pad);
    out.push_str("- ");
    let (text, first_starts_line) = match keyed {
        Some(key) => {
            out.push_str("**");
            push_inline(out, key);
            out.push_str("**:");
            if !text.starts_with('\n') {
                out.push(' ');
            }
            (&*text, false)
        }
        // A bare item that opens with a blank line, or is empty, would
        // not be an item where it interrupts a paragraph (a nested list's
        // first bullet); its leading whitespace is dropped.
        None => (text.trim_start_matches([' ', '\t', '\n']), true),
    };
    if text.trim().is_empty() {
        out.truncate(out.trim_end_matches(' ').len());
        out.push_str(" \"\"");
    } else {
        push_value(out, text, pad + STEP, first_starts_line);
    }
    out.push('\n');
}

fn heading(out: &mut String, key: &str) {
    out.push_str("##");
    if !key.is_empty() {
        out.push(' ');
        push_title(out, key);
    }
    out.push('\n');
}

/// `key` title-cased (the key itself when that leaves nothing), escaped.
fn push_title(out: &mut String, key: &str) {
    let title = title_case(key);
    push_inline(out, if title.is_empty() { key } else { &title });
}

/// `config` -> `Config`, `style_guide` / `styleGuide` -> `Style Guide`.
fn title_case(key: &str) -> String {
    let mut title = String::with_capacity(key.len() + 4);
    let mut word_start = true;
    let mut previous: Option<char> = None;
    for c in key.chars() {
        if matches!(c, '_' | '-') || c.is_whitespace() {
            word_start = true;
            previous = None;
            continue;
        }
        let camel =
            c.is_uppercase() && previous.is_some_and(|p| p.is_lowercase() || p.is_numeric());
        if (word_start || camel) && !title.is_empty() {
            title.push(' ');
        }
        if word_start {
            title.extend(c.to_uppercase());
        } else {
            title.push(c);
        }
        word_start = false;
        previous = Some(c);
    }
    title
}

/// Markdown knows `\n`, `\r\n` and `\r` as line breaks; keep one kind.
fn line_feeds(text: &str) -> Cow<'_, str> {
    if text.contains('\r') {
        Cow::Owned(text.replace("\r\n", "\n").replace('\r', "\n"))
    } else {
        Cow::Borrowed(text)
    }
}

/// Appends a value whose continuation lines are indented by `pad`. The first
/// line is escaped only when it starts a line of the output.
fn push_value(out: &mut String, text: &str, pad: usize, first_starts_line: bool) {
    for (index, line) in text.split('\n').enumerate() {
        if index == 0 {
            if first_starts_line {
                push_line(out, line);
            } else {
                out.push_str(line);
            }
            continue;
        }
        out.push('\n');
        if !line.trim_start_matches([' ', '\t']).is_empty() {
            push_spaces(out, pad);
            push_line(out, line);
        }
    }
}

/// Appends `line`, with a backslash before a block marker it starts with.
fn push_line(out: &mut String, line: &str) {
    let body = line.trim_start_matches([' ', '\t']);
    let lead = line.len() - body.len();
    match block_marker(body) {
        Some(at) => {
            out.push_str(&line[..lead + at]);
            out.push('\\');
            out.push_str(&line[lead + at..]);
        }
        None => out.push_str(line),
    }
}

/// Where a backslash must go for `line` (no leading whitespace) to read as
/// text rather than open a Markdown block that could add or end bullets.
/// HTML blocks are left alone: the list item's container closes them, so
/// they cannot swallow the next bullet, and code samples stay unmangled.
fn block_marker(line: &str) -> Option<usize> {
    let bytes = line.as_bytes();
    let first = *bytes.first()?;
    let gap = |at: usize| matches!(bytes.get(at), None | Some(b' ' | b'\t'));
    let trimmed = line.trim_end_matches([' ', '\t']);
    let run_of = |c: u8| trimmed.bytes().all(|b| b == c);
    let rule_of = |c: u8| {
        trimmed.bytes().all(|b| b == c || b == b' ' || b == b'\t')
            && trimmed.bytes().filter(|&b| b == c).count() >= 3
    };
    let marker = match first {
        b'>' => true,
        b'#' => {
            let hashes = bytes.iter().take_while(|&&b| b == b'#').count();
            hashes <= 6 && gap(hashes)
        }
        b'-' | b'+' | b'*' => gap(1) || rule_of(first) || (first == b'-' && run_of(b'-')),
        b'_' => rule_of(b'_'),
        b'=' => run_of(b'='),
        b'`' | b'~' => bytes.len() >= 3 && bytes[..3].iter().all(|&b| b == first),
        b'0'..=b'9' => {
            let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
            let ordered = digits <= 9 && matches!(bytes.get(digits), Some(b'.' | b')'));
            if ordered && gap(digits + 1) {
                return Some(digits);
            }
            false
        }
        _ => false,
    };
    marker.then_some(0)
}

/// Appends a key or title: inline markers escaped, line breaks as spaces.
fn push_inline(out: &mut String, text: &str) {
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '\n' | '\r' => out.push(' '),
            '\\' | '*' | '`' | '[' | ']' | '<' | '>' | '#' | '&' | '!' | '|' | '~' => {
                out.push('\\');
                out.push(c);
            }
            '_' => {
                let word = |at: Option<&char>| at.is_some_and(|c| c.is_alphanumeric());
                let inside = i > 0 && word(chars.get(i - 1)) && word(chars.get(i + 1));
                if !inside {
                    out.push('\\');
                }
                out.push('_');
            }
            c => out.push(c),
        }
    }
}

fn push_spaces(out: &mut String, count: usize) {
    out.extend(std::iter::repeat_n(' ', count));
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::format::{FormatOptions, FragmentFormat, render_fragments, render_value};
    use crate::fragment::{Fragment, FragmentData, hint, role};

    fn md(value: serde_json::Value) -> String {
        render_value(&value, FragmentFormat::Markdown, &FormatOptions::default()).unwrap()
    }

    #[test]
    fn the_design_example_holds_exactly() {
        let config = json!({"config": {"debug": true, "timeout": 30,
            "database": {"host": "localhost", "port": 5432}}});
        assert_eq!(
            md(config),
            "## Config\n- **debug**: true\n- **timeout**: 30\n- **database**:\n  \
             - **host**: localhost\n  - **port**: 5432"
        );
    }

    #[test]
    fn titles_are_title_cased() {
        for (key, title) in [
            ("config", "Config"),
            ("style_guide", "Style Guide"),
            ("styleGuide", "Style Guide"),
            ("API_KEY", "API KEY"),
            ("tier2Limits", "Tier2 Limits"),
            ("été", "Été"),
            ("", ""),
        ] {
            assert_eq!(title_case(key), title);
        }
        assert_eq!(
            md(json!({"__": 1, "#x": 2})),
            "## \\_\\_\n- 1\n\n## \\#x\n- 2"
        );
    }

    #[test]
    fn multi_line_values_stay_in_their_bullet() {
        assert_eq!(
            md(
                json!({"a": {"note": "one\n- two\n\n# three\r\n1. four"}, "b": ["x\n> y", "\n\nz"]})
            ),
            "## A\n- **note**: one\n  \\- two\n\n  \\# three\n  1\\. four\n\n## B\n- x\n  \\> y\n- z"
        );
    }

    #[test]
    fn only_block_markers_are_escaped() {
        for (line, escaped) in [
            ("- x", "\\- x"),
            ("-5", "-5"),
            ("-", "\\-"),
            ("--", "\\--"),
            ("***", "\\***"),
            ("*emphasis*", "*emphasis*"),
            ("_ _ _", "\\_ _ _"),
            ("snake_case", "snake_case"),
            ("#tag", "#tag"),
            ("### h", "\\### h"),
            ("####### seven", "####### seven"),
            ("===", "\\==="),
            ("```rust", "\\```rust"),
            ("<div>", "<div>"),
            ("a < b", "a < b"),
            ("2024. Year", "2024\\. Year"),
            ("3.14", "3.14"),
            ("  + y", "  \\+ y"),
        ] {
            let mut out = String::new();
            push_line(&mut out, line);
            assert_eq!(out, escaped, "{line:?}");
        }
    }

    #[test]
    fn keys_escape_inline_markup() {
        assert_eq!(
            md(json!({"s": {"a*b": 1, "snake_case": 2, "_x": 3, "two\nlines": "", "[l]": 4}})),
            "## S\n- **a\\*b**: 1\n- **snake_case**: 2\n- **\\_x**: 3\n- **two lines**: \"\"\n- **\\[l\\]**: 4"
        );
    }

    #[test]
    fn repeated_fragments_come_as_they_are_or_under_a_titled_group() {
        let teachings = Fragment::new(
            "teachings",
            FragmentData::Fragments(vec![hint("a"), hint("b"), role("r")]),
        );
        let render = |group: bool| {
            let options = FormatOptions::default().with_group_fragments(group);
            render_fragments(
                std::slice::from_ref(&teachings),
                FragmentFormat::Markdown,
                &options,
            )
            .unwrap()
        };
        assert_eq!(
            render(false),
            "## Teachings\n- **hint**: a\n- **hint**: b\n- **role**: r"
        );
        assert_eq!(
            render(true),
            "## Teachings\n- **Hints**:\n  - **hint**: a\n  - **hint**: b\n- **role**: r"
        );
    }

    #[test]
    fn containers_in_lists_are_numbered() {
        assert_eq!(
            md(json!({"users": [{"id": 1}, [2, ""]]})),
            "## Users\n- **user 1**:\n  - **id**: 1\n- **user 2**:\n  - 2\n  - \"\""
        );
    }
}
