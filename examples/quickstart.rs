//! Build the bundled coding-agent session into an 8,000-token window and print
//! what went where: `cargo run --example quickstart`. The README's Rust
//! quickstart is this file (a test checks it).

use agent_context::{ContextBuilder, MemoryState};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/coding-agent.json");
    let state = MemoryState::from_json_str(&std::fs::read_to_string(path)?)?;
    let result = ContextBuilder::new()
        .model("gpt-4o")
        .max_tokens(8_000)
        .reserve_output(1_000)
        .build(&state)?;
    for message in &result.messages {
        let (role, tokens, chunks) = (message.role, message.tokens, message.chunk_ids.len());
        println!("{:<9} {tokens:>5} tokens  {chunks} chunks", role.as_str());
    }
    println!("total {} of {} tokens", result.token_count, result.budget);
    // The body for OpenAI's Chat Completions API (text mode).
    let request = agent_context::adapter::openai(&result);
    println!(
        "{} messages ready to send",
        request["messages"].as_array().map_or(0, Vec::len)
    );
    Ok(())
}
