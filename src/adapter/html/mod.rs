//! A build, or a replay of a session, as one self-contained HTML page
//! (`--html`): the window as bars, every chunk in prompt order with its
//! text a click away, and for a replay the prompt per turn against the
//! budget and where the prompt cache broke. Every string from the input
//! is escaped, and the page runs no script (see `docs/cli.md`, "The window
//! as a page").

mod page;
mod turns;
mod window;

pub use turns::{ReplayTurn, replay_page};
pub use window::window_page;
