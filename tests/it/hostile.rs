//! Counting never panics or hangs on hostile text, and stays exact: every
//! count is checked against tiktoken-rs's own `CoreBPE`, which shares only
//! the rank tables with our counter (`src/tokens/`).

use std::sync::OnceLock;

use agent_context::tokens::{Encoding, TiktokenCounter, TokenCounter};
use agent_context::{ContextBuilder, MemoryChunk, MemoryState, Role};
use tiktoken_rs::CoreBPE;

const ENCODINGS: [Encoding; 2] = [Encoding::O200kBase, Encoding::Cl100kBase];

fn counter(encoding: Encoding) -> TiktokenCounter {
    TiktokenCounter::new(encoding).unwrap()
}

/// Our counter gives exactly `expected`, token for token, and counts as many.
fn assert_tokens(encoding: Encoding, text: &str, expected: &[u32]) {
    let counter = counter(encoding);
    let ours = counter.encode(text);
    let at = ours
        .iter()
        .zip(expected)
        .take_while(|(a, b)| a == b)
        .count();
    assert!(
        ours == expected,
        "{encoding:?}: {} tokens, tiktoken-rs {}; first difference at token {at}",
        ours.len(),
        expected.len()
    );
    assert_eq!(counter.count(text), expected.len(), "{encoding:?}");
}

/// tiktoken-rs's encoder, the reference.
fn reference(encoding: Encoding) -> &'static CoreBPE {
    match encoding {
        Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
        _ => tiktoken_rs::o200k_base_singleton(),
    }
}

/// tiktoken-rs's byte-pair merge over `piece` as one pre-tokenizer piece.
///
/// The reference's own pre-tokenizer panics on a long run of whitespace
/// (its backtracking regex gives up), so such texts are split by hand as the
/// encoding's pattern splits them, and each piece is merged by a `CoreBPE`
/// with the same ranks and a pattern that takes the whole text as one piece.
fn merged_piece(encoding: Encoding, piece: &str) -> Vec<u32> {
    static WHOLE: [OnceLock<CoreBPE>; 2] = [OnceLock::new(), OnceLock::new()];
    let slot = usize::from(encoding == Encoding::Cl100kBase);
    let whole = WHOLE[slot].get_or_init(|| {
        let reference = reference(encoding);
        let ranks = (0..210_000)
            .filter_map(|rank| Some((reference.decode_bytes(&[rank]).ok()?, rank)))
            .collect();
        CoreBPE::new(ranks, Default::default(), r"(?s:.+)").unwrap()
    });
    whole.encode_ordinary(piece)
}

#[test]
fn a_million_spaces() {
    // Both patterns take a run of spaces at the end as one piece, and give
    // the last space of a run before a word to the word (` x`).
    let spaces = " ".repeat(1_000_000);
    let followed = format!("{spaces}x");
    for encoding in ENCODINGS {
        assert_tokens(encoding, &spaces, &merged_piece(encoding, &spaces));
        let mut before_word = merged_piece(encoding, &spaces[1..]);
        before_word.extend(merged_piece(encoding, " x"));
        assert_tokens(encoding, &followed, &before_word);
    }
}

#[test]
fn five_megabytes_of_minified_json() {
    let mut json = String::from("[");
    let mut i = 0;
    while json.len() < 5_000_000 {
        json.push_str(&format!(
            "{{\"id\":{i},\"name\":\"item-{i}\",\"ok\":true,\"tags\":[\"a\",\"b\"]}},"
        ));
        i += 1;
    }
    json.push(']');
    for encoding in ENCODINGS {
        assert_tokens(encoding, &json, &reference(encoding).encode_ordinary(&json));
    }
}

#[test]
fn a_two_megabyte_line_without_whitespace() {
    let line = "x".repeat(2_000_000);
    let base64ish: String = (0..2_000_000u32)
        .map(|i| char::from(b"AZaz09+/"[(i * 7 % 8) as usize]))
        .collect();
    for encoding in ENCODINGS {
        for text in [&line, &base64ish] {
            assert_tokens(encoding, text, &reference(encoding).encode_ordinary(text));
        }
    }
}

