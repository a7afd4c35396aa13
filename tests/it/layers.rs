//! The library's modules form layers that only point down: each top-level
//! module of `src/` (a folder, or a file at the root) sits in one layer of
//! [`LAYERS`], and reaches, through `crate::`/`super::` paths, only modules
//! of the layers below it. `lib.rs`'s module map states the same layers,
//! folder by folder; the root holds at most a few files, and no two files
//! of `src/` share a name for different ideas.
//!
//! The test reads the sources rather than trusting a convention. Comments
//! (doc links may point anywhere), string literals and `#[cfg(test)]` items
//! are left out; `crate::X` through a re-export in `lib.rs` counts as an
//! import of the module `X` comes from. `src/bin` is a client, not a layer.
//!
//! The same reading keeps the code in named steps: no function of `src/`
//! (the CLI's included) spans more than 80 lines.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Top-level module -> the top-level modules its code imports.
type Graph = BTreeMap<String, BTreeSet<String>>;

/// The layers, bottom up: a module imports only from the layers before its
/// own. Modules of one layer do not import each other.
const LAYERS: &[&[&str]] = &[
    &["error"],
    &["syntax"],
    &["fragment", "content"],
    &["model"],
    &["store", "tokens"],
    &["render"],
    &["format", "budget"],
    &["output"],
    &["adapter", "settings"],
    &["pipeline"],
    &["compaction"],
    &["session"],
    &["engine"],
    &["command"],
];

/// The most files `src/` holds outside its folders (`lib.rs` included).
const MAX_ROOT_FILES: usize = 8;

/// File names two folders share for the same idea: each store backend's
/// schema and statements.
const SHARED_NAMES: &[&str] = &["mod.rs", "schema.rs", "statements.rs"];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

#[test]
fn imports_point_down_the_stated_layers() {
    let graph = import_graph();
    assert!(graph.len() > 10, "found too few modules: {graph:?}");
    let mut up = Vec::new();
    for (module, imports) in &graph {
        let Some(own) = layer_of(module) else {
            up.push(format!("  {module} is in no layer of LAYERS"));
            continue;
        };
        for import in imports {
            match layer_of(import) {
                Some(layer) if layer < own => {}
                Some(layer) => up.push(format!(
                    "  {module} (layer {}) imports {import} (layer {})",
                    own + 1,
                    layer + 1
                )),
                None => up.push(format!("  {module} imports {import}, which is in no layer")),
            }
        }
    }
    assert!(
        up.is_empty(),
        "arrows that do not point down:\n{}",
        up.join("\n")
    );
    let listed: BTreeSet<&str> = LAYERS
        .iter()
        .flat_map(|layer| layer.iter().copied())
        .collect();
    let found: BTreeSet<&str> = graph.keys().map(String::as_str).collect();
    assert_eq!(listed, found, "LAYERS and the modules of src/ differ");
}

/// The order the checks above read: engines above stores, syntax below
/// the model, format and budget side by side.
#[test]
fn the_layers_keep_their_order() {
    let layer = |module| layer_of(module).expect("a module of LAYERS");
    assert!(layer("engine") > layer("store"));
    assert!(layer("syntax") < layer("model"));
    assert_eq!(layer("format"), layer("budget"));
}

#[test]
fn lib_rs_states_the_layers_folder_by_folder() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = fs::read_to_string(src.join("lib.rs")).expect("read src/lib.rs");
    let stated = stated_layers(&lib);
    let expected: Vec<Vec<String>> = LAYERS
        .iter()
        .map(|layer| layer.iter().map(|m| m.to_string()).collect())
        .collect();
    assert_eq!(stated, expected, "the layers of lib.rs's map");
    for module in LAYERS.iter().flat_map(|layer| layer.iter()) {
        let folder = src.join(module).join("mod.rs");
        let file = src.join(format!("{module}.rs"));
        assert!(
            folder.exists() || file.exists(),
            "{module} is no folder or file of src/"
        );
    }
}

