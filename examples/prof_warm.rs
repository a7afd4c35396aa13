#[path = "support/session_gen.rs"]
mod session_gen;
use agent_context::{ContextBuilder, ContextSession, MemoryChunk, Role};
use std::time::{Duration, Instant};
fn main() {
    let millions: f64 = std::env::args().nth(1).unwrap().parse().unwrap();
    let state = session_gen::session(1, (millions * 900.0) as usize, 1);
    let mut b = ContextBuilder::new();
    b.model("gpt-4o").max_tokens(128_000);
    let mut base = ContextSession::new(b, state).unwrap();
    base.build().unwrap();
    let mut rng = session_gen::Rng::new(5);
    let mut timed = Duration::ZERO;
    let n = 300;
    for i in 0..n {
        let mut s = base.clone();
        let mut text = session_gen::prose(&mut rng, 1500);
        text.truncate(text.floor_char_boundary(8000));
        let t = Instant::now();
        s.push(MemoryChunk::agent(format!("x{i}"), Role::User, text)).unwrap();
        let r = s.build().unwrap();
        drop(r);
        timed += t.elapsed();
    }
    println!("{:?} per turn", timed / n);
}
