//! Writes a generated autonomous agent loop as session JSON: one
//! instruction, then STEPS tool steps (calls, results, thinking), the
//! session `.ci/screenshots` replays for the README's replay picture.
//!
//! `cargo run --example long_loop -- [STEPS] > loop.json` (default 300).

#[path = "support/session_gen.rs"]
mod session_gen;

use session_gen::{LoopShape, agent_loop};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let steps = match std::env::args().nth(1) {
        Some(steps) => steps.parse()?,
        None => 300,
    };
    let state = agent_loop(41, &LoopShape::new(steps)).state(steps);
    println!("{}", serde_json::to_string(&state)?);
    Ok(())
}
