//! Writes a generated autonomous agent loop as session JSON: one
//! instruction, then STEPS tool steps (calls, results, thinking), the
//! session `.ci/screenshots` replays for the README's replay picture.
//! With `--chat`, the `session` bench's chat instead: STEPS turns, each a
//! user request, thinking, tool calls with their results and an answer.
//!
//! `cargo run --example long_loop -- [--chat] [STEPS] > loop.json`
//! (default 300).

#[path = "support/session_gen.rs"]
mod session_gen;

use session_gen::{LoopShape, agent_loop, chat};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let is_chat = args.first().is_some_and(|first| first == "--chat");
    if is_chat {
        args.remove(0);
    }
    let steps = match args.first() {
        Some(steps) => steps.parse()?,
        None => 300,
    };
    let state = match is_chat {
        true => chat(1, steps, 1).state(steps),
        false => agent_loop(41, &LoopShape::new(steps)).state(steps),
    };
    println!("{}", serde_json::to_string(&state)?);
    Ok(())
}