/// The modules each numbered item of `lib.rs`'s `# Layers` section names,
/// as `` `folder/` `` or `` `file.rs` ``, in order.
fn stated_layers(lib: &str) -> Vec<Vec<String>> {
    let docs: Vec<&str> = lib
        .lines()
        .filter_map(|line| line.strip_prefix("//!"))
        .map(str::trim)
        .collect();
    let start = docs
        .iter()
        .position(|l| *l == "# Layers")
        .expect("a # Layers section");
    let mut layers: Vec<String> = Vec::new();
    for line in &docs[start + 1..] {
        if line.starts_with('#') {
            break;
        }
        let numbered = line
            .split_once(". ")
            .is_some_and(|(n, _)| n.parse::<u32>().is_ok());
        if numbered {
            layers.push(String::new());
        }
        if let Some(layer) = layers.last_mut() {
            layer.push(' ');
            layer.push_str(line);
        }
    }
    layers
        .iter()
        .map(|text| {
            text.split('`')
                .skip(1)
                .step_by(2)
                .filter_map(|name| name.strip_suffix('/').or(name.strip_suffix(".rs")))
                .map(str::to_string)
                .collect()
        })
        .collect()
}

#[test]
fn the_root_holds_few_files_and_no_name_means_two_ideas() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let root: Vec<String> = fs::read_dir(&src)
        .expect("read src/")
        .map(|entry| entry.expect("a dir entry").path())
        .filter(|path| path.is_file())
        .map(|path| {
            path.file_name()
                .expect("a name")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert!(
        root.len() <= MAX_ROOT_FILES,
        "files at the root of src/: {root:?}"
    );
    for file in root.iter().filter(|file| *file != "lib.rs") {
        let module = file.trim_end_matches(".rs");
        assert!(
            layer_of(module).is_some(),
            "{file} at the root is in no layer"
        );
    }
    let mut by_name: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for file in rust_files(&src) {
        let name = file
            .file_name()
            .expect("a name")
            .to_string_lossy()
            .into_owned();
        let relative = file.strip_prefix(&src).expect("under src");
        by_name
            .entry(name)
            .or_default()
            .push(relative.display().to_string());
    }
    let repeated: Vec<String> = by_name
        .iter()
        .filter(|(name, files)| files.len() > 1 && !SHARED_NAMES.contains(&name.as_str()))
        .map(|(name, files)| format!("  {name}: {files:?}"))
        .collect();
    assert!(
        repeated.is_empty(),
        "file names used twice:\n{}",
        repeated.join("\n")
    );
}

/// The extractor must see the kinds of paths the crate writes, or the test
/// above could pass by finding nothing.
#[test]
fn the_extractor_sees_grouped_super_and_reexported_paths() {
    let reexports = BTreeMap::from([("Role".to_string(), "roles".to_string())]);
    let source = r#"
        //! See [`x`](crate::docs_only::X).
        use crate::{tokens::Counter, render};
        use super::super::Role;
        use super::sibling;
        fn f() { let _ = "crate::in_a_string"; crate::budget::plan(); }
        #[cfg(test)]
        mod tests { use crate::test_only::X; }
    "#;
    let found = imports_of(source, &["plan".into(), "inner".into()], &reexports);
    let expected = ["budget", "plan", "render", "roles", "tokens"];
    assert_eq!(found, expected.iter().map(|s| s.to_string()).collect());
}

/// The most lines a function of `src/` may span, from its `fn` to its
/// closing brace: a longer one is several steps that want names.
const MAX_FN_LINES: usize = 80;

#[test]
fn functions_are_at_most_80_lines() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut checked = 0;
    let mut long = Vec::new();
    for file in rust_files(&src) {
        let text = fs::read_to_string(&file).expect("read a source file");
        for (name, lines) in function_lengths(&text) {
            checked += 1;
            if lines > MAX_FN_LINES {
                let relative = file.strip_prefix(&src).expect("under src");
                long.push(format!(
                    "  {}: fn {name}: {lines} lines",
                    relative.display()
                ));
            }
        }
    }
    assert!(checked > 50, "found too few functions: {checked}");
    assert!(
        long.is_empty(),
        "functions over {MAX_FN_LINES} lines:\n{}",
        long.join("\n")
    );
}

/// The measure must see functions with generics, `where` clauses and
/// braces in strings and comments, and skip bodiless ones and tests.
#[test]
fn function_lengths_counts_from_fn_to_closing_brace() {
    let source = r#"
        /// Doc { not a brace.
        pub(crate) fn f<'a, T: Fn() -> usize>(x: &'a T)
        where
            T: Clone,
        {
            let s = "}";
            /* } */
        }
        trait T { fn bodiless(&self); }
        #[cfg(test)]
        mod tests { fn hidden() {} }
        fn g() { let _ = '}'; }
        fn h(x: [u64; 5]) -> [u8; 2] {
            [0; 2]
        }
    "#;
    let found = function_lengths(source);
    let expected = [("f", 7), ("g", 1), ("h", 3)].map(|(name, lines)| (name.to_string(), lines));
    assert_eq!(found, expected);
}

