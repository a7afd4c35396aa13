//! What the binary prints and when: the README's `--explain` sample is the
//! main job's output, and `replay` writes each turn as it is built.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const README: &str = include_str!("../README.md");

/// The code block between `<!-- NAME:begin -->` and `<!-- NAME:end -->`.
fn sample(name: &str) -> &'static str {
    let begin = format!("<!-- {name}:begin -->\n");
    let end = format!("<!-- {name}:end -->");
    let start = README.find(&begin).expect("begin marker") + begin.len();
    let block = &README[start..start + README[start..].find(&end).expect("end marker")];
    let body = block.split_once('\n').expect("opening fence").1;
    body.strip_suffix("```\n").expect("closing fence")
}

/// The arguments of the README's main job (`cargo run --release -- ARGS`).
fn main_job() -> Vec<&'static str> {
    let line = README
        .lines()
        .find(|line| line.starts_with("cargo run --release -- build "))
        .expect("the main job's command");
    line.split_whitespace().skip(4).collect()
}

#[test]
fn the_explain_sample_is_what_the_main_job_prints() {
    let args = main_job();
    assert!(args.contains(&"--explain"), "{args:?}");
    let out = Command::new(env!("CARGO_BIN_EXE_agent-context"))
        .args(&args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run agent-context");
    assert!(out.status.success(), "{out:?}");
    let printed = String::from_utf8(out.stderr).expect("UTF-8");
    assert!(
        printed == sample("explain-sample"),
        "README.md's --explain sample differs from what `{}` prints; replace it by:\n{printed}",
        args.join(" ")
    );
}

/// A session of `n` alternating user and assistant chunks.
fn conversation(n: usize) -> String {
    let chunks: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            let text = format!("turn {i}: the agent reads a file and writes a patch. ").repeat(8);
            serde_json::json!({"id": format!("c{i}"), "kind": "agent", "role": role, "text": text})
        })
        .collect();
    serde_json::json!({ "chunks": chunks }).to_string()
}

#[test]
fn replay_writes_each_turn_as_it_is_built() {
    // 300 cold builds of a growing session: after the first turn (which
    // loads the tokenizer) the rest take a good part of the run.
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_agent-context"))
        .args(["replay", "-", "--every", "1", "--no-cache"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn agent-context");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(conversation(300).as_bytes())
        .expect("write session");
    drop(stdin);
    let stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let lines: Vec<(Duration, String)> = stdout
        .lines()
        .map(|line| (started.elapsed(), line.expect("UTF-8")))
        .collect();
    assert!(child.wait().expect("wait").success());
    assert_eq!(lines.len(), 301, "300 turns and the summary");
    assert!(lines[0].1.starts_with("{\"turn\":1,"), "{}", lines[0].1);
    assert!(
        lines[299].1.starts_with("{\"turn\":300,"),
        "{}",
        lines[299].1
    );
    assert!(
        lines[300].1.starts_with("{\"summary\":"),
        "{}",
        lines[300].1
    );
    // Written at the end, every line would arrive at once.
    let (first, last) = (lines[0].0, lines[299].0);
    assert!(
        (last - first) * 10 >= last,
        "turn 1 arrived at {first:?}, turn 300 at {last:?}: not as they were built"
    );
}
