"""`agent_context.build` equals `agent-context build` for every output."""

import json

import pytest

import agent_context as ac

from conftest import DATA

OUTPUTS = ["report", "openai", "anthropic", "text", "openai-native",
           "openai-responses", "anthropic-native"]

# (keywords, the same as flags)
SETTINGS = [
    ({"max_tokens": 4000, "reserve": 500}, ["--max-tokens", "4000", "--reserve", "500"]),
    ({}, []),
    ({"max_tokens": 6000, "caps": {"tool_result": 300, "tool:bash": None}, "low_water": 1.0},
     ["--max-tokens", "6000", "--cap", "tool_result=300", "--cap", "tool:bash=none",
      "--low-water", "1.0"]),
    ({"max_tokens": 20000, "context_management": {"edits": [
        {"type": "clear_thinking_20251015"},
        {"type": "clear_tool_uses_20250919", "trigger": {"type": "tool_uses", "value": 6},
         "keep": {"type": "tool_uses", "value": 3}}]}},
     ["--max-tokens", "20000", "--context-management", json.dumps({"edits": [
         {"type": "clear_thinking_20251015"},
         {"type": "clear_tool_uses_20250919", "trigger": {"type": "tool_uses", "value": 6},
          "keep": {"type": "tool_uses", "value": 3}}]})]),
    ({"max_tokens": 5000, "escape": "xml", "framing": "none", "exclude_kinds": ["thinking"],
      "fragments_format": "toon", "content_format": "xml"},
     ["--max-tokens", "5000", "--escape", "xml", "--framing", "none", "--exclude-kind",
      "thinking", "--fragments-format", "toon", "--content-format", "xml"]),
    ({"model": "claude-sonnet-4-5", "max_tokens": 8000, "estimate_factor": 1.25,
      "cache_control": False},
     ["--model", "claude-sonnet-4-5", "--max-tokens", "8000", "--estimate-factor", "1.25",
      "--no-cache-control"]),
    ({"max_tokens": 6000, "group_fragments": True, "fragments_format": "markdown"},
     ["--max-tokens", "6000", "--group-fragments", "--fragments-format", "markdown"]),
    ({"model": "gpt-4", "max_tokens": 3000, "reserve": 200, "threads": 1},
     ["--model", "gpt-4", "--max-tokens", "3000", "--reserve", "200", "--threads", "1"]),
]


def cli_build(cli, path, flags, output):
    done = cli.run("build", path, *flags, "--output", output)
    return done.stdout if output == "text" else json.loads(done.stdout)


@pytest.mark.filterwarnings("ignore::agent_context.ContextWarning")
@pytest.mark.parametrize("path", DATA, ids=lambda p: p.stem)
@pytest.mark.parametrize("output", OUTPUTS)
@pytest.mark.parametrize("setting", range(len(SETTINGS)))
def test_build_equals_the_cli(cli, path, output, setting):
    keywords, flags = SETTINGS[setting]
    session = json.loads(path.read_text())
    expected = cli_build(cli, path, flags, output)
    assert ac.build(session, output=output, **keywords) == expected
    # A JSON string is read as the CLI reads the file.
    assert ac.build(path.read_text(), output=output, **keywords) == expected


@pytest.mark.filterwarnings("ignore::agent_context.ContextWarning")
@pytest.mark.parametrize("output", OUTPUTS)
def test_the_builder_builds_as_build(sessions, output):
    _, session = sessions["coding-agent"]
    builder = ac.ContextBuilder(max_tokens=4000, reserve=500, caps={"tool_result": 500})
    expected = ac.build(session, max_tokens=4000, reserve=500, caps={"tool_result": 500},
                        output=output)
    assert builder.build(session, output=output) == expected
    assert builder.with_options(output=output).build(session) == expected


def test_types_of_the_outputs(sessions):
    _, session = sessions["coding-agent"]
    assert isinstance(ac.build(session, output="text"), str)
    report = ac.build(session, max_tokens=4000)
    assert report["token_count"] <= 4000 and report["token_count_exact"] is True
    assert set(ac.OUTPUTS) == set(OUTPUTS)


def test_numbers_keep_their_digits():
    session = {"chunks": [
        {"id": "u", "kind": "agent", "role": "user", "text": "go"},
        {"id": "c", "kind": "workflow", "tool": "t", "call_id": "k",
         "data": {"big": 12345678901234567890123}},
        {"id": "r", "kind": "environment", "tool": "t", "call_id": "k", "text": "ok"},
    ]}
    body = ac.build(session, output="openai-native")
    assert "12345678901234567890123" in json.dumps(body)


def test_warnings_are_context_warnings(sessions):
    _, session = sessions["coding-agent"]
    with pytest.warns(ac.ContextWarning, match="not in the model table"):
        ac.build(session, model="gpt-4.2", max_tokens=8000)


def test_count_equals_the_cli(cli, tmp_path):
    texts = [p.read_text() for p in DATA] + [
        "", "hello world", " " * 10000, "<|endoftext|> is text", "🦀 Ünïcödé 漢字",
        "x" * 5000, "def f():\n\treturn 1\n\n\n",
    ]
    for model in ["gpt-4o", "gpt-4", "claude-3-5-sonnet"]:
        for text in texts:
            path = tmp_path / "t.txt"
            path.write_text(text)
            expected = int(cli.run("count", path, "--model", model).stdout)
            with pytest.warns(ac.ContextWarning) if model.startswith("claude") else _none():
                assert ac.count(text, model=model) == expected
    path = tmp_path / "t.txt"
    path.write_text(texts[0])
    expected = int(cli.run("count", path, "--model", "gpt-4.2", "--estimate-factor", "2").stdout)
    with pytest.warns(ac.ContextWarning):
        assert ac.count(texts[0], model="gpt-4.2", estimate_factor=2) == expected


class _none:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_explain_writes_the_cli_breakdown(cli, sessions, capsys):
    path, session = sessions["coding-agent"]
    done = cli.run("build", path, "--max-tokens", "4000", "--explain", "--output", "openai")
    breakdown = "".join(line for line in done.stderr.splitlines(keepends=True)
                        if not line.startswith("warning: "))
    assert ac.build(session, max_tokens=4000, explain=True, output="openai") == json.loads(done.stdout)
    assert capsys.readouterr().err == breakdown and breakdown
    ac.ContextBuilder(max_tokens=4000, explain=True).build(session)
    assert capsys.readouterr().err == cli.run("build", path, "--max-tokens", "4000", "--explain").stderr


@pytest.mark.filterwarnings("ignore::agent_context.ContextWarning")
def test_every_flag_has_its_keyword(sessions, tmp_path):
    _, session = sessions["coding-agent"]
    base = ac.build(session, max_tokens=6000, caps={"tool_result": 300}, exclude_kinds=["thinking"],
                    cache_control=False, output="anthropic-native")
    assert ac.build(session, max_tokens=6000, cap=["tool_result=300"], exclude_kind="thinking",
                    no_cache_control=True, output="anthropic_native") == base
    assert ac.build(session, max_tokens=6000, caps={"tool_result": 300}, exclude_kinds=["thinking"],
                    cache_control=False, output="anthropic-native", model=None, escape=None,
                    low_water=None, threads=None, estimate_factor=None, max_input_bytes=None) == base
    with pytest.raises(ac.InputError, match="larger than the limit"):
        ac.build(session, max_input_bytes=100)
    path = tmp_path / "cm.json"
    path.write_text('{"edits": [{"type": "clear_thinking_20251015"}]}')
    assert ac.build(session, context_management=str(path)) == ac.build(
        session, context_management={"edits": [{"type": "clear_thinking_20251015"}]})
