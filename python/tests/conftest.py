"""Shared fixtures: the bundled sessions and the agent-context CLI that
every result is compared with."""

import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = sorted((ROOT / "data").glob("*.json"))


def cli_path():
    """The CLI to compare with: $AGENT_CONTEXT_BIN, else the newest build
    under the Cargo target directory."""
    given = os.environ.get("AGENT_CONTEXT_BIN")
    if given:
        return given
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    found = [p for p in (target / "release" / "agent-context", target / "debug" / "agent-context")
             if p.exists()]
    if not found:
        pytest.exit("no agent-context binary: run `cargo build` at the repository root, "
                    "or set AGENT_CONTEXT_BIN", returncode=2)
    return str(max(found, key=lambda p: p.stat().st_mtime))


class Cli:
    """Runs `agent-context ARGS` and reads what it prints."""

    def __init__(self, path):
        self.path = path

    def run(self, *args, input=None, check=True):
        done = subprocess.run([self.path, *map(str, args)], input=input,
                              capture_output=True, text=True)
        if check and done.returncode != 0:
            raise AssertionError(f"agent-context {' '.join(map(str, args))} exited "
                                 f"{done.returncode}: {done.stderr}")
        return done

    def json(self, *args, input=None):
        return json.loads(self.run(*args, input=input).stdout)


@pytest.fixture(scope="session")
def cli():
    return Cli(cli_path())


@pytest.fixture(scope="session")
def sessions():
    """The bundled sessions: name -> (path, dict)."""
    return {p.stem: (p, json.loads(p.read_text())) for p in DATA}
