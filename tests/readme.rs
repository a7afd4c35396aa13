//! The README shows what the program prints.

use std::process::Command;

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
