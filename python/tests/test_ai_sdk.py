"""The AI SDK's messages through the Python package: `input="ai-sdk"`,
`output="ai-sdk"` and `from_ai_sdk` answer as `agent-context build --input
ai-sdk --output ai-sdk` does."""

import json
import warnings

import pytest

import agent_context as ac

HISTORY = [
    {"id": "u1", "role": "user", "parts": [
        {"type": "text", "text": "Weather in Paris?"},
        {"type": "file", "mediaType": "image/png", "url": "data:,"}]},
    {"id": "a1", "role": "assistant", "parts": [
        {"type": "step-start"},
        {"type": "tool-weather", "toolCallId": "c1", "state": "output-available",
         "input": {"city": "Paris"}, "output": {"celsius": 21}},
        {"type": "step-start"},
        {"type": "text", "text": "It is 21 degrees."}]},
    {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "Thanks."}]},
]

LEFT_OUT = "parts of the AI SDK messages that no chunk holds were left out: 1 file"


def test_build_reads_and_writes_the_sdk_messages_as_the_cli(cli, tmp_path):
    path = tmp_path / "history.json"
    path.write_text(json.dumps(HISTORY))
    done = cli.run("build", path, "--input", "ai-sdk", "--output", "ai-sdk")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        body = ac.build(HISTORY, input="ai-sdk", output="ai-sdk")
    assert body == json.loads(done.stdout)
    assert [str(w.message) for w in caught] == [LEFT_OUT]
    assert body["messages"][1]["content"][0] == {
        "type": "tool-call", "toolCallId": "c1", "toolName": "weather", "input": {"city": "Paris"}}
    assert body["messages"][2]["content"][0]["output"] == {"type": "json", "value": {"celsius": 21}}
    builder = ac.ContextBuilder(input="ai-sdk", output="ai-sdk")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert builder.build(json.dumps(HISTORY)) == body
    assert builder.options()["input"] == "ai-sdk"


def test_from_ai_sdk_is_the_session_the_cli_reads(cli, tmp_path):
    with pytest.warns(ac.ContextWarning, match="1 file"):
        session = ac.from_ai_sdk(HISTORY)
    assert [c["id"] for c in session["chunks"]] == ["u1.0", "a1.1", "a1.1.result", "a1.3", "u2.0"]
    path = tmp_path / "history.json"
    path.write_text(json.dumps(HISTORY))
    report = json.loads(cli.run("build", path, "--input", "ai-sdk").stdout)
    assert ac.build(session) == report
    # Its own output reads back into the same messages.
    body = ac.build(session, output="ai-sdk")
    assert ac.build(body, input="ai-sdk", output="ai-sdk") == body


def test_messages_the_sdk_would_refuse_name_where():
    bad = [{"role": "assistant", "content": [{"type": "tool-call", "toolName": "x"}]}]
    with pytest.raises(ac.InputError, match=r"messages\[0\]\.content\[0\]\.toolCallId"):
        ac.from_ai_sdk(bad)
    with pytest.raises(ac.InputError, match='unknown input "yaml"'):
        ac.build(HISTORY, input="yaml")


def test_a_chat_builds_from_its_store_not_from_messages(tmp_path):
    engine = ac.Engine(str(tmp_path / "chat.db"), "c1")
    with pytest.raises(ac.InputError, match="from_ai_sdk"):
        engine.build(input="ai-sdk")


def test_a_history_appended_from_its_place_has_the_ids_of_a_whole_read():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        whole = ac.from_ai_sdk(HISTORY)
        first = ac.from_ai_sdk(HISTORY[:2])
        rest = ac.from_ai_sdk(HISTORY[2:], start=2)
    assert first["chunks"] + rest["chunks"] == whole["chunks"]
    plain = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    assert [c["id"] for c in ac.from_ai_sdk(plain[1:], start=1)["chunks"]] == ["m1"]
