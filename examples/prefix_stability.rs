//! Replays 200 generated turns into a fixed budget and counts the turns whose
//! prompt prefix changed (a provider's prefix cache misses), with and without
//! the low-water mark: `cargo run --release --example prefix_stability`.

#[path = "support/session_gen.rs"]
mod session_gen;

use agent_context::{BuildResult, ContextBuilder, MemoryState};

/// Turns whose prompt no longer starts with all but the last message of the
/// previous turn's prompt, out of `turns`.
pub fn prefix_changes(turns: usize, budget: usize, low_water: f64) -> usize {
    let mut rng = session_gen::Rng::new(7);
    let mut state = session_gen::session(7, 0, 1);
    let mut builder = ContextBuilder::new();
    builder
        .model("gpt-4o")
        .max_tokens(budget)
        .policy_mut()
        .low_water = low_water;
    let mut previous: Option<BuildResult> = None;
    let mut changed = 0;
    for turn in 0..turns {
        session_gen::push_turn(&mut state, &mut rng, turn, 1);
        let result = build(&mut builder, &state, previous.as_ref());
        if let Some(previous) = &previous {
            let stable = previous.messages.take(previous.messages.len() - 1);
            if !result.messages.starts_with(&stable) {
                changed += 1;
            }
        }
        previous = Some(result);
    }
    changed
}

fn build(
    builder: &mut ContextBuilder,
    state: &MemoryState,
    previous: Option<&BuildResult>,
) -> BuildResult {
    if let Some(previous) = previous {
        builder.previous(previous);
    }
    builder.build(state).expect("the generated session fits")
}

#[allow(dead_code)]
fn main() {
    let (turns, budget) = (200, 48_000);
    for low_water in [0.8, 0.9, 1.0] {
        let changed = prefix_changes(turns, budget, low_water);
        println!("low_water {low_water:.1}: prefix changed on {changed} of {turns} turns");
    }
}
