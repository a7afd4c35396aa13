//! A stored chat keeps the prompt cache: built by a fresh engine after
//! every batch (as a fresh process builds it), it returns the prompts a
//! session that made every build returns, byte for byte, so the prompt's
//! prefix breaks no more often; and when it cannot extend the last build,
//! its report says why.

use std::sync::Arc;

use crate::common::temp::TempDir;
use crate::common::*;
use crate::session_gen::{self, LoopShape, Rng, agent_loop, push_turn};
use agent_context::store::{self, Store};
use agent_context::{
    BuildResult, ContextBuilder, ContextEngine, ContextSession, MemoryChunk, MemoryState,
    PreviousBuild,
};
use proptest::prelude::*;

const BUDGETS: [usize; 3] = [12_000, 32_000, 128_000];
const RESERVE: usize = 1_000;

fn builder(max_tokens: usize) -> ContextBuilder {
    let mut builder = ContextBuilder::new();
    builder
        .model("gpt-4o")
        .max_tokens(max_tokens)
        .reserve_output(RESERVE);
    builder
}

/// A store that fresh engines open again by its location.
struct Stored {
    location: String,
    _scratch: Box<dyn std::any::Any>,
}

impl Stored {
    fn sqlite() -> Stored {
        let dir = TempDir::new("stored-cache");
        let location = dir.join("chats.db").display().to_string();
        store::open(&location, true).unwrap();
        Stored {
            location,
            _scratch: Box::new(dir),
        }
    }

    #[cfg(feature = "postgres")]
    fn postgres() -> Stored {
        let schema = crate::common::postgres::Schema::new("stored_cache");
        let location = schema.url().to_owned();
        store::open(&location, true).unwrap();
        Stored {
            location,
            _scratch: Box::new(schema),
        }
    }

    /// The store as a new process opens it.
    fn open(&self) -> Arc<dyn Store> {
        store::open(&self.location, false).unwrap()
    }

    /// A fresh engine on the chat, as a new process makes it.
    fn engine(&self, builder: &ContextBuilder) -> ContextEngine {
        ContextEngine::open(self.open(), "chat", builder.clone()).unwrap()
    }
}

/// What a run of builds shows: how many builds there were, and the prompt
/// cache's reuse (stable prefix tokens over prompt tokens) of the session
/// and of the stored chat.
#[derive(Debug)]
struct Reuse {
    builds: usize,
    session: f64,
    stored: f64,
}

/// Appends `batches` after `opening` to a session and to the stored chat
/// (each batch saved by a fresh engine), builds both after every batch
/// (the chat by another fresh engine) and checks that their prompts and
/// stable prefixes are the same.
fn run(
    stored: &Stored,
    opening: &MemoryState,
    batches: &[Vec<MemoryChunk>],
    max_tokens: usize,
) -> Result<Reuse, TestCaseError> {
    let builder = builder(max_tokens);
    let mut session = ContextSession::new(builder.clone(), opening.clone()).unwrap();
    let mut writer = stored.engine(&builder);
    writer.set_system_prompt(opening.system_prompt.clone());
    writer.extend(opening.chunks.iter().cloned()).unwrap();
    writer.save().unwrap();
    let (mut stable, mut total) = ([0usize; 2], 0usize);
    for (index, batch) in batches.iter().enumerate() {
        let mut writer = stored.engine(&builder);
        writer.extend(batch.iter().cloned()).unwrap();
        writer.save().unwrap();
        session.extend(batch.iter().cloned()).unwrap();
        let expected = session.build().unwrap();
        let built = stored.engine(&builder).build().unwrap();
        let at = format!("batch {index} of {} at {max_tokens}", batches.len());
        assert_same_messages(&built, &expected, &at)?;
        prop_assert_eq!(built.stable_prefix_tokens, expected.stable_prefix_tokens, "{}", at);
        let outcome = if index == 0 {
            PreviousBuild::NoneKept
        } else {
            PreviousBuild::Extended
        };
        prop_assert_eq!(built.previous_build, Some(outcome), "{}", at);
        assert_within_budget(&built);
        stable[0] += expected.stable_prefix_tokens.unwrap_or(0);
        stable[1] += built.stable_prefix_tokens.unwrap_or(0);
        total += built.token_count;
        if std::env::var_os("SHOW_UNREAD").is_some() {
            eprintln!("{at}: unread {} of {} decisions {}", built.unread_chunks, built.unread_chunks + built.decisions.len(), built.decisions.len());
        }
    }
    let share = |stable: usize| stable as f64 / total.max(1) as f64;
    Ok(Reuse {
        builds: batches.len(),
        session: share(stable[0]),
        stored: share(stable[1]),
    })
}

