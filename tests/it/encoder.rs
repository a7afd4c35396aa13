//! The counter's own encoder gives exactly tiktoken-rs's `encode_ordinary`
//! tokens: on random text from a wide alphabet, on a generated session of
//! every kind of content, and on the bundled sessions.

use crate::session_gen;

use crate::common::proptest_config;
use agent_context::tokens::{Encoding, TiktokenCounter};
use agent_context::{ContextBuilder, MemoryState};
use proptest::prelude::*;
use tiktoken_rs::CoreBPE;

fn reference(encoding: Encoding) -> &'static CoreBPE {
    match encoding {
        Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
        _ => tiktoken_rs::o200k_base_singleton(),
    }
}

fn assert_same_tokens(text: &str) {
    for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
        let ours = TiktokenCounter::new(encoding).unwrap().encode(text);
        let theirs = reference(encoding).encode_ordinary(text);
        if ours != theirs {
            let at = ours.iter().zip(&theirs).take_while(|(a, b)| a == b).count();
            let shown: String = text.chars().take(300).collect();
            panic!(
                "{encoding:?} differs at token {at} of a {}-byte text starting {shown:?}: \
                 ours {:?}, tiktoken-rs {:?}",
                text.len(),
                &ours[at..(at + 4).min(ours.len())],
                &theirs[at..(at + 4).min(theirs.len())],
            );
        }
    }
}

/// Pieces of text chosen to meet every branch of both pre-tokenizer
/// patterns: letter classes (upper, lower, title, modifier, other, marks),
/// contractions in both cases, digit runs, punctuation with and without a
/// space before and newlines or slashes after, and every kind of whitespace.
const ATOMS: &[&str] = &[
    "a",
    "word",
    "Word",
    "WORD",
    "camelCase",
    "HTTPServer",
    "x",
    "I",
    "ǅ",
    "ʰ",
    "ß",
    "ﬁ",
    "'s",
    "'S",
    "'t",
    "'re",
    "'VE",
    "'m",
    "'ll",
    "'D",
    "'",
    "’s",
    "don't",
    "O'Neil",
    "1",
    "12",
    "123",
    "1234567",
    "٣٤",
    "½",
    "Ⅻ",
    "3.14",
    ".",
    ",",
    "!?",
    "...",
    "()",
    "{}",
    "[]",
    "<",
    "/>",
    "</tag>",
    "\"",
    "=\"",
    "://",
    "//",
    "_",
    "-",
    "--",
    "+",
    "#",
    "@",
    "$",
    "%",
    "^",
    "&&",
    "*",
    "|",
    "~",
    "`",
    " ",
    "  ",
    "   ",
    "\t",
    "\n",
    "\n\n",
    "\r\n",
    "\r",
    " \n",
    "\n ",
    "\u{a0}",
    "\u{3000}",
    "\u{2028}",
    "\u{85}",
    "\u{b}",
    "\u{c}",
    "\u{200b}",
    "漢字",
    "かな",
    "한국어",
    "العربية",
    "кириллица",
    "ελληνικά",
    "हिन्दी",
    "e\u{301}",
    "\u{302}",
    "🦀",
    "👩\u{200d}💻",
    "🇫🇷",
    "✅",
];

fn random_text() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(ATOMS), 0..48).prop_map(|atoms| atoms.concat())
}

proptest! {
    #![proptest_config(proptest_config())]

    #[test]
    fn random_text_encodes_like_tiktoken(text in random_text()) {
        assert_same_tokens(&text);
    }
}

#[test]
fn a_generated_session_encodes_like_tiktoken() {
    let state = session_gen::session(7, 60, 1);
    let mut builder = ContextBuilder::new();
    builder.max_tokens(100_000_000);
    let all = builder.build(&state).unwrap();
    let text: Vec<&str> = all.messages.iter().map(|m| m.content.as_str()).collect();
    assert_same_tokens(&text.join("\n\n"));
}

#[test]
fn the_bundled_sessions_encode_like_tiktoken() {
    for file in ["data/coding-agent.json", "data/research-agent.json"] {
        let json = std::fs::read_to_string(file).unwrap();
        assert_same_tokens(&json);
        let state = MemoryState::from_json_str(&json).unwrap();
        let mut builder = ContextBuilder::new();
        builder.max_tokens(100_000_000);
        for message in builder.build(&state).unwrap().messages {
            assert_same_tokens(&message.content);
        }
    }
}

