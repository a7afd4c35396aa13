//! The build report's text (`BuildResult::explain`): its columns, and what
//! it says of each cut.

use agent_context::budget::Decision;
use agent_context::{BuildResult, ChunkKind, ContextBuilder, MemoryChunk, MemoryState, Role};

/// A run of tests whose ~23k-token log the default tool-result cap cuts,
/// before the latest user turn and a newer tool use.
fn session() -> MemoryState {
    let log: Vec<String> = (0..6000).map(|i| format!("line{i} ok")).collect();
    MemoryState::new()
        .with_chunk(MemoryChunk::agent("u1", Role::User, "Run the tests."))
        .with_chunk(
            MemoryChunk::new("c1", ChunkKind::Workflow)
                .with_tool("bash")
                .with_call_id("k"),
        )
        .with_chunk(
            MemoryChunk::new("r1", ChunkKind::Environment)
                .with_tool("bash")
                .with_call_id("k")
                .with_text(log.join(" ")),
        )
        .with_chunk(MemoryChunk::agent("a1", Role::Assistant, "All green."))
        .with_chunk(MemoryChunk::agent("u2", Role::User, "Now the docs."))
        .with_chunk(
            MemoryChunk::new("c2", ChunkKind::Workflow)
                .with_tool("ls")
                .with_call_id("k2"),
        )
        .with_chunk(
            MemoryChunk::new("r2", ChunkKind::Environment)
                .with_tool("ls")
                .with_call_id("k2")
                .with_text("docs/"),
        )
}

fn build(state: &MemoryState, max_tokens: usize, low_water: f64) -> BuildResult {
    let mut builder = ContextBuilder::new();
    builder.max_tokens(max_tokens).policy_mut().low_water = low_water;
    builder.build(state).unwrap()
}

fn row<'e>(explained: &'e str, id: &str) -> &'e str {
    let start = format!("  {id} ");
    explained
        .lines()
        .find(|line| line.starts_with(&start))
        .unwrap_or_else(|| panic!("no row for {id} in\n{explained}"))
}

#[test]
fn the_id_column_fits_every_id() {
    let long = "a-chunk-id-far-longer-than-twenty-four-characters";
    let state = MemoryState::new()
        .with_chunk(MemoryChunk::agent("u1", Role::User, "hi"))
        .with_chunk(MemoryChunk::agent(long, Role::Assistant, "hello"))
        .with_chunk(MemoryChunk::agent("漢字", Role::Assistant, "ok"))
        .with_chunk(MemoryChunk::agent("two\nlines", Role::Assistant, "ok"));
    let explained = ContextBuilder::new().build(&state).unwrap().explain();
    let column = |line: &str, word: &str| {
        let at = line
            .find(word)
            .unwrap_or_else(|| panic!("{word} in {line}"));
        line[..at].chars().count()
    };
    let header = explained.lines().nth(1).unwrap();
    let decision_at = column(header, "decision");
    for id in ["u1", long, "漢字", "two\\nlines"] {
        assert_eq!(
            column(row(&explained, id), "kept"),
            decision_at,
            "{explained}"
        );
    }
}

#[test]
fn a_chunk_cut_then_dropped_says_both() {
    let result = build(&session(), 3000, 0.8);
    let r1 = &result.decisions[2];
    let from = r1.truncated_from.expect("the cap cut r1");
    assert!(from > r1.tokens && r1.tokens > 8000, "{r1:?}");
    let expected = format!("  truncated {from} -> {}, then dropped (budget)", r1.tokens);
    let explained = result.explain();
    assert!(row(&explained, "r1").ends_with(&expected), "{explained}");

    let result = build(&session(), 12_000, 0.8);
    let Decision::Truncated {
        tokens_before,
        tokens_after,
        cap,
    } = result.decisions[2].decision
    else {
        panic!("{:?}", result.decisions[2]);
    };
    assert_eq!(result.decisions[2].truncated_from, None);
    let expected = format!("  truncated {tokens_before} -> {tokens_after} (cap {cap})");
    let explained = result.explain();
    assert!(row(&explained, "r1").ends_with(&expected), "{explained}");
}

#[test]
fn the_report_says_what_set_the_cut() {
    let state = session();
    let marked = build(&state, 3000, 0.8);
    assert_eq!(marked.trim_target, Some(2400));
    assert!(
        marked.explain().contains(
            "\n  trimmed to 80% for cache stability: at most 2400 of 3000 tokens \
             (the low-water mark), not the budget\n"
        ),
        "{}",
        marked.explain()
    );
    let full = build(&state, 3000, 1.0);
    assert_eq!(full.trim_target, Some(3000));
    assert!(
        full.explain()
            .contains("\n  trimmed to fit the budget: at most 3000 tokens\n"),
        "{}",
        full.explain()
    );
    let fits = build(&state, 12_000, 0.8);
    assert_eq!(fits.trim_target, None);
    assert!(!fits.explain().contains("trimmed"), "{}", fits.explain());

    let mut builder = ContextBuilder::new();
    builder.max_tokens(3000).previous(&marked);
    let next = state
        .clone()
        .with_chunk(MemoryChunk::agent("a2", Role::Assistant, "On it."));
    let kept = builder.build(&next).unwrap();
    assert_eq!(kept.trim_target, None);
    assert!(
        kept.explain()
            .contains("\n  kept the previous build's cut for cache stability\n"),
        "{}",
        kept.explain()
    );

    // What a `context_management` edit cleared is no cut of the budget's.
    let mut edited = ContextBuilder::new();
    edited.max_tokens(12_000).policy_mut().context_management = Some(
        serde_json::from_str(
            r#"{"edits": [{"type": "clear_tool_uses_20250919",
                "trigger": {"type": "tool_uses", "value": 0},
                "keep": {"type": "tool_uses", "value": 1}}]}"#,
        )
        .unwrap(),
    );
    let cleared = edited.build(&state).unwrap();
    assert!(matches!(
        cleared.decisions[2].decision,
        Decision::Stubbed { .. }
    ));
    let explained = cleared.explain();
    assert!(
        !explained.contains("cut") && !explained.contains("trimmed"),
        "{explained}"
    );
}
