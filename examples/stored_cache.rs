//! How much of each prompt a provider's prompt cache can reuse, for an
//! autonomous loop kept in a store and built by a fresh engine after every
//! batch (as `chat build` and Python's `Engine` build it), beside a session
//! that made every build and beside cold builds (a build that starts from
//! nothing every time): `cargo run --release --example stored_cache`.
//!
//! The loop: one instruction, then 300 steps (thinking, one to three tool
//! calls, results of a few bytes to ~20 KB) appended in batches of one to
//! four steps, built after each at 32,000 tokens with 1,000 reserved under
//! the default policy. Reuse is the stable prefix tokens (the leading
//! messages equal to the previous prompt's) over all prompt tokens; the
//! prefix *broke* on a build when a message before the previous prompt's
//! last one changed.

#[path = "support/session_gen.rs"]
mod session_gen;

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_context::store::{SqliteStore, Store};
use agent_context::{BuildResult, ContextBuilder, ContextEngine, ContextSession};
use session_gen::{LoopShape, Rng, agent_loop};

const STEPS: usize = 300;
const MAX_TOKENS: usize = 32_000;
const RESERVE: usize = 1_000;

/// A path's builds: reuse, breaks, and the median time of a build.
#[derive(Default)]
struct Tally {
    stable: usize,
    total: usize,
    broke: usize,
    times: Vec<Duration>,
    previous: Option<BuildResult>,
}

impl Tally {
    fn add(&mut self, result: BuildResult, took: Duration) {
        if let Some(previous) = &self.previous {
            let kept = previous.messages.len().saturating_sub(1);
            let same = (previous.messages.iter().zip(result.messages.iter()))
                .take_while(|(a, b)| a == b)
                .count();
            self.broke += usize::from(same < kept);
            self.stable += stable_tokens(previous, &result);
            self.total += result.token_count;
        }
        self.times.push(took);
        self.previous = Some(result);
    }

    fn line(&mut self, name: &str) -> String {
        self.times.sort();
        let median = self.times[self.times.len() / 2];
        let builds = self.times.len() - 1;
        format!(
            "{name:<28} reuse {:.3}   prefix broke on {:>3} of {builds} builds   median build {median:.1?}",
            self.stable as f64 / self.total.max(1) as f64,
            self.broke
        )
    }
}

/// Tokens of the leading messages of `now` equal to `before`'s.
fn stable_tokens(before: &BuildResult, now: &BuildResult) -> usize {
    (before.messages.iter().zip(now.messages.iter()))
        .take_while(|(a, b)| a == b)
        .map(|(_, b)| b.tokens)
        .sum()
}

fn main() -> agent_context::Result<()> {
    let agent_loop = agent_loop(2026, &LoopShape::new(STEPS));
    let batches = agent_loop.batches(&mut Rng::new(2026));
    let mut builder = ContextBuilder::new();
    builder
        .model("gpt-4o")
        .max_tokens(MAX_TOKENS)
        .reserve_output(RESERVE);

    let dir = std::env::temp_dir().join(format!("stored-cache-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("the temp dir is writable");
    let db = dir.join("chats.db");
    let open = || -> agent_context::Result<ContextEngine> {
        let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&db)?);
        ContextEngine::open(store, "loop", builder.clone())
    };
    let mut writer = open()?;
    writer.set_system_prompt(agent_loop.opening.system_prompt.clone());
    writer.extend(agent_loop.opening.chunks.iter().cloned())?;
    writer.save()?;

    let mut session = ContextSession::new(builder.clone(), agent_loop.opening.clone())?;
    let mut state = agent_loop.opening.clone();
    let (mut in_session, mut stored, mut cold) =
        (Tally::default(), Tally::default(), Tally::default());
    for batch in &batches {
        let mut writer = open()?;
        writer.extend(batch.iter().cloned())?;
        writer.save()?;
        session.extend(batch.iter().cloned())?;
        state.chunks.extend(batch.iter().cloned());

        let start = Instant::now();
        let result = session.build()?;
        in_session.add(result, start.elapsed());
        let start = Instant::now();
        let result = open()?.build()?;
        stored.add(result, start.elapsed());
        let start = Instant::now();
        let result = builder.build(&state)?;
        cold.add(result, start.elapsed());
    }
    std::fs::remove_dir_all(&dir).ok();
    println!(
        "{STEPS}-step loop, {} batches, {MAX_TOKENS} tokens with {RESERVE} reserved",
        batches.len()
    );
    println!("{}", in_session.line("session (in process)"));
    println!("{}", stored.line("stored chat (fresh engine)"));
    println!("{}", cold.line("cold build every time"));
    Ok(())
}
