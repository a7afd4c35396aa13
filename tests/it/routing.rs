//! Model names through a build: a name the model table does not hold is an
//! estimate with a warning naming it, a fine-tune of a known one is exact.
//! (The routing table itself is checked against tiktoken's in
//! `src/tokens/routing_tests.rs`.)

use agent_context::{ContextBuilder, MemoryChunk, MemoryState, Role};

#[test]
fn a_look_alike_build_is_an_estimate_with_a_warning_naming_the_model() {
    let state = MemoryState::new().with_chunk(MemoryChunk::agent("u1", Role::User, "hello"));
    for model in ["gpt-4.2", "gpt-4x", "gpt-4o1"] {
        let result = ContextBuilder::new()
            .model(model)
            .max_tokens(1000)
            .build(&state)
            .unwrap();
        assert!(!result.token_count_exact, "{model}");
        assert_eq!(
            result.warnings,
            [format!(
                "model {model:?} is not in the model table; token counts are estimates: \
                 estimate(o200k_base*1.6)"
            )]
        );
    }
    let exact = ContextBuilder::new()
        .model("ft:gpt-4o:acme::abc")
        .build(&state)
        .unwrap();
    assert!(exact.token_count_exact);
    assert!(exact.warnings.is_empty(), "{:?}", exact.warnings);
}