fn assert_same_messages(
    built: &BuildResult,
    expected: &BuildResult,
    at: &str,
) -> Result<(), TestCaseError> {
    if built.messages == expected.messages {
        return Ok(());
    }
    let first = (built.messages.iter().zip(expected.messages.iter()))
        .position(|(a, b)| a != b)
        .unwrap_or(built.messages.len().min(expected.messages.len()));
    let show = |result: &BuildResult| {
        result.messages.get(first).map_or_else(String::new, |m| {
            let text = m.content.as_str();
            text[..text.floor_char_boundary(600)].to_owned()
        })
    };
    Err(TestCaseError::fail(format!(
        "{at}: the stored chat's prompt differs from the session's at message {first} of \
         {}/{}:\nstored: {}\nsession: {}",
        built.messages.len(),
        expected.messages.len(),
        show(built),
        show(expected)
    )))
}

/// The steps of a loop in batches of one to four steps, as agents save them.
fn loop_batches(seed: u64, shape: &LoopShape) -> (MemoryState, Vec<Vec<MemoryChunk>>) {
    let agent_loop = agent_loop(seed, shape);
    let mut rng = Rng::new(seed ^ 0x5EED);
    let mut batches = Vec::new();
    let mut steps = agent_loop.steps.iter();
    loop {
        let take = rng.range(1, 5);
        let batch: Vec<MemoryChunk> = steps.by_ref().take(take).flatten().cloned().collect();
        if batch.is_empty() {
            break;
        }
        batches.push(batch);
    }
    (agent_loop.opening, batches)
}

/// A turn-based chat: a pinned task, then `turns` turns (a user message,
/// thinking, tool calls and results, an answer), one batch each.
fn chat_batches(seed: u64, turns: usize, scale: usize) -> (MemoryState, Vec<Vec<MemoryChunk>>) {
    let opening = session_gen::session(seed, 0, scale);
    let mut rng = Rng::new(seed);
    let mut state = opening.clone();
    let batches = (0..turns)
        .map(|turn| {
            let before = state.chunks.len();
            push_turn(&mut state, &mut rng, turn, scale);
            state.chunks[before..].to_vec()
        })
        .collect();
    (opening, batches)
}

fn loop_shape() -> impl Strategy<Value = (u64, LoopShape)> {
    (any::<u64>(), 60usize..=240, prop::bool::weighted(0.3)).prop_map(|(seed, steps, users)| {
        let mut shape = LoopShape::new(steps);
        if users {
            shape.user_every = Some(40);
        }
        shape.pinned_at = Some(steps / 3);
        (seed, shape)
    })
}

proptest! {
    #![proptest_config(proptest_config_with(3))]

    /// Autonomous loops: one instruction, hundreds of steps with parallel
    /// calls and results up to ~20 KB, saved in batches and built after
    /// each by a fresh engine.
    #[test]
    fn a_stored_loop_returns_the_sessions_prompts((seed, shape) in loop_shape()) {
        let (opening, batches) = loop_batches(seed, &shape);
        for max_tokens in BUDGETS {
            let reuse = run(&Stored::sqlite(), &opening, &batches, max_tokens)?;
            prop_assert!((reuse.session - reuse.stored).abs() <= 0.02, "{reuse:?}");
        }
    }

    /// Turn-based chats: a user message and its tool calls each turn.
    #[test]
    fn a_stored_chat_returns_the_sessions_prompts(seed in any::<u64>(), turns in 30usize..90) {
        let (opening, batches) = chat_batches(seed, turns, 1);
        for max_tokens in BUDGETS {
            let reuse = run(&Stored::sqlite(), &opening, &batches, max_tokens)?;
            prop_assert!((reuse.session - reuse.stored).abs() <= 0.02, "{reuse:?}");
        }
    }
}
