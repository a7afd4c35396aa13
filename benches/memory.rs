//! Peak memory of a session of ~1M tokens against the bytes of its text.
//!
//! `cargo bench --features bench --bench memory`. Heap bytes are counted exactly by a
//! counting allocator; the process's resident high-water mark (Linux,
//! `/proc/self/status`, allocator overhead included) is printed beside them.
//! The tokenizer tables are loaded first and left out of both figures.
//!
//! The turn loop is the usual one: the session is built cold, the caller
//! uses the result and drops it, a user turn arrives, and the session is
//! built again. The peak covers generating the session, its cache, the
//! previous build it keeps, and each build while it runs with its result.
//! A second run has the caller still hold the cold result during the warm
//! build. A third builds on two threads (a helper holds the tokenizer's
//! memo of recent pieces, and a batch of rendered chunks, while the build
//! runs). Then the first loop runs on sessions of about 2M, 4M and 10M
//! tokens (heap only): memory must grow linearly with the session.

#[path = "../examples/support/session_gen.rs"]
mod session_gen;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use agent_context::{BuildResult, ContextBuilder, ContextSession, MemoryChunk, MemoryState, Role};

/// The system allocator, counting live bytes and their high-water mark.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(bytes: usize) {
    let live = LIVE.fetch_add(bytes, Relaxed) + bytes;
    PEAK.fetch_max(live, Relaxed);
}

// SAFETY: every call is forwarded to `System` unchanged; the counters only
// observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            grew(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            LIVE.fetch_sub(layout.size(), Relaxed);
            grew(new_size);
        }
        new
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn status_kib(field: &str) -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The bytes of the session's text: every `text`, and every `data` as
/// compact JSON.
fn text_bytes(state: &MemoryState) -> usize {
    let chunk = |c: &MemoryChunk| {
        c.text.as_ref().map_or(0, String::len) + c.data.as_ref().map_or(0, |d| d.as_str().len())
    };
    state.chunks.iter().map(chunk).sum()
}

struct Run {
    text: usize,
    state: usize,
    heap_peak: usize,
    rss_peak: Option<usize>,
    chunks: usize,
    tokens: [usize; 2],
}

/// Returns freed heap memory to the system where the allocator can (glibc).
fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        unsafe extern "C" {
            fn malloc_trim(pad: usize) -> i32;
        }
        // SAFETY: malloc_trim only releases free memory; it takes no pointers.
        unsafe { malloc_trim(0) };
    }
}

/// One turn loop; heap figures are above `tables`, the live bytes once the
/// tokenizer tables are loaded.
fn run(builder: &ContextBuilder, tables: usize, turns: usize, hold_cold_result: bool) -> Run {
    // Loading the tokenizer frees its scratch (decompressed and interim
    // tables); hand that memory back first, or the session would grow into it unseen.
    trim_heap();
    let rss_base = status_kib("VmRSS:");
    // Reset the resident high-water mark to the current resident size.
    let rss_reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    PEAK.store(LIVE.load(Relaxed), Relaxed);

    let state = session_gen::session(1, turns, 1);
    let text = text_bytes(&state);
    let state_bytes = LIVE.load(Relaxed) - tables;
    let mut session = ContextSession::new(builder.clone(), state).expect("a valid session");
    let cold: BuildResult = session.build().expect("the cold build fits");
    let cold_tokens = cold.token_count;
    let held = hold_cold_result.then_some(cold);
    session
        .push(MemoryChunk::agent("next", Role::User, "And now?"))
        .expect("a new id");
    let warm = session.build().expect("the warm build fits");
    let run = Run {
        text,
        state: state_bytes,
        heap_peak: PEAK.load(Relaxed) - tables,
        rss_peak: match (rss_reset, rss_base, status_kib("VmHWM:")) {
            (true, Some(base), Some(peak)) => Some(peak.saturating_sub(base) * 1024),
            _ => None,
        },
        chunks: session.state().chunks.len(),
        tokens: [cold_tokens, warm.token_count],
    };
    drop((held, warm, session));
    run
}

/// Generated turns per million tokens.
const TURNS_PER_MILLION: usize = 900;

/// Chooses the run in a child process, so that each starts from a fresh heap.
const RUN_VAR: &str = "AGENT_CONTEXT_MEMORY_RUN";

fn main() {
    let Ok(which) = std::env::var(RUN_VAR) else {
        for which in [
            "drop",
            "hold",
            "two-threads",
            "scale-2",
            "scale-4",
            "scale-10",
        ] {
            let exe = std::env::current_exe().expect("the bench's own path");
            let status = std::process::Command::new(exe)
                .env(RUN_VAR, which)
                .status()
                .expect("the bench runs itself");
            assert!(status.success(), "the {which} run failed");
        }
        return;
    };
    let hold = which == "hold";
    // "scale-N": the same loop on a session of about N million tokens.
    let millions: usize = which
        .strip_prefix("scale-")
        .map_or(1, |n| n.parse().expect("a number of millions"));
    // Load the tables first: they are shared by every session in the process.
    let mut builder = ContextBuilder::new();
    builder.model("gpt-4o").max_tokens(128_000);
    if which == "two-threads" {
        builder.threads(2);
    }
    let hello = MemoryState::new().with_chunk(MemoryChunk::agent("x", Role::User, "hi"));
    let start = std::time::Instant::now();
    builder.build(&hello).expect("a one-chunk build");
    let loaded = start.elapsed();
    let tables = LIVE.load(Relaxed);

    let mb = |bytes: usize| bytes as f64 / 1e6;
    let run = run(&builder, tables, millions * TURNS_PER_MILLION, hold);
    let ratio = |bytes: usize| bytes as f64 / run.text as f64;
    if millions > 1 {
        println!(
            "scale {millions}M: text {:.1} MB in {} chunks; peak heap {:.1} MB = {:.2}x the text",
            mb(run.text),
            run.chunks,
            mb(run.heap_peak),
            ratio(run.heap_peak)
        );
        return;
    }
    if which == "drop" {
        println!(
            "tokenizer: first use of o200k_base in this process (tables) took \
             {loaded:.0?} and holds {:.1} MB",
            mb(tables)
        );
        println!(
            "memory: session text {:.2} MB in {} chunks; builds of {} and {} tokens",
            mb(run.text),
            run.chunks,
            run.tokens[0],
            run.tokens[1]
        );
        println!(
            "  MemoryState as generated: {:.2} MB = {:.2}x the text",
            mb(run.state),
            ratio(run.state)
        );
    }
    let who = match which.as_str() {
        "hold" => "caller holding the cold result",
        "two-threads" => "built on two threads",
        _ => "each result dropped before the next build",
    };
    let rss = run.rss_peak.map_or(String::from("unavailable"), |rss| {
        format!("{:.2} MB = {:.2}x", mb(rss), ratio(rss))
    });
    println!(
        "  peak, {who}: heap {:.2} MB = {:.2}x the text; resident {rss}",
        mb(run.heap_peak),
        ratio(run.heap_peak)
    );
}
