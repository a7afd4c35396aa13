//! Emphasis delimiters: whether a run of them opens or closes where it
//! stands (CommonMark's flanking rules).

/// Emphasis written with delimiters, which must open and close where they
/// stand ([`Buf::finish`](super::buf::Buf::finish)).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Emph {
    Strong,
    Em,
    Strike,
}

impl Emph {
    /// The delimiter, and the tag written instead where it cannot stand.
    pub(super) fn marks(self) -> (&'static str, &'static str) {
        match self {
            Emph::Strong => ("**", "strong"),
            Emph::Em => ("*", "em"),
            Emph::Strike => ("~~", "del"),
        }
    }
}

/// A letter or digit to every Markdown reader: `_` between two does not
/// delimit.
pub(super) fn is_word(c: Option<char>) -> bool {
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

/// Whether the delimiter run of `len` bytes at `at` in `text` is left- and
/// right-flanking as `want` says, whatever class an uncertain neighbour
/// has; `around` is what comes before and after `text`, when known.
pub(super) fn run_is(
    text: &str,
    (at, len): (usize, usize),
    around: (Option<char>, Option<char>),
    want: (bool, bool),
) -> bool {
    let (before, after) = around;
    let bytes = text.as_bytes();
    let (mut start, mut end) = (at, at + len);
    while start > 0 && bytes[start - 1] == bytes[at] && !escaped(bytes, start - 1) {
        start -= 1;
    }
    while end < bytes.len() && bytes[end] == bytes[at] {
        end += 1;
    }
    let prev = text[..start].chars().next_back().or(before);
    let next = text[end..].chars().next().or(after);
    let pairs = classes(prev)
        .iter()
        .flat_map(|&p| classes(next).iter().map(move |&n| (p, n)));
    pairs
        .collect::<Vec<_>>()
        .into_iter()
        .all(|(p, n)| flanking(p, n) == want)
}

/// Whether the byte at `index` follows an odd run of backslashes.
pub(super) fn escaped(bytes: &[u8], index: usize) -> bool {
    bytes[..index]
        .iter()
        .rev()
        .take_while(|&&b| b == b'\\')
        .count()
        % 2
        == 1
}