#[test]
fn hostile_tool_output_builds_within_budget_exactly() {
    let state = MemoryState::new()
        .with_chunk(MemoryChunk::agent("u1", Role::User, "list the directory"))
        .with_chunk(
            MemoryChunk::new("t1", agent_context::ChunkKind::Workflow)
                .with_call_id("k")
                .with_tool("ls"),
        )
        .with_chunk(
            MemoryChunk::new("r1", agent_context::ChunkKind::Environment)
                .with_call_id("k")
                .with_text(format!("start{}end", " \t".repeat(300_000))),
        );
    let result = ContextBuilder::new()
        .model("gpt-4o")
        .max_tokens(1_000_000)
        .build(&state)
        .unwrap();
    assert_eq!(result.warnings.len(), 1, "a budget above the window warns");
    let reference = reference(Encoding::O200kBase);
    let count = |text: &str| reference.encode_ordinary(text).len();
    let recount: usize = result
        .messages
        .iter()
        .map(|m| 3 + count(m.role.as_str()) + count(&m.content))
        .sum::<usize>()
        + 3;
    assert_eq!(result.token_count, recount);
}

#[test]
fn special_token_text_is_ordinary_text() {
    for encoding in ENCODINGS {
        let expected = reference(encoding).encode_ordinary("<|endoftext|>");
        // As a special token it would be one token, 100257 or 199999.
        assert!(expected.len() > 1, "{expected:?}");
        assert_tokens(encoding, "<|endoftext|>", &expected);
    }
}

/// 50 MB of one letter: counted in linear time, as tiktoken counts it
/// (`A` merges into tokens of eight, as `tests/it/encoder.rs` checks token for
/// token on shorter runs).
#[test]
fn fifty_megabytes_of_one_letter() {
    let text = "A".repeat(50 << 20);
    assert_eq!(counter(Encoding::O200kBase).count(&text), (50 << 20) / 8);
    let state = MemoryState::new()
        .with_chunk(MemoryChunk::agent("u1", Role::User, "dump it"))
        .with_chunk(
            MemoryChunk::new("t1", agent_context::ChunkKind::Workflow)
                .with_call_id("k")
                .with_tool("cat"),
        )
        .with_chunk(
            MemoryChunk::new("r1", agent_context::ChunkKind::Environment)
                .with_call_id("k")
                .with_text(text),
        );
    let result = ContextBuilder::new()
        .max_tokens(20_000)
        .build(&state)
        .unwrap();
    assert!(result.token_count <= 20_000);
    assert_eq!(result.truncated().count(), 1);
    let recount: usize = result
        .messages
        .iter()
        .map(|m| {
            3 + counter(Encoding::O200kBase).count(m.role.as_str())
                + reference(Encoding::O200kBase)
                    .encode_ordinary(&m.content)
                    .len()
        })
        .sum::<usize>()
        + 3;
    assert_eq!(result.token_count, recount);
}

/// A megabyte of one punctuation character whose tokens are long (64 `=`
/// make one `o200k_base` token), between a word and a line: encoded from a
/// short stand-in, token for token as `bpe-openai` encodes the whole text
/// (which `tests/it/encoder.rs` holds to tiktoken-rs on shorter runs).
#[test]
fn a_megabyte_of_one_punctuation_character() {
    for (encoding, whole) in [
        (Encoding::O200kBase, bpe_openai::o200k_base()),
        (Encoding::Cl100kBase, bpe_openai::cl100k_base()),
    ] {
        for unit in ["=", "-", "漢"] {
            let text = format!("padding {}\nend", unit.repeat((1 << 20) / unit.len() + 7));
            let expected = whole.encode(text.as_str());
            assert_tokens(encoding, &text, &expected);
        }
    }
}

/// Whitespace outside ASCII between other characters, a megabyte of it:
/// each such piece once cost the `tiktoken` crate the length of the rest of
/// the text (300 KB of `"1\u{a0}"` took 10 s), so this counted for minutes.
/// Exact against tiktoken-rs, in segments around the spaces and alone.
#[test]
fn a_megabyte_of_whitespace_outside_ascii() {
    let texts = [
        "1\u{a0}".repeat(350_000),
        "x \u{3000}\n".repeat(170_000),
        format!("{}\u{2028}", "word\u{a0}\u{a0}, and more.\n".repeat(50_000)),
    ];
    for encoding in ENCODINGS {
        for text in &texts {
            assert_tokens(encoding, text, &reference(encoding).encode_ordinary(text));
        }
    }
}
