//! Property tests over random sessions, budgets and caps: the README's guarantees.

mod common;

use agent_context::tokens::Encoding;
use agent_context::{ChunkKind, ContextBuilder, ErrorKind};
use common::*;
use proptest::prelude::*;

proptest! {
    #![proptest_config(proptest_config())]

    #[test]
    fn every_build_keeps_every_promise(
        state in session(24),
        max_tokens in 40usize..1200,
        reserve in 0usize..40,
        cl100k in any::<bool>(),
        cap in 20usize..80,
        low_water in prop_oneof![Just(1.0), Just(0.8), 0.3f64..1.0],
    ) {
        let (model, encoding) =
            if cl100k { ("gpt-4", Encoding::Cl100kBase) } else { ("gpt-4o", Encoding::O200kBase) };
        let mut builder = ContextBuilder::new();
        builder.model(model).max_tokens(max_tokens).reserve_output(reserve);
        let policy = builder.policy_mut();
        policy.low_water = low_water;
        policy.recent_turns = 1;
        policy.caps.set_kind(ChunkKind::Environment, Some(cap)).set_kind(ChunkKind::Thinking, Some(cap));
        match builder.build(&state) {
            Ok(result) => {
                assert_within_budget(&result);
                assert_recount(&result, encoding);
                assert_units_whole(&state, &result);
                assert_protected_present(&state, &result);
                assert_degradations_hold(&state, &result, encoding, cap);
                let again = builder.build(&state).unwrap();
                prop_assert_eq!(
                    serde_json::to_string(&result).unwrap(),
                    serde_json::to_string(&again).unwrap()
                );
            }
            Err(error) => match error.kind() {
                ErrorKind::BudgetExceeded { required, available, .. } => {
                    prop_assert_eq!(*available, max_tokens - reserve);
                    // `required` is exactly what the protected content needs:
                    // with that much available the build succeeds.
                    builder.max_tokens(required + reserve);
                    let fits = builder.build(&state);
                    prop_assert!(fits.is_ok(), "{:?} with {} available", fits.err(), required);
                }
                other => prop_assert!(false, "unexpected error {other:?}"),
            },
        }
    }

    #[test]
    fn a_larger_budget_never_keeps_less(
        state in session(20),
        max_tokens in 60usize..2000,
        extra in 1usize..800,
        low_water in prop_oneof![Just(1.0), Just(0.8)],
    ) {
        let build = |max: usize| {
            let mut builder = ContextBuilder::new();
            builder.max_tokens(max).policy_mut().low_water = low_water;
            builder.build(&state)
        };
        if let (Ok(small), Ok(large)) = (build(max_tokens), build(max_tokens + extra)) {
            prop_assert!(large.token_count >= small.token_count);
            for id in &small.included {
                prop_assert!(large.included.contains(id), "{id} kept at {max_tokens} but not above");
            }
        }
    }

    #[test]
    fn the_previous_cut_only_grows(state in session(30), max_tokens in 200usize..1500, split in 0.3f64..0.9) {
        let cut = (state.chunks.len() as f64 * split) as usize;
        let mut earlier = state.clone();
        earlier.chunks.truncate(cut);
        let mut builder = ContextBuilder::new();
        builder.max_tokens(max_tokens);
        if let Ok(first) = builder.build(&earlier) {
            builder.previous(&first);
            if let Ok(second) = builder.build(&state) {
                assert_within_budget(&second);
                assert_units_whole(&state, &second);
                for decision in first.decisions.iter().filter(|d| !d.is_included()) {
                    prop_assert!(second.excluded.contains(&decision.id), "{} came back", decision.id);
                }
            }
        }
    }
}