/// Whitespace runs before words, at the end and mixed with newlines (the
/// pattern's `\s+(?!\S)` lookahead), contractions, scripts, and text that
/// would be special tokens if special tokens were read.
#[test]
fn tricky_text_encodes_like_tiktoken() {
    let samples = [
        "",
        " ",
        "   ",
        "a  b",
        "a   \n  b",
        "x \t\u{3000} y",
        "trailing   ",
        "  leading",
        "\n\n\nlines\r\n\r\nmore \n",
        "it's THEY'LL we'Re don'T",
        "fn main() { println!(\"{}\", 1234567); }",
        "漢字かな交じり文 and 한국어 텍스트",
        "emoji 👩‍👩‍👧 flags 🇫🇷 combining e\u{301}\u{302}",
        "camelCaseHTTPServer URLs://a/b//c\n/d",
        "<tool_result id=\"c1\">\n{\"a\": [1, 2.5, null]}\n</tool_result>",
        "<|endoftext|> <|fim_prefix|> <|endofprompt|> <|im_start|>",
        "\u{85}\u{a0}\u{2028}\u{b}\u{c} mixed\u{a0}\u{a0}x",
    ];
    for text in samples {
        assert_same_tokens(text);
    }
    let long_runs = [
        " ".repeat(5000) + "a",
        "\t \u{3000}".repeat(2000),
        "b".repeat(3000),
        "\n \n".repeat(1000) + "end",
    ];
    for text in &long_runs {
        assert_same_tokens(text);
    }
}

/// Every string of up to five characters over whitespace of each kind, a
/// letter, a digit and punctuation: where the patterns' whitespace
/// alternatives (`\s*[\r\n]+`, `\s+(?!\S)`, `\s+`) and a leading space or
/// punctuation before a word decide the pieces.
#[test]
fn short_whitespace_strings_encode_like_tiktoken() {
    const ALPHABET: [char; 8] = [' ', '\n', '\r', '\t', '\u{a0}', 'a', '1', '.'];
    let mut texts = vec![String::new()];
    let mut from = 0;
    for _ in 0..5 {
        let to = texts.len();
        for i in from..to {
            for c in ALPHABET {
                let mut text = texts[i].clone();
                text.push(c);
                texts.push(text);
            }
        }
        from = to;
    }
    for text in &texts {
        assert_same_tokens(text);
    }
}

/// Runs of one class long enough to be counted by the linear encoder,
/// each in the places a segment can start and end.
const RUNS: &[&str] = &[
    "A", "a", "x", "Ab", "é", "ǅ", "漢", "かな", "🦀", " ", "\t", "\n", " \n", "=", "-", "}", "#",
    "7", "deadbeef", "Zm9v",
];

#[test]
fn long_runs_encode_like_tiktoken() {
    for run in RUNS {
        for bytes in [255, 256, 257, 1_000, 9_000] {
            let body = run.repeat(bytes / run.len() + 1);
            for text in [
                body.clone(),
                format!("line one\n{body}"),
                format!("a\n{body}\nb"),
                format!("x {body}'s and\nmore\n/path {body}"),
                format!("{body}1{body}\n\n{body}"),
            ] {
                assert_same_tokens(&text);
            }
        }
    }
}

/// A run of a contraction's last letter right after it: `cl100k_base`
/// reads `'re`, `'ll` and the like as pieces of their own, which take the
/// run's first letters.
#[test]
fn runs_after_contractions_encode_like_tiktoken() {
    for contraction in ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'RE", "'Ll"] {
        let last = &contraction[contraction.len() - 1..];
        for chars in [300, 1_000] {
            assert_same_tokens(&format!("we{contraction}{}", last.repeat(chars)));
            assert_same_tokens(&format!("{contraction}{}\n", last.repeat(chars)));
        }
    }
}

fn text_with_long_runs() -> impl Strategy<Value = String> {
    let part = prop_oneof![
        3 => prop::sample::select(ATOMS).prop_map(str::to_owned),
        1 => (prop::sample::select(RUNS), 200usize..700).prop_map(|(run, n)| run.repeat(n)),
    ];
    prop::collection::vec(part, 0..12).prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(proptest_config())]

    #[test]
    fn text_with_long_runs_encodes_like_tiktoken(text in text_with_long_runs()) {
        assert_same_tokens(&text);
    }
}
