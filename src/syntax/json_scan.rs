//! Scans of JSON text beside the parser, on its error path: where the first
//! lone surrogate escape or the first too deep bracket is, and the repair of
//! lone surrogates for a caller who asked for U+FFFD.
//!
//! A runtime that cuts a string inside an emoji (`"🦀"` is `"\ud83e\udd80"`)
//! leaves half a pair, which no Rust string can hold; `serde_json` then fails
//! with "unexpected end of hex escape". And `serde_json` places a visitor's
//! error wherever it stopped reading after it, so the reader asks the text
//! for the exact place.
//!
//! The scans follow quotes and backslashes the way a JSON reader does, so
//! `"\\ud800"` (an escaped backslash, then letters) and brackets inside
//! strings are left alone. They run on text `serde_json` read up to the
//! error, so up to there their idea of strings is its idea.

use std::borrow::Cow;

/// The escape that replaces a lone surrogate: U+FFFD, the replacement
/// character, as long as the escape it replaces so offsets do not move.
const REPLACEMENT: &str = "\\ufffd";

/// The first lone surrogate escape: its 1-based line and byte column (of the
/// backslash) and the escape as written.
pub(crate) fn first_lone_surrogate(text: &str) -> Option<(usize, usize, String)> {
    let start = lone_surrogates(text).next()?;
    let (line, column) = line_column(text, start);
    let escape = text[start..start + REPLACEMENT.len()].to_owned();
    Some((line, column, escape))
}

/// The line and column of the first bracket that opens more than `limit`
/// nested arrays and objects.
pub(crate) fn first_too_deep(text: &str, limit: usize) -> Option<(usize, usize)> {
    let mut depth = 0usize;
    let mut strings = Strings::default();
    for (offset, &byte) in text.as_bytes().iter().enumerate() {
        if strings.inside(byte) {
            continue;
        }
        match byte {
            b'[' | b'{' if depth == limit => return Some(line_column(text, offset)),
            b'[' | b'{' => depth += 1,
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// The last non-whitespace byte at or before 1-based `line` and `column`:
/// where a key ends when the reader stopped after the whitespace behind it.
pub(crate) fn back_over_whitespace(text: &str, line: usize, column: usize) -> (usize, usize) {
    let line_start = text
        .match_indices('\n')
        .nth(line.wrapping_sub(2))
        .map_or(0, |(newline, _)| newline + 1);
    let mut end = (line_start + column).min(text.len());
    while end > 1 && text.as_bytes()[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    line_column(text, end.saturating_sub(1))
}

/// The 1-based line and byte column of `offset`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text.as_bytes()[..offset];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |newline| newline + 1);
    (line, offset - line_start + 1)
}

/// Whether a byte is inside a string, fed every byte in order.
#[derive(Default)]
struct Strings {
    in_string: bool,
    escaped: bool,
}

impl Strings {
    /// True for the bytes of a string, its quotes included.
    fn inside(&mut self, byte: u8) -> bool {
        if !self.in_string {
            self.in_string = byte == b'"';
            return self.in_string;
        }
        match (self.escaped, byte) {
            (true, _) => self.escaped = false,
            (false, b'\\') => self.escaped = true,
            (false, b'"') => self.in_string = false,
            _ => {}
        }
        true
    }
}

/// `text` with every lone surrogate escape replaced by `\ufffd`; borrowed
/// when there is none.
pub(crate) fn replace_lone_surrogates(text: &str) -> Cow<'_, str> {
    let mut starts = lone_surrogates(text).peekable();
    if starts.peek().is_none() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for start in starts {
        out.push_str(&text[copied..start]);
        out.push_str(REPLACEMENT);
        copied = start + REPLACEMENT.len();
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// Byte offsets of the lone surrogate escapes (`\uD800`–`\uDFFF` not in a
/// high-then-low pair) inside the strings of `text`.
fn lone_surrogates(text: &str) -> impl Iterator<Item = usize> + '_ {
    let bytes = text.as_bytes();
    let mut index = 0;
    let mut in_string = false;
    std::iter::from_fn(move || {
        while index < bytes.len() {
            let at = index;
            match (in_string, bytes[at]) {
                (false, b'"') => in_string = true,
                (false, _) => {}
                (true, b'"') => in_string = false,
                (true, b'\\') if bytes.get(at + 1) == Some(&b'u') => {
                    let unit = hex_unit(bytes, at);
                    index = at + REPLACEMENT.len();
                    match unit {
                        Some(0xD800..=0xDBFF) => {
                            if matches!(hex_unit(bytes, index), Some(0xDC00..=0xDFFF)) {
                                index += REPLACEMENT.len();
                            } else {
                                return Some(at);
                            }
                        }
                        Some(0xDC00..=0xDFFF) => return Some(at),
                        _ => {}
                    }
                    continue;
                }
                // Any other escape is two bytes; its second may be a quote.
                (true, b'\\') => index += 1,
                (true, _) => {}
            }
            index += 1;
        }
        None
    })
}

/// The code unit of a `\uXXXX` escape starting at `at`, if there is one.
fn hex_unit(bytes: &[u8], at: usize) -> Option<u16> {
    let escape = bytes.get(at..at + REPLACEMENT.len())?;
    if escape[..2] != *b"\\u" {
        return None;
    }
    let digits = &escape[2..];
    if !digits.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    u16::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_unpaired_escapes_inside_strings_are_lone() {
        let text = r#"{"a": "\ud83e\udd80 ok", "b": "\\ud800 text", "c": "x\ud800\ud800\udc00", "d": "\udc00"}"#;
        let starts: Vec<usize> = lone_surrogates(text).collect();
        let expected = vec![
            text.find("x\\ud800").unwrap() + 1,
            text.rfind("\\udc00").unwrap(),
        ];
        assert_eq!(starts, expected);
        assert_eq!(
            replace_lone_surrogates(text),
            r#"{"a": "\ud83e\udd80 ok", "b": "\\ud800 text", "c": "x\ufffd\ud800\udc00", "d": "\ufffd"}"#
        );
        assert!(matches!(
            replace_lone_surrogates(r#"["\ud83e\udd80"]"#),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn the_first_is_placed_by_line_and_column() {
        let text = "{\n  \"t\": \"ab\\uDBFF\"\n}";
        assert_eq!(first_lone_surrogate(text), Some((2, 11, "\\uDBFF".into())));
        // A high surrogate at the very end of the text is lone too.
        assert_eq!(first_lone_surrogate("\"\\ud800").map(|f| f.1), Some(2));
        assert_eq!(first_lone_surrogate("\"\\ud80"), None);
    }

    #[test]
    fn the_first_too_deep_bracket_skips_strings() {
        let text = "[\"[[[\\\"[\", {\"a\": []},\n [[[]]]]";
        assert_eq!(first_too_deep(text, 3), Some((2, 4)));
        assert_eq!(first_too_deep(text, 4), None);
    }

    #[test]
    fn whitespace_behind_a_key_is_stepped_over() {
        let text = "{\"a\": 1,\n  \"a\"  \n : 2}";
        assert_eq!(back_over_whitespace(text, 3, 1), (2, 5));
        assert_eq!(back_over_whitespace(text, 2, 5), (2, 5));
    }
}
