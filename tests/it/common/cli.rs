//! Running the `agent-context` binary from a test.

use std::io::Write;
use std::process::{Command, Stdio};

/// A finished run of the binary.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs the binary with `args`, `stdin` piped in, from the temp dir.
pub fn run_bytes(args: &[&str], stdin: &[u8]) -> Run {
    // Run from the temp dir so relative paths in the tests resolve there.
    let mut child = Command::new(env!("CARGO_BIN_EXE_agent-context"))
        .args(args)
        .current_dir(std::env::temp_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn agent-context");
    let mut pipe = child.stdin.take().unwrap();
    // The binary may exit before reading (usage errors): ignore a broken pipe.
    let _ = pipe.write_all(stdin);
    drop(pipe);
    let output = child.wait_with_output().expect("wait for agent-context");
    Run {
        code: output.status.code().expect("exited normally"),
        stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
    }
}

/// [`run_bytes`] with text.
pub fn run(args: &[&str], stdin: &str) -> Run {
    run_bytes(args, stdin.as_bytes())
}
