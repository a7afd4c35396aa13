//! XML's rules, written once: which characters a document may hold, what
//! a name is, and how text and attribute values are escaped. Chunk
//! rendering (`render`), semantic content (`content`) and the fragment
//! formats (`format`) all escape through here.

/// Which characters [`escape`] writes as references, beyond `&` and `<`,
/// which it always does.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Escapes {
    /// `>` as `&gt;`.
    pub(crate) gt: bool,
    /// `"` as `&quot;`.
    pub(crate) quote: bool,
    /// Tab and line feed as `&#9;` and `&#10;`, so an attribute value keeps
    /// them (a parser normalizes them to spaces).
    pub(crate) whitespace: bool,
    /// A character XML cannot hold as U+FFFD; off, it is written as it is.
    pub(crate) replace_illegal: bool,
}

impl Escapes {
    /// Element text: `&`, `<`, `>`, a carriage return (which a parser would
    /// turn into a line feed), and no illegal character.
    pub(crate) const TEXT: Escapes = Escapes {
        gt: true,
        quote: false,
        whitespace: false,
        replace_illegal: true,
    };
    /// Element text that may also stand in quotes: [`TEXT`](Self::TEXT) and
    /// `"`.
    pub(crate) const QUOTED_TEXT: Escapes = Escapes {
        quote: true,
        ..Escapes::TEXT
    };
    /// A value between double quotes: `&`, `<`, `"`, and tab, line feed and
    /// carriage return as references, so they survive parsing.
    pub(crate) const ATTRIBUTE: Escapes = Escapes {
        gt: false,
        quote: true,
        whitespace: true,
        replace_illegal: true,
    };
}

/// Appends `text` to `out` with `escapes`. A carriage return is always a
/// reference: a parser would turn it into a line feed.
pub(crate) fn escape(text: &str, escapes: Escapes, out: &mut String) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '\r' => out.push_str("&#13;"),
            '>' if escapes.gt => out.push_str("&gt;"),
            '"' if escapes.quote => out.push_str("&quot;"),
            '\t' if escapes.whitespace => out.push_str("&#9;"),
            '\n' if escapes.whitespace => out.push_str("&#10;"),
            c if escapes.replace_illegal && !is_xml_char(c) => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
}

/// XML 1.0's `Char` production (Rust chars are never surrogates).
pub(crate) fn is_xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{FFFD}' | '\u{10000}'..)
}

/// XML 1.0's `Name` production without `:`, which would need a declared
/// namespace prefix.
pub(crate) fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c != ':' && is_name_start(c))
        && chars.all(|c| c != ':' && is_name_char(c))
}

/// XML 1.0's `NameStartChar`.
fn is_name_start(c: char) -> bool {
    matches!(c,
        ':' | 'A'..='Z' | '_' | 'a'..='z'
        | '\u{C0}'..='\u{D6}' | '\u{D8}'..='\u{F6}' | '\u{F8}'..='\u{2FF}'
        | '\u{370}'..='\u{37D}' | '\u{37F}'..='\u{1FFF}' | '\u{200C}'..='\u{200D}'
        | '\u{2070}'..='\u{218F}' | '\u{2C00}'..='\u{2FEF}' | '\u{3001}'..='\u{D7FF}'
        | '\u{F900}'..='\u{FDCF}' | '\u{FDF0}'..='\u{FFFD}' | '\u{10000}'..='\u{EFFFF}')
}

/// XML 1.0's `NameChar`: where a tag's name goes on, for a reader of
/// markup as much as for a writer.
pub(crate) fn is_name_char(c: char) -> bool {
    is_name_start(c)
        || matches!(c,
            '-' | '.' | '0'..='9' | '\u{B7}' | '\u{300}'..='\u{36F}' | '\u{203F}'..='\u{2040}')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn escaped(text: &str, escapes: Escapes) -> String {
        let mut out = String::new();
        escape(text, escapes, &mut out);
        out
    }

    #[test]
    fn each_kind_of_value_escapes_what_it_must() {
        let text = "a<b>&\"c\"\t\r\n\u{1}";
        assert_eq!(
            escaped(text, Escapes::TEXT),
            "a&lt;b&gt;&amp;\"c\"\t&#13;\n\u{FFFD}"
        );
        assert_eq!(
            escaped(text, Escapes::QUOTED_TEXT),
            "a&lt;b&gt;&amp;&quot;c&quot;\t&#13;\n\u{FFFD}"
        );
        assert_eq!(
            escaped(text, Escapes::ATTRIBUTE),
            "a&lt;b>&amp;&quot;c&quot;&#9;&#13;&#10;\u{FFFD}"
        );
    }

    #[test]
    fn names_follow_the_xml_grammar_without_colons() {
        for name in ["a", "_x", "tool_result", "é", "漢字", "a-b.c1", "x\u{B7}"] {
            assert!(is_name(name), "{name}");
        }
        for name in ["", "1a", "-a", "a:b", "a b", "a<", ".a"] {
            assert!(!is_name(name), "{name}");
        }
        assert!(is_name_char(':'));
    }
}