/// Where a function's signature ends: its body's `{`, or the `;` of a
/// bodiless one; a `;` inside brackets (`[u64; 5]`) is the signature's.
fn body_or_end(code: &str) -> Option<usize> {
    let mut brackets = 0usize;
    for (i, c) in code.char_indices() {
        match c {
            '[' => brackets += 1,
            ']' => brackets = brackets.saturating_sub(1),
            '{' => return Some(i),
            ';' if brackets == 0 => return Some(i),
            _ => {}
        }
    }
    None
}

/// Each function outside `#[cfg(test)]` items, with the lines it spans.
fn function_lengths(source: &str) -> Vec<(String, usize)> {
    let code = drop_test_items(&strip(source));
    let bytes = code.as_bytes();
    let line_at = |at: usize| code[..at].matches('\n').count();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(offset) = code[at..].find("fn ") {
        let start = at + offset;
        at = start + 3;
        if start > 0 && is_ident(bytes[start - 1]) {
            continue;
        }
        let name: String = code[at..]
            .trim_start()
            .chars()
            .take_while(|&c| c.is_alphanumeric() || c == '_')
            .collect();
        if name.is_empty() {
            continue;
        }
        let Some(open) = body_or_end(&code[at..]).map(|i| at + i) else {
            break;
        };
        if bytes[open] == b';' {
            continue;
        }
        let mut depth = 0;
        let mut end = open;
        for (i, &b) in bytes.iter().enumerate().skip(open) {
            match b {
                b'{' => depth += 1,
                b'}' => depth -= 1,
                _ => continue,
            }
            if depth == 0 {
                end = i;
                break;
            }
        }
        found.push((name, line_at(end) - line_at(start) + 1));
    }
    found
}

fn import_graph() -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = fs::read_to_string(src.join("lib.rs")).expect("read src/lib.rs");
    let reexports = reexports(&strip(&lib));
    let mut graph = Graph::new();
    for file in rust_files(&src) {
        let relative = file.strip_prefix(&src).expect("under src");
        let module = module_path(relative);
        if module.is_empty() || module[0] == "bin" {
            continue;
        }
        let text = fs::read_to_string(&file).expect("read a source file");
        let top = module[0].clone();
        let imports = imports_of(&text, &module, &reexports);
        let entry = graph.entry(top.clone()).or_default();
        entry.extend(imports.into_iter().filter(|target| *target != top));
    }
    graph
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).expect("read a source dir") {
        let path = entry.expect("a dir entry").path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// `budget/mod.rs` -> `[budget]`, `budget/caps.rs` -> `[budget, caps]`,
/// `lib.rs` -> `[]`.
fn module_path(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    let file = parts.pop().expect("a file name");
    let stem = file.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_string());
    }
    parts
}

/// Item name -> module, from `pub use module::{A, B};` and `pub use
/// module::inner::{A, B};` lines in `lib.rs`.
fn reexports(lib: &str) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    for statement in lib.split(';') {
        let Some(rest) = statement.trim().strip_prefix("pub use ") else {
            continue;
        };
        let Some((module, _)) = rest.split_once("::") else {
            continue;
        };
        let items = match rest.split_once('{') {
            Some((_, group)) => group.trim_end_matches('}'),
            None => rest.rsplit("::").next().unwrap_or(""),
        };
        for item in items.split(',') {
            let name = item.split(" as ").last().unwrap_or("").trim();
            if !name.is_empty() {
                map.insert(name.to_string(), module.trim().to_string());
            }
        }
    }
    map
}

