//! The integration tests, one module a subject, in one binary: compiled and
//! linked once, with `common` once. Only `tests/threads.rs`, which counts
//! the threads of its process, runs in a binary of its own.
//!
//! Run one subject with a filter on its module: `cargo test --test it
//! store::`.

// content_markdown's example tables are one `json!` each.
#![recursion_limit = "1024"]

mod common;
mod compaction;
mod compaction_cli;
mod compaction_loop;
#[path = "../../examples/support/session_gen.rs"]
mod session_gen;

mod agentick_shapes;
mod ai_sdk;
// Loads the `--html` pages in headless Chromium: opt in with the feature
// and run through `.ci/with-chromium`.
#[cfg(feature = "browser-tests")]
mod browser;
mod builder;
mod cache_break;
mod calibration;
mod chat_cli;
mod cli;
mod cli_output;
mod config;
mod content_builder;
mod content_markdown;
mod content_xml;
mod context_management;
mod deep_agents_fragments;
mod encoder;
mod explain;
mod format_toml;
mod format_toon;
mod fragments;
mod hostile;
mod html_page;
mod layers;
mod loops;
mod memory_schema;
mod native;
// Checks request bodies with the official SDKs' Python: opt in with the
// feature and run through `.ci/with-sdk-python`.
#[cfg(feature = "sdk-tests")]
mod native_sdk;
mod planner;
#[cfg(all(unix, feature = "postgres"))]
mod postgres_processes;
mod properties;
mod render_table;
mod replay;
mod routing;
mod session;
mod store;
#[cfg(unix)]
mod store_processes;
mod stored_cache;
mod toon_spec;
