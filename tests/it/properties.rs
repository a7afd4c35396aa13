//! Property tests over random sessions, budgets and caps: the README's guarantees.

use crate::common::*;
use agent_context::tokens::Encoding;
use agent_context::{ChunkKind, ContextBuilder, Error, ErrorKind};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

/// The tokens the protected content needs, when `error` is the one a build
/// over `max_tokens - reserve` must give for content that does not fit:
/// `BudgetExceeded`, its numbers those of the build, `required` beyond
/// `available`. Any other error fails the case.
fn required_beyond(
    error: &Error,
    max_tokens: usize,
    reserve: usize,
) -> Result<usize, TestCaseError> {
    match error.kind() {
        ErrorKind::BudgetExceeded {
            required,
            available,
            max_tokens: max,
            reserve_output,
        } => {
            prop_assert_eq!(*max, max_tokens);
            prop_assert_eq!(*reserve_output, reserve);
            prop_assert_eq!(*available, max_tokens - reserve);
            prop_assert!(required > available, "{error}");
            Ok(*required)
        }
        other => Err(TestCaseError::fail(format!("unexpected error {other:?}"))),
    }
}

/// Checks that `error` is [`required_beyond`]'s, then sets the case aside:
/// the property is about builds that fit, and proptest draws another case
/// (failing the test if too many cases are set aside, see [`config`]).
fn set_aside<T>(error: &Error, max_tokens: usize) -> Result<T, TestCaseError> {
    required_beyond(error, max_tokens, 0)?;
    Err(TestCaseError::reject("protected content over the budget"))
}

/// [`proptest_config`], failing a test that sets aside more cases than it
/// runs: about one generated budget in five is too small for the protected
/// content, so many more means the builds fail for another reason.
fn config() -> ProptestConfig {
    let config = proptest_config();
    ProptestConfig {
        max_global_rejects: config.cases,
        ..config
    }
}

proptest! {
    #![proptest_config(config())]

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
            Err(error) => {
                let required = required_beyond(&error, max_tokens, reserve)?;
                // `required` is exactly what the protected content needs:
                // with that much available the build succeeds, one less fails.
                builder.max_tokens(required + reserve);
                let fits = builder.build(&state);
                prop_assert!(fits.is_ok(), "{:?} with {} available", fits.err(), required);
                if required > 1 {
                    builder.max_tokens(required + reserve - 1);
                    let short = builder.build(&state).err().ok_or_else(|| {
                        TestCaseError::fail(format!("fits in {} tokens", required - 1))
                    })?;
                    prop_assert_eq!(required_beyond(&short, required + reserve - 1, reserve)?, required);
                }
            }
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
        let larger = max_tokens + extra;
        match (build(max_tokens), build(larger)) {
            (Ok(small), Ok(large)) => {
                prop_assert!(large.token_count >= small.token_count);
                for id in small.included() {
                    prop_assert!(large.included().any(|i| i == id), "{id} kept at {max_tokens} but not above");
                }
            }
            (Ok(_), Err(error)) => prop_assert!(false, "fits in {max_tokens} but not in {larger}: {error}"),
            (Err(error), Ok(_)) => {
                let required = required_beyond(&error, max_tokens, 0)?;
                prop_assert!(required <= larger, "needs {required} yet fits in {larger}");
            }
            (Err(small), Err(large)) => {
                // The protected content needs the same whatever the budget.
                prop_assert_eq!(required_beyond(&small, max_tokens, 0)?, required_beyond(&large, larger, 0)?);
                return set_aside(&small, max_tokens);
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
        let first = builder.build(&earlier).or_else(|e| set_aside(&e, max_tokens))?;
        builder.previous(&first);
        let second = builder.build(&state).or_else(|e| set_aside(&e, max_tokens))?;
        assert_within_budget(&second);
        assert_units_whole(&state, &second);
        for decision in first.decisions.iter().filter(|d| !d.is_included()) {
            prop_assert!(second.excluded().any(|i| i == &decision.id), "{} came back", decision.id);
        }
    }
}