/// The top-level modules that the code of the file at `module` imports.
fn imports_of(
    source: &str,
    module: &[String],
    reexports: &BTreeMap<String, String>,
) -> BTreeSet<String> {
    let code = drop_test_items(&strip(source));
    let tokens = tokenize(&code);
    let mut found = BTreeSet::new();
    let mut i = 0;
    while i < tokens.len() {
        let starts_path = (tokens[i] == "crate" || tokens[i] == "super")
            && tokens.get(i + 1).is_some_and(|t| t == "::")
            && (i == 0 || tokens[i - 1] != "::");
        if !starts_path {
            i += 1;
            continue;
        }
        let mut base: Vec<String> = if tokens[i] == "crate" {
            Vec::new()
        } else {
            module[..module.len() - 1].to_vec()
        };
        i += 2;
        while tokens.get(i).is_some_and(|t| t == "super") {
            base.pop();
            i += 2;
        }
        let mut firsts = Vec::new();
        if tokens.get(i).is_some_and(|t| t == "{") {
            let mut depth = 0;
            let mut expect_first = true;
            while i < tokens.len() {
                match tokens[i].as_str() {
                    "{" => {
                        depth += 1;
                        expect_first = depth == 1;
                    }
                    "}" => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    "," if depth == 1 => expect_first = true,
                    token if expect_first => {
                        firsts.push(token.to_string());
                        expect_first = false;
                    }
                    _ => {}
                }
                i += 1;
            }
        } else if let Some(token) = tokens.get(i) {
            firsts.push(token.clone());
        }
        for first in firsts {
            let top = match base.first() {
                Some(top) => Some(top.clone()),
                None if first == "self" || first == "*" => None,
                None => Some(reexports.get(&first).cloned().unwrap_or(first)),
            };
            found.extend(top);
        }
        i += 1;
    }
    found
}

/// Identifiers, `::` and single punctuation characters.
fn tokenize(code: &str) -> Vec<String> {
    let chars: Vec<char> = code.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            tokens.push(chars[start..i].iter().collect());
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            tokens.push("::".to_string());
            i += 2;
        } else {
            if !c.is_whitespace() {
                tokens.push(c.to_string());
            }
            i += 1;
        }
    }
    tokens
}

/// Blanks out comments, string and character literals.
fn strip(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < chars.len() {
        let rest = &chars[i..];
        if rest.starts_with(&['/', '/']) {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if rest.starts_with(&['/', '*']) {
            let start = i;
            let mut depth = 0;
            while i < chars.len() {
                if chars[i..].starts_with(&['/', '*']) {
                    depth += 1;
                    i += 2;
                } else if chars[i..].starts_with(&['*', '/']) {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
            out.extend(newlines(&chars[start..i.min(chars.len())]));
        } else if is_raw_string(rest) {
            let start = i;
            let hashes = rest[1..].iter().take_while(|&&c| c == '#').count();
            i += 2 + hashes;
            let close: Vec<char> = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            while i < chars.len() && !chars[i..].starts_with(&close) {
                i += 1;
            }
            i += close.len();
            out.push_str("\"\"");
            out.extend(newlines(&chars[start..i.min(chars.len())]));
        } else if chars[i] == '"' {
            let start = i;
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
            out.extend(newlines(&chars[start..i.min(chars.len())]));
        } else if chars[i] == '\'' && is_char_literal(rest) {
            i += 1;
            while i < chars.len() && chars[i] != '\'' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("' '");
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

/// The line breaks in `blanked`, so that stripped code keeps its lines.
fn newlines(blanked: &[char]) -> impl Iterator<Item = char> + '_ {
    blanked.iter().copied().filter(|&c| c == '\n')
}

fn is_raw_string(rest: &[char]) -> bool {
    let after_r = || {
        let hashes = rest[1..].iter().take_while(|&&c| c == '#').count();
        rest.get(1 + hashes) == Some(&'"')
    };
    rest.first() == Some(&'r') && after_r()
}

/// `'a'` and `'\n'` are characters; `'a` is a lifetime.
fn is_char_literal(rest: &[char]) -> bool {
    rest.get(1) == Some(&'\\') || rest.get(2) == Some(&'\'')
}

/// Blanks out the item after each `#[cfg(test)]`: up to its `;` or its
/// closing brace, whichever ends it.
fn drop_test_items(code: &str) -> String {
    let mut out = code.to_string();
    while let Some(start) = out.find("#[cfg(test)]") {
        let bytes = out.as_bytes();
        let mut end = start + "#[cfg(test)]".len();
        let mut depth = 0;
        while end < bytes.len() {
            match bytes[end] {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        end += 1;
                        break;
                    }
                }
                b';' if depth == 0 => {
                    end += 1;
                    break;
                }
                _ => {}
            }
            end += 1;
        }
        let blank = " ".to_string() + &"\n".repeat(out[start..end].matches('\n').count());
        out.replace_range(start..end, &blank);
    }
    out
}
