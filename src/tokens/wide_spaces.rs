//! Where a text holds whitespace outside ASCII, which the `tiktoken` crate
//! counts in time quadratic in the text it is given.
//!
//! A pre-tokenizer piece that is all whitespace, one character of it
//! outside ASCII (a no-break space, an ideographic space), sends the crate
//! to its slow path for the pattern's `\s+(?!\S)`, which checks the whole
//! rest of its input as UTF-8 to read the next character. So every such
//! piece costs the length of what follows it: `"1\u{a0}"` repeated to
//! 300 KB took the crate 10 s. Giving the crate only short texts around
//! these characters keeps the cost bounded (see `segments`).

use std::ops::Range;

/// Whether `bytes` starts with the UTF-8 of a character that Unicode counts
/// as whitespace (`White_Space`, as the pattern's `\s`) and ASCII does not:
/// U+0085, U+00A0, U+1680, U+2000 to U+200A, U+2028, U+2029, U+202F,
/// U+205F, U+3000. Returns its length.
fn wide_space_at(bytes: &[u8]) -> Option<usize> {
    match bytes {
        [0xC2, 0x85 | 0xA0, ..] => Some(2),
        [0xE1, 0x9A, 0x80, ..]
        | [0xE2, 0x80, 0x80..=0x8A | 0xA8 | 0xA9 | 0xAF, ..]
        | [0xE2, 0x81, 0x9F, ..]
        | [0xE3, 0x80, 0x80, ..] => Some(3),
        _ => None,
    }
}

/// The first wide space at or after `from`, as a byte range. Blocks of pure
/// ASCII are passed over a word at a time.
pub(crate) fn next_wide_space(bytes: &[u8], from: usize) -> Option<Range<usize>> {
    const BLOCK: usize = 32;
    let mut at = from;
    while at < bytes.len() {
        let block = &bytes[at..bytes.len().min(at + BLOCK)];
        if block.iter().fold(0, |any, &b| any | b) < 0x80 {
            at += block.len();
            continue;
        }
        for offset in 0..block.len() {
            if let Some(len) = wide_space_at(&bytes[at + offset..]) {
                return Some(at + offset..at + offset + len);
            }
        }
        at += block.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_exactly_the_whitespace_outside_ascii() {
        for c in (0..=0x10FFFF).filter_map(char::from_u32) {
            let mut buf = [0; 4];
            let text = c.encode_utf8(&mut buf).as_bytes();
            let wide = c.is_whitespace() && !c.is_ascii();
            assert_eq!(wide_space_at(text).is_some(), wide, "{c:?}");
            if wide {
                assert_eq!(wide_space_at(text), Some(text.len()), "{c:?}");
            }
        }
    }

    #[test]
    fn finds_the_first_one_from_where_it_is_asked() {
        let text = format!("{}é\u{a0}x\u{3000}", "a".repeat(70));
        let bytes = text.as_bytes();
        assert_eq!(next_wide_space(bytes, 0), Some(72..74));
        assert_eq!(next_wide_space(bytes, 73), Some(75..78));
        assert_eq!(next_wide_space(bytes, 78), None);
        assert_eq!(next_wide_space(b"plain ascii text", 0), None);
    }
}
