//! Settings compiled once (`ContextBuilder::compile`): checked at compile
//! time, shared by builds and sessions, and building what the builder does.

use std::sync::Arc;

use agent_context::tokens::Calibration;
use agent_context::{ContextBuilder, ContextSession, ErrorKind, MemoryChunk, MemoryState, Role};

fn state() -> MemoryState {
    MemoryState::new()
        .with_system_prompt("You are terse.")
        .with_chunk(MemoryChunk::agent("u1", Role::User, "List the files."))
        .with_chunk(MemoryChunk::agent(
            "a1",
            Role::Assistant,
            "a.txt and b.txt.",
        ))
        .with_chunk(MemoryChunk::agent("u2", Role::User, "Open a.txt."))
}

fn option_of(builder: &ContextBuilder) -> String {
    match builder.compile().unwrap_err().kind() {
        ErrorKind::Option { option, .. } => option.clone(),
        other => panic!("not an option error: {other:?}"),
    }
}

#[test]
fn compiling_checks_the_settings_without_a_session() {
    let mut empty = ContextBuilder::new();
    empty.model("");
    assert_eq!(option_of(&empty), "model");
    let mut unknown = ContextBuilder::new();
    unknown.model("house-model-7");
    assert_eq!(option_of(&unknown), "max_tokens");
    let mut no_room = ContextBuilder::new();
    no_room.max_tokens(1_000).reserve_output(1_000);
    assert_eq!(option_of(&no_room), "reserve_output");
    // A session cannot be made with them either, and says why.
    let error = ContextSession::new(no_room, state()).unwrap_err();
    assert!(error.to_string().contains("reserve_output"), "{error}");
}

#[test]
fn a_compiled_config_builds_what_its_builder_builds() {
    let mut builder = ContextBuilder::new();
    builder
        .model("gpt-4o")
        .max_tokens(2_000)
        .reserve_output(500);
    let config = builder.compile().unwrap();
    assert_eq!((config.max_tokens(), config.budget()), (2_000, 1_500));
    assert_eq!(config.counter().unwrap().encoding_name(), "o200k_base");
    assert_eq!(
        config.build(&state()).unwrap(),
        builder.build(&state()).unwrap()
    );
    // Changing the builder afterwards leaves the compiled settings alone.
    builder.max_tokens(50_000);
    assert_eq!(config.build(&state()).unwrap().max_tokens, 2_000);
    assert_eq!(config.settings().compile().unwrap().budget(), 1_500);
}

#[test]
fn one_config_serves_sessions_on_several_threads() {
    let mut builder = ContextBuilder::new();
    builder.model("gpt-4o").max_tokens(4_000);
    let config = Arc::new(builder.compile().unwrap());
    let expected = ContextSession::new(builder, state())
        .unwrap()
        .build()
        .unwrap();
    std::thread::scope(|scope| {
        let runs: Vec<_> = (0..3)
            .map(|_| {
                let config = Arc::clone(&config);
                scope.spawn(move || {
                    let mut session = ContextSession::with_config((*config).clone(), state())?;
                    session.build()
                })
            })
            .collect();
        for run in runs {
            assert_eq!(run.join().unwrap().unwrap(), expected);
        }
    });
}

#[test]
fn an_estimate_reads_its_calibration_at_each_build() {
    let calibration = Calibration::new();
    let mut builder = ContextBuilder::new();
    builder
        .model("claude-sonnet-4")
        .max_tokens(4_000)
        .calibration(calibration.clone());
    let config = builder.compile().unwrap();
    let before = config.build(&state()).unwrap().token_count;
    // What usage taught after compiling applies to the next build.
    calibration
        .observe_counts("claude-sonnet-4", 100, 300)
        .unwrap();
    let after = config.build(&state()).unwrap().token_count;
    assert!(after > before, "{before} then {after}");
}

#[test]
fn a_session_given_bad_settings_keeps_its_own() {
    let mut builder = ContextBuilder::new();
    builder.max_tokens(4_000);
    let mut session = ContextSession::new(builder, state()).unwrap();
    let first = session.build().unwrap();
    let mut bad = session.builder().clone();
    bad.model("");
    assert!(session.set_builder(&bad).is_err());
    assert_eq!(session.builder().compile().unwrap().budget(), 4_000);
    session.forget_previous();
    assert_eq!(session.build().unwrap().messages, first.messages);
}
