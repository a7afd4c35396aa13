//! The texts counting is measured on, built deterministically: generated
//! session text, minified JSON, this crate's Rust sources, and real files
//! of this machine (the cargo registry's sources, the Python standard
//! library, /usr/share/doc) in a fixed shuffled order.

use std::path::{Path, PathBuf};

use agent_context::MemoryState;

use crate::session_gen;

/// Generated turns, one at a time, until `enough` says the session is large.
fn grown_session(seed: u64, enough: impl Fn(&MemoryState) -> bool) -> MemoryState {
    let mut rng = session_gen::Rng::new(seed);
    let mut state = MemoryState::new();
    let mut turn = 0;
    while !enough(&state) {
        // Size checks are costly for JSON; ten turns between them.
        for _ in 0..10 {
            session_gen::push_turn(&mut state, &mut rng, turn, 1);
            turn += 1;
        }
    }
    state
}

fn chunk_texts(state: &MemoryState) -> impl Iterator<Item = &str> {
    state.chunks.iter().filter_map(|c| c.text.as_deref())
}

/// The text bodies of a generated session, joined by blank lines: prose,
/// code, JSON, logs with long runs, CJK, emoji.
pub fn mixed(bytes: usize) -> String {
    let state = grown_session(1, |s| {
        chunk_texts(s).map(|t| t.len() + 2).sum::<usize>() >= bytes
    });
    cut(chunk_texts(&state).collect::<Vec<_>>().join("\n\n"), bytes)
}

/// A generated session as compact JSON.
pub fn minified_json(bytes: usize) -> String {
    let json = |s: &MemoryState| serde_json::to_string(s).expect("a session serializes");
    cut(json(&grown_session(2, |s| json(s).len() >= bytes)), bytes)
}

/// Files under `dir`, recursively, that `keep` accepts; symbolic links are
/// not followed.
fn files(dir: &Path, keep: &dyn Fn(&Path) -> bool, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_dir() {
            files(&path, keep, out);
        } else if kind.is_file() && keep(&path) {
            out.push(path);
        }
    }
}

/// This crate's sources in path order, repeated up to the size.
pub fn rust_source(bytes: usize) -> String {
    let mut paths = Vec::new();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    files(
        &src,
        &|path| path.extension().is_some_and(|e| e == "rs"),
        &mut paths,
    );
    paths.sort();
    let once: String = paths
        .iter()
        .map(|path| std::fs::read_to_string(path).expect("sources are readable"))
        .collect();
    assert!(!once.is_empty(), "src/ holds Rust files");
    cut(once.repeat(bytes / once.len() + 1), bytes)
}

/// Where the real files come from: the cargo registry's unpacked sources,
/// the Python standard library (every `/usr/lib/python3.*`) and
/// `/usr/share/doc`.
fn real_roots() -> Vec<PathBuf> {
    let cargo_home = std::env::var_os("CARGO_HOME").map_or_else(
        || Path::new(&std::env::var_os("HOME").unwrap_or_default()).join(".cargo"),
        PathBuf::from,
    );
    let mut roots = vec![cargo_home.join("registry").join("src")];
    if let Ok(entries) = std::fs::read_dir("/usr/lib") {
        let mut pythons: Vec<PathBuf> = entries
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| {
                let name = path.file_name().unwrap_or_default().to_string_lossy();
                name.starts_with("python3.")
            })
            .collect();
        pythons.sort();
        roots.extend(pythons);
    }
    roots.push(PathBuf::from("/usr/share/doc"));
    roots
}

/// Real text files of this machine, every one that is UTF-8 without NUL
/// bytes, in an order shuffled with a fixed seed (43), joined up to the
/// size.
pub fn real_files(bytes: usize) -> String {
    let mut paths = Vec::new();
    for root in real_roots() {
        files(&root, &|_| true, &mut paths);
    }
    paths.sort();
    let mut rng = session_gen::Rng::new(43);
    for i in (1..paths.len()).rev() {
        paths.swap(i, rng.range(0, i + 1));
    }
    let mut text = String::with_capacity(bytes + (1 << 20));
    for path in &paths {
        if text.len() >= bytes {
            break;
        }
        if let Ok(file) = std::fs::read_to_string(path)
            && !file.contains('\0')
        {
            text.push_str(&file);
        }
    }
    assert!(
        text.len() >= bytes,
        "only {} bytes of text files under {:?}",
        text.len(),
        real_roots()
    );
    cut(text, bytes)
}

/// `text` cut to at most `bytes`, on a character boundary.
fn cut(mut text: String, bytes: usize) -> String {
    let mut end = bytes.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text
}
