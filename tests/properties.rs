//! Property tests over random sessions and budgets: the README's guarantees.

mod common;

use agent_context::tokens::Encoding;
use agent_context::{ContextBuilder, ErrorKind};
use common::*;
use proptest::prelude::*;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 96,
        ..ProptestConfig::default()
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
    ) {
        let (model, encoding) =
            if cl100k { ("gpt-4", Encoding::Cl100kBase) } else { ("gpt-4o", Encoding::O200kBase) };
        let mut builder = ContextBuilder::new();
        builder.model(model).max_tokens(max_tokens).reserve_output(reserve);
        match builder.build(&state) {
            Ok(result) => {
                assert_within_budget(&result);
                assert_recount(&result, encoding);
                assert_units_whole(&state, &result);
                assert_protected_present(&state, &result);
                let again = builder.build(&state).unwrap();
                prop_assert_eq!(
                    serde_json::to_string(&result).unwrap(),
                    serde_json::to_string(&again).unwrap()
                );
            }
            Err(error) => match error.kind() {
                ErrorKind::BudgetExceeded { required, available, .. } => {
                    prop_assert!(required > available);
                    prop_assert_eq!(*available, max_tokens - reserve);
                }
                other => prop_assert!(false, "unexpected error {other:?}"),
            },
        }
    }

    #[test]
    fn a_larger_budget_never_keeps_less(state in session(20), max_tokens in 60usize..2000, extra in 1usize..800) {
        let build = |max: usize| ContextBuilder::new().max_tokens(max).build(&state);
        if let (Ok(small), Ok(large)) = (build(max_tokens), build(max_tokens + extra)) {
            prop_assert!(large.included.len() >= small.included.len());
            for id in &small.included {
                prop_assert!(large.included.contains(id), "{id} kept at {max_tokens} but not above");
            }
        }
    }
}
