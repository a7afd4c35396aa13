//! Estimates learn from what the provider billed, with synthetic figures.

use agent_context::tokens::{
    Calibration, Encoding, EstimateFactor, Framing, TiktokenCounter, TokenCounter,
};
use agent_context::{
    BuildResult, ContextBuilder, ContextSession, ErrorKind, MemoryChunk, MemoryState, Role,
};

const MODEL: &str = "claude-sonnet-4";

fn session() -> MemoryState {
    MemoryState::new()
        .with_chunk(MemoryChunk::agent(
            "u1",
            Role::User,
            "Summarise the build log and say which test failed.",
        ))
        .with_chunk(MemoryChunk::agent(
            "a1",
            Role::Assistant,
            "The parser test `hex_charref` failed: &#x; was accepted.",
        ))
        .with_chunk(MemoryChunk::agent(
            "u2",
            Role::User,
            "Fix it, then run it again.",
        ))
}

fn build(calibration: &Calibration, framing: Framing) -> BuildResult {
    ContextBuilder::new()
        .model(MODEL)
        .framing(framing)
        .calibration(calibration.clone())
        .build(&session())
        .unwrap()
}

/// The `o200k_base` count of the messages' content: what a ratio is taken
/// against.
fn base_tokens(result: &BuildResult) -> usize {
    let o200k = TiktokenCounter::new(Encoding::O200kBase).unwrap();
    result
        .messages
        .iter()
        .map(|m| o200k.count(&m.content))
        .sum()
}

fn factor(f: f64) -> EstimateFactor {
    EstimateFactor::new(f).unwrap()
}

#[test]
fn after_a_bill_above_the_estimate_the_next_build_bounds_it() {
    for framing in [Framing::OpenAi, Framing::None] {
        for ratio in [1.6, 2.0, 3.7] {
            let calibration = Calibration::new();
            let first = build(&calibration, framing);
            let billed = (base_tokens(&first) as f64 * ratio).ceil() as usize;
            let learned = calibration.observe(&first, billed).unwrap();
            // The ratio plus the 10% margin (1.6 * 1.1 = 1.76), never below the default.
            assert!(learned >= factor(ratio * 1.1), "{ratio}: {learned}");
            assert!(learned >= EstimateFactor::DEFAULT);
            let next = build(&calibration, framing);
            assert!(
                next.token_count >= billed,
                "{framing:?} x{ratio}: {} < billed {billed}",
                next.token_count
            );
            assert_eq!(next.encoding, format!("estimate(o200k_base*{learned})"));
        }
    }
}

#[test]
fn the_factor_never_drops() {
    let calibration = Calibration::new();
    let result = build(&calibration, Framing::OpenAi);
    let base = base_tokens(&result);
    // A bill below the default's estimate teaches nothing new.
    assert_eq!(
        calibration.observe(&result, base).unwrap(),
        EstimateFactor::DEFAULT
    );
    assert_eq!(calibration.factor(MODEL), EstimateFactor::DEFAULT);
    let high = calibration.observe(&result, base * 2).unwrap();
    assert_eq!(high, factor(2.2));
    assert_eq!(calibration.observe(&result, base).unwrap(), high);
    assert_eq!(calibration.factor(MODEL), high);
    // Other models keep the default.
    assert_eq!(calibration.factor("claude-opus-4"), EstimateFactor::DEFAULT);
}

#[test]
fn a_floor_set_by_hand_holds_and_can_be_raised() {
    let calibration = Calibration::with_floor(factor(1.2));
    assert_eq!(calibration.factor(MODEL), factor(1.2));
    let low = build(&calibration, Framing::None);
    let default = build(&Calibration::new(), Framing::None);
    assert!(low.token_count < default.token_count);
    assert_eq!(
        calibration.observe_counts(MODEL, 100, 150).unwrap(),
        factor(1.65)
    );
    assert_eq!(
        calibration.observe_counts(MODEL, 100, 110).unwrap(),
        factor(1.65)
    );
}

#[test]
fn bad_figures_are_rejected_and_teach_nothing() {
    let calibration = Calibration::new();
    let result = build(&calibration, Framing::OpenAi);
    for (base, billed) in [(100, 0), (0, 100), (0, 0), (100, 1_601)] {
        let error = calibration.observe_counts(MODEL, base, billed).unwrap_err();
        assert!(
            matches!(error.kind(), ErrorKind::Option { option, .. } if option == "billed_tokens"),
            "{error}"
        );
    }
    let error = calibration.observe(&result, 0).unwrap_err();
    assert!(
        error.to_string().contains("both must be above 0"),
        "{error}"
    );
    assert_eq!(calibration.factor(MODEL), EstimateFactor::DEFAULT);
    // The largest ratio accepted is MAX (16x).
    assert!(calibration.observe_counts(MODEL, 100, 1_600).is_ok());
}

#[test]
fn the_margin_never_carries_a_factor_past_max() {
    let calibration = Calibration::new();
    // 16x plus the 10% margin would be 17.6: it stops at MAX.
    let learned = calibration.observe_counts(MODEL, 100, 1_600).unwrap();
    assert_eq!(learned, EstimateFactor::MAX);
    assert_eq!(calibration.factor(MODEL), EstimateFactor::MAX);
    // Just under MAX, the margin is clamped too.
    let calibration = Calibration::new();
    let learned = calibration.observe_counts(MODEL, 1_000, 15_000).unwrap();
    assert_eq!(learned, EstimateFactor::MAX);
    // Below, the margin applies in full.
    let learned = calibration.observe_counts("other", 1_000, 10_000).unwrap();
    assert_eq!(learned, factor(11.0));
}

#[test]
fn exact_builds_teach_nothing() {
    let calibration = Calibration::new();
    let exact = ContextBuilder::new()
        .calibration(calibration.clone())
        .build(&session())
        .unwrap();
    assert!(exact.token_count_exact);
    let unchanged = calibration.observe(&exact, exact.token_count * 3).unwrap();
    assert_eq!(unchanged, EstimateFactor::DEFAULT);
    assert_eq!(calibration.factor("gpt-4o"), EstimateFactor::DEFAULT);
    // And a calibration never changes an exact count.
    calibration.observe_counts("gpt-4o", 10, 30).unwrap();
    let again = ContextBuilder::new()
        .calibration(calibration.clone())
        .build(&session())
        .unwrap();
    assert_eq!(again.token_count, exact.token_count);
}

#[test]
fn clones_share_what_is_learned_across_threads() {
    let calibration = Calibration::new();
    let handles: Vec<_> = (2..=9)
        .map(|ratio| {
            let calibration = calibration.clone();
            std::thread::spawn(move || {
                calibration
                    .observe_counts(MODEL, 1000, 1000 * ratio)
                    .unwrap()
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    // The largest ratio (9) plus 10%.
    assert_eq!(calibration.factor(MODEL), factor(9.9));
}

/// A session keeps counted chunks between turns; a factor learned after a
/// turn must still reach the chunks counted before it.
#[test]
fn a_session_recounts_what_it_cached_when_the_factor_changes() {
    let calibration = Calibration::new();
    let mut builder = ContextBuilder::new();
    builder.model(MODEL).calibration(calibration.clone());
    let mut session = ContextSession::new(builder, session()).unwrap();
    let first = session.build().unwrap();
    let billed = base_tokens(&first) * 3;
    calibration.observe(&first, billed).unwrap();
    let second = session.build().unwrap();
    assert!(
        second.token_count >= billed,
        "{} < billed {billed}",
        second.token_count
    );
    // Nothing changed since: the third build is served from the cache.
    let third = session.build().unwrap();
    assert_eq!(third.token_count, second.token_count);
    assert_eq!(session.stats().chunks_rendered, 0);
}
