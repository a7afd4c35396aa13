#!/usr/bin/env python3
"""Validate provider request bodies against the official Python SDKs' request types.

    validate_requests.py FILE.jsonl     (or "-" for standard input)
    validate_requests.py --self-test

Each input line is a JSON object:

    {"wire": "openai-chat" | "openai-responses" | "anthropic-messages"
             | "anthropic-beta-messages",
     "name": "<label>", "body": {...}}

and each body is checked against the SDK's own TypedDict for a non-streaming
create call (versions pinned in tests/sdk/requirements.txt):

    openai-chat         openai.types.chat.completion_create_params.CompletionCreateParamsNonStreaming
    openai-responses    openai.types.responses.response_create_params.ResponseCreateParamsNonStreaming
    anthropic-messages  anthropic.types.message_create_params.MessageCreateParamsNonStreaming
    anthropic-beta-messages
                        anthropic.types.beta.message_create_params.MessageCreateParamsNonStreaming
                        (the beta API, which takes compaction blocks back)

Exit status: 0 all bodies valid, 1 some invalid (one "name: wire: detail" line
per problem on stderr), 2 bad input (unreadable file, bad JSON, unknown wire,
missing name/body, no bodies at all) or SDK not importable. A one-line summary
goes to stdout.

How the checking is made strict
-------------------------------
`TypeAdapter(SomeTypedDict)` as pydantic builds it is far too lenient for
this job, in three ways (and pydantic refuses a TypeAdapter `config=` for a
TypedDict):

* TypedDicts ignore unknown keys;
* the SDKs annotate most lists as `Iterable[...]`, which pydantic validates
  lazily: the list comes back as an iterator that is checked only when
  consumed, so an invalid message inside `messages` passes `validate_python`;
* lax mode coerces: "1024" is accepted for an int field, "true" for a bool.

So we let pydantic build the core schema for the SDK type (it resolves the
SDKs' string annotations, Required/NotRequired and nested types exactly as
the SDK's own users get them) and rewrite a deep copy of it before compiling
a validator:

* every `typed-dict` and `model-fields` schema gets extra_behavior="forbid",
  at every depth (including the SDK's response models, e.g. anthropic's
  `TextBlock`, which the request unions also accept and which otherwise
  allow extra keys);
* every `generator` (Iterable) schema becomes an eager `list` schema;
* every nested config, and the validator's own, is strict=True: no
  str<->number coercion, bool is not int; an int is still accepted where a
  float is expected (pydantic's strict float accepts int);
* every union choice gets a short label such as "<TextBlockParam>", which
  lets us drop the noise from union members that plainly did not apply (a
  different "type"/"role" literal, or a different JSON kind) when reporting.

What this does NOT check (the SDK types cannot express it; other tests do):

* free-form objects: tool-call `input` (Anthropic), JSON Schema
  `parameters`/`input_schema`, OpenAI `metadata` keys: any keys are
  accepted there (`Dict[str, object]` / `Dict[str, str]` in the SDKs);
* that `arguments` strings are valid JSON;
* pairing of tool calls with their results (ids matching, order, no
  orphans), role alternation, first message being a user turn;
* model names (they are open strings), token limits, size limits, whether a
  model supports a feature (thinking, cache_control placement limits, ...);
* cross-field rules the API enforces at request time (e.g. thinking blocks
  must come first in an assistant turn; max 4 cache breakpoints).

Three facts of the pinned SDKs worth knowing (the self-test records them,
so a change in a future SDK shows up):

* anthropic >= 2.0 accepts role "system" inside `messages`
  (`SystemMessageParam`, string or text-block content);
* anthropic >= 1.0 has no `temperature`/`top_p`/`top_k` request parameter:
  a body carrying one is rejected as an unknown key;
* openai >= 3.5 makes `call_id` optional on a Responses
  `function_call_output` item.
"""

from __future__ import annotations

import copy
import importlib
import json
import sys
from typing import Any, Dict, List, Optional, Tuple

WIRES: Dict[str, Tuple[str, str]] = {
    "openai-chat": (
        "openai.types.chat.completion_create_params",
        "CompletionCreateParamsNonStreaming",
    ),
    "openai-responses": (
        "openai.types.responses.response_create_params",
        "ResponseCreateParamsNonStreaming",
    ),
    "anthropic-messages": (
        "anthropic.types.message_create_params",
        "MessageCreateParamsNonStreaming",
    ),
    "anthropic-beta-messages": (
        "anthropic.types.beta.message_create_params",
        "MessageCreateParamsNonStreaming",
    ),
}

# Most problems reported for one body; the rest are counted.
MAX_DETAILS = 20


class BadInput(Exception):
    """Input the validator cannot judge: exit status 2."""


# --------------------------------------------------------------------------
# Building strict validators from the SDK types
# --------------------------------------------------------------------------


def _strictify(node: Any, defs: Dict[str, Any]) -> None:
    """Rewrite a pydantic-core schema in place (see the module docstring)."""
    if isinstance(node, dict):
        kind = node.get("type")
        if kind == "generator":
            node["type"] = "list"
            node.pop("serialization", None)
        elif kind in ("typed-dict", "model-fields") and "extras_schema" not in node:
            node["extra_behavior"] = "forbid"
        elif kind == "union":
            node["choices"] = _label_choices(node["choices"], defs)
        config = node.get("config")
        # A model that types its extra keys (the beta API's free-form JSON
        # schemas) keeps allowing them: pydantic refuses both at once.
        inner = node.get("schema")
        typed_extras = isinstance(inner, dict) and "extras_schema" in inner
        if isinstance(config, dict):
            config["strict"] = True
            if not typed_extras:
                config["extra_fields_behavior"] = "forbid"
        for key, value in node.items():
            # metadata holds JSON-schema hooks and such, never validators.
            if key != "metadata":
                _strictify(value, defs)
    elif isinstance(node, (list, tuple)):
        for value in node:
            _strictify(value, defs)


def _choice_name(schema: Dict[str, Any], defs: Dict[str, Any], depth: int = 0) -> str:
    kind = schema.get("type")
    if kind in ("typed-dict", "model", "dataclass") and "cls" in schema:
        return schema["cls"].__name__
    if kind == "definition-ref" and depth < 5:
        target = defs.get(schema.get("schema_ref", ""))
        if target is not None:
            return _choice_name(target, defs, depth + 1)
    if kind in ("nullable", "default") and "schema" in schema and depth < 5:
        return _choice_name(schema["schema"], defs, depth + 1)
    return str(kind)


def _label_choices(choices: List[Any], defs: Dict[str, Any]) -> List[Any]:
    labelled = []
    seen: Dict[str, int] = {}
    for choice in choices:
        schema = choice[0] if isinstance(choice, tuple) else choice
        name = _choice_name(schema, defs)
        seen[name] = seen.get(name, 0) + 1
        if seen[name] > 1:
            name = f"{name}#{seen[name]}"
        labelled.append((schema, f"<{name}>"))
    return labelled


def _collect_defs(node: Any, out: Dict[str, Any]) -> None:
    if isinstance(node, dict):
        ref = node.get("ref")
        if isinstance(ref, str) and isinstance(node.get("type"), str):
            out[ref] = node
        for key, value in node.items():
            if key != "metadata":
                _collect_defs(value, out)
    elif isinstance(node, (list, tuple)):
        for value in node:
            _collect_defs(value, out)


_VALIDATORS: Dict[str, Any] = {}


def validator_for(wire: str) -> Any:
    if wire not in _VALIDATORS:
        from pydantic import TypeAdapter
        from pydantic_core import CoreConfig, SchemaValidator

        module_name, type_name = WIRES[wire]
        sdk_type = getattr(importlib.import_module(module_name), type_name)
        schema = copy.deepcopy(TypeAdapter(sdk_type).core_schema)
        defs: Dict[str, Any] = {}
        _collect_defs(schema, defs)
        _strictify(schema, defs)
        _VALIDATORS[wire] = SchemaValidator(
            schema, CoreConfig(strict=True, extra_fields_behavior="forbid")
        )
    return _VALIDATORS[wire]


# --------------------------------------------------------------------------
# Turning pydantic errors into short, relevant messages
# --------------------------------------------------------------------------


def _is_tag(part: Any) -> bool:
    return isinstance(part, str) and part.startswith("<") and part.endswith(">")


def _render_path(loc: Tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if _is_tag(part):
            continue
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(body)"


def _where(loc: Tuple[Any, ...]) -> Optional[str]:
    """The innermost SDK class (union member) the error was found in."""
    for part in reversed(loc):
        if _is_tag(part):
            name = part[1:-1].split("#")[0]
            if name[:1].isupper():
                return name
    return None


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _short(value: Any, limit: int = 60) -> str:
    return _clip(json.dumps(value, ensure_ascii=False, default=repr), limit)


def _problems(errors: List[Dict[str, Any]], body: Any) -> List[Dict[str, str]]:
    """Drop the errors of union members that plainly did not apply.

    pydantic reports, for a value that matches no member of a union, the
    errors of every member. A member is "dead" when its discriminating
    literal ("type" or "role") does not match, or when the value is of
    another JSON kind altogether (a list where the member wants a string).
    Errors inside dead members are dropped; if every member of a union is
    dead, one summary line replaces them all.
    """
    errs = [dict(e, loc=tuple(e["loc"])) for e in errors]
    dead = set()
    for e in errs:
        loc, kind = e["loc"], e["type"]
        if loc and _is_tag(loc[-1]) and (
            kind.endswith("_type") or kind in ("is_instance_of", "literal_error")
        ):
            dead.add(loc)
        if (
            len(loc) >= 2
            and _is_tag(loc[-2])
            and loc[-1] in ("type", "role")
            and kind in ("literal_error", "missing")
        ):
            dead.add(loc[:-1])
    members: Dict[Tuple[Any, ...], set] = {}
    for e in errs:
        for i, part in enumerate(e["loc"]):
            if _is_tag(part):
                members.setdefault(e["loc"][:i], set()).add(part)
    # A member that is itself a union none of whose members applied is dead
    # too (e.g. anthropic's union of response content blocks nested inside
    # the union of request content blocks): repeat until nothing changes.
    while True:
        all_dead = {u for u, tags in members.items() if all(u + (t,) in dead for t in tags)}
        grown = {u for u in all_dead if u and _is_tag(u[-1])} - dead
        if not grown:
            break
        dead |= grown

    out: List[Dict[str, str]] = []
    summarised = set()
    seen = set()
    for e in errs:
        loc = e["loc"]
        for i, part in enumerate(loc):
            if not _is_tag(part):
                continue
            union_at = loc[:i]
            if union_at in all_dead:
                if union_at not in summarised:
                    summarised.add(union_at)
                    out.append(_summarise(union_at, members[union_at], errs, body))
                break
            if loc[: i + 1] in dead:
                break
        else:
            problem = {
                "path": _render_path(loc),
                "type": e["type"],
                "msg": e["msg"],
                "where": _where(loc) or "",
                "input": _short(e.get("input")),
            }
            # Two live members (e.g. Responses' EasyInputMessage and Message)
            # often report the very same problem.
            key = (problem["path"], problem["msg"], problem["where"])
            if key not in seen:
                seen.add(key)
                out.append(problem)
    return out


def _value_at(body: Any, loc: Tuple[Any, ...]) -> Any:
    value = body
    for part in loc:
        if _is_tag(part):
            continue
        try:
            value = value[part]
        except (KeyError, IndexError, TypeError):
            return None
    return value


def _summarise(
    union_at: Tuple[Any, ...], tags: set, errs: List[Dict[str, Any]], body: Any
) -> Dict[str, str]:
    """One line for a value that no member of a union accepted.

    Find the discriminating key: "type" first, then "role" among the members
    whose "type" did match (a Responses message item has type "message" but
    a role that no message member takes).
    """
    n = len(union_at)
    value = _value_at(body, union_at)
    candidates = set(tags)
    matched: List[str] = []
    for key in ("type", "role"):
        failing = set()
        expected: List[str] = []
        for e in errs:
            loc = e["loc"]
            if len(loc) == n + 2 and loc[:n] == union_at and loc[n + 1] == key and loc[n] in candidates:
                if e["type"] not in ("literal_error", "missing"):
                    continue
                failing.add(loc[n])
                expected_text = str(e.get("ctx", {}).get("expected", ""))
                for item in expected_text.replace(" or ", ", ").split(", "):
                    if item and item not in expected:
                        expected.append(item)
        if failing and candidates <= failing:
            got = value.get(key) if isinstance(value, dict) else None
            context = f" with {', '.join(matched)}" if matched else ""
            return {
                "path": _render_path(union_at),
                "type": "union_no_match",
                "msg": f"{key} {_short(got)}{context} matches no accepted variant; "
                f"{key} expected: {', '.join(expected) or '(any)'}",
                "where": "",
                "input": "",
            }
        candidates -= failing
        if isinstance(value, dict) and key in value:
            matched.append(f"{key} {_short(value[key])}")
    kinds = []
    for e in errs:
        loc = e["loc"]
        msg = _clip(e["msg"], 80)
        if len(loc) == n + 1 and loc[:n] == union_at and msg not in kinds:
            kinds.append(msg)
    return {
        "path": _render_path(union_at),
        "type": "union_no_match",
        "msg": "matches no accepted variant"
        + (f" ({'; '.join(kinds)})" if kinds else "")
        + f": {_short(value)}",
        "where": "",
        "input": "",
    }


def check(wire: str, body: Any) -> List[Dict[str, str]]:
    """Problems found in one body; empty when it is valid."""
    from pydantic_core import ValidationError

    try:
        validator_for(wire).validate_python(body)
    except ValidationError as err:
        return _problems(err.errors(include_url=False), body)
    return []


def format_problem(p: Dict[str, str]) -> str:
    # Literal errors can list a hundred model names; keep lines readable.
    text = f"{p['path']}: {_clip(p['msg'], 400)}"
    if p["where"]:
        text += f" (in {p['where']})"
    if p["type"] in ("extra_forbidden",) or p["type"].endswith("_type") or p["type"] == "literal_error":
        text += f" [got {p['input']}]"
    return text


# --------------------------------------------------------------------------
# Input
# --------------------------------------------------------------------------


def read_records(path: str) -> List[Tuple[str, str, Any]]:
    try:
        if path == "-":
            text = sys.stdin.read()
            label = "<stdin>"
        else:
            with open(path, encoding="utf-8") as f:
                text = f.read()
            label = path
    except (OSError, UnicodeDecodeError) as err:
        raise BadInput(f"cannot read {path}: {err}") from err
    records = []
    problems = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{label}:{lineno}"
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as err:
            problems.append(f"{where}: not valid JSON: {err}")
            continue
        if not isinstance(rec, dict):
            problems.append(f"{where}: a line must be a JSON object")
            continue
        wire, name, body = rec.get("wire"), rec.get("name"), rec.get("body")
        if wire not in WIRES:
            problems.append(f"{where}: unknown wire {_short(wire)} (expected one of {', '.join(WIRES)})")
            continue
        if not isinstance(name, str) or not name:
            problems.append(f"{where}: \"name\" must be a non-empty string")
            continue
        if not isinstance(body, dict):
            problems.append(f"{where}: \"body\" must be a JSON object")
            continue
        extra = set(rec) - {"wire", "name", "body"}
        if extra:
            problems.append(f"{where}: unexpected keys {sorted(extra)}")
            continue
        records.append((wire, name, body))
    if problems:
        raise BadInput("\n".join(problems))
    if not records:
        raise BadInput(f"{label}: no request bodies (empty input)")
    return records


def validate_records(records: List[Tuple[str, str, Any]]) -> int:
    failed = 0
    for wire, name, body in records:
        problems = check(wire, body)
        if problems:
            failed += 1
            for p in problems[:MAX_DETAILS]:
                print(f"{name}: {wire}: {format_problem(p)}", file=sys.stderr)
            if len(problems) > MAX_DETAILS:
                print(f"{name}: {wire}: ... and {len(problems) - MAX_DETAILS} more", file=sys.stderr)
    ok = len(records) - failed
    summary = f"validated {len(records)} request bodies: {ok} ok"
    if failed:
        summary += f", {failed} failed"
    print(summary)
    return 1 if failed else 0


# --------------------------------------------------------------------------
# Self-test
# --------------------------------------------------------------------------

# (wire, name, body, expectation). Expectation None: must pass. Otherwise
# (error type, path): must fail with a problem of that type at that path
# (so a bad body fails for the reason it was written for, not by accident).

OA_TOOL_CALL = {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a.rs\"}"}}


def _oa_chat(*messages: Dict[str, Any], **extra: Any) -> Dict[str, Any]:
    return {"model": "gpt-4.1", "messages": list(messages), **extra}


def _oa_resp(*items: Dict[str, Any], **extra: Any) -> Dict[str, Any]:
    return {"model": "gpt-4.1", "input": list(items), **extra}


def _an(*messages: Dict[str, Any], **extra: Any) -> Dict[str, Any]:
    return {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": list(messages), **extra}


def _with_tool_call(call: Dict[str, Any]) -> Dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [call]}


EPHEMERAL = {"type": "ephemeral"}
AN_TOOL_USE = {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.rs"}}
AN_THINKING = {"type": "thinking", "thinking": "Let me look.", "signature": "c2lnbmF0dXJl"}

SELF_TEST: List[Tuple[str, str, Dict[str, Any], Optional[Tuple[str, str]]]] = [
    # ---- OpenAI Chat Completions: good
    (
        "openai-chat",
        "full tool-using conversation",
        _oa_chat(
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "Read a.rs"},
            {"role": "assistant", "content": None, "tool_calls": [OA_TOOL_CALL]},
            {"role": "tool", "tool_call_id": "call_1", "content": "fn main() {}"},
            {"role": "assistant", "content": "Done.", "tool_calls": [dict(OA_TOOL_CALL, id="call_2")]},
            {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "ok"}]},
            {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
            {"role": "assistant", "content": "Bye."},
            temperature=0,
            max_completion_tokens=500,
            stop=["END"],
            tools=[{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}],
        ),
        None,
    ),
    ("openai-chat", "stream false", _oa_chat({"role": "user", "content": "hi"}, stream=False), None),
    # ---- OpenAI Chat Completions: bad
    ("openai-chat", "unknown top-level key", _oa_chat({"role": "user", "content": "hi"}, bogus=1), ("extra_forbidden", "bogus")),
    (
        "openai-chat",
        "unknown key in a message",
        _oa_chat({"role": "user", "content": "hi", "cache": True}),
        ("extra_forbidden", "messages[0].cache"),
    ),
    (
        "openai-chat",
        "unknown key in a content part",
        _oa_chat({"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": EPHEMERAL}]}),
        ("extra_forbidden", "messages[0].content[0].cache_control"),
    ),
    (
        "openai-chat",
        "unknown key in tool_calls[].function",
        _oa_chat(_with_tool_call(dict(OA_TOOL_CALL, function=dict(OA_TOOL_CALL["function"], extra=1)))),
        ("extra_forbidden", "messages[0].tool_calls[0].function.extra"),
    ),
    (
        "openai-chat",
        "tool message without tool_call_id",
        _oa_chat({"role": "tool", "content": "x"}),
        ("missing", "messages[0].tool_call_id"),
    ),
    (
        "openai-chat",
        "arguments as an object",
        _oa_chat(_with_tool_call(dict(OA_TOOL_CALL, function={"name": "f", "arguments": {"path": "a.rs"}}))),
        ("string_type", "messages[0].tool_calls[0].function.arguments"),
    ),
    (
        "openai-chat",
        "tool call type not 'function'",
        _oa_chat(_with_tool_call(dict(OA_TOOL_CALL, type="func"))),
        ("union_no_match", "messages[0].tool_calls[0]"),
    ),
    ("openai-chat", "unknown role", _oa_chat({"role": "robot", "content": "hi"}), ("union_no_match", "messages[0]")),
    ("openai-chat", "number where a string is expected", _oa_chat({"role": "user", "content": 5}), ("union_no_match", "messages[0].content")),
    ("openai-chat", "model as a number", {"model": 4, "messages": []}, ("union_no_match", "model")),
    ("openai-chat", "missing messages", {"model": "gpt-4.1"}, ("missing", "messages")),
    ("openai-chat", "stream true", _oa_chat({"role": "user", "content": "hi"}, stream=True), ("literal_error", "stream")),
    # ---- OpenAI Responses: good
    (
        "openai-responses",
        "messages, function call and output",
        _oa_resp(
            {"type": "message", "role": "system", "content": "You are a coding agent."},
            {"type": "message", "role": "developer", "content": "Be brief."},
            {"type": "message", "role": "user", "content": "Read a.rs"},
            {"type": "function_call", "call_id": "call_1", "name": "read_file", "arguments": "{\"path\":\"a.rs\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "fn main() {}"},
            {"type": "message", "role": "assistant", "content": "Done."},
            {"role": "user", "content": "Thanks"},
            instructions="Answer in English.",
            max_output_tokens=500,
            store=False,
            tools=[{"type": "function", "name": "read_file", "parameters": {"type": "object"}, "strict": True}],
        ),
        None,
    ),
    (
        "openai-responses",
        "function_call_output without call_id (accepted by openai >= 3.5; pairing tests must catch it)",
        _oa_resp({"type": "function_call_output", "output": "x"}),
        None,
    ),
    # ---- OpenAI Responses: bad
    ("openai-responses", "unknown top-level key", _oa_resp({"role": "user", "content": "hi"}, messages=[]), ("extra_forbidden", "messages")),
    (
        "openai-responses",
        "unknown key in a message item",
        _oa_resp({"type": "message", "role": "user", "content": "hi", "name": "bob"}),
        ("extra_forbidden", "input[0].name"),
    ),
    (
        "openai-responses",
        "unknown key in a function_call_output",
        _oa_resp({"type": "function_call_output", "call_id": "c", "output": "x", "is_error": True}),
        ("extra_forbidden", "input[0].is_error"),
    ),
    (
        "openai-responses",
        "function_call_output without output",
        _oa_resp({"type": "function_call_output", "call_id": "c"}),
        ("missing", "input[0].output"),
    ),
    (
        "openai-responses",
        "function_call without call_id",
        _oa_resp({"type": "function_call", "name": "f", "arguments": "{}"}),
        ("missing", "input[0].call_id"),
    ),
    (
        "openai-responses",
        "function_call arguments as an object",
        _oa_resp({"type": "function_call", "call_id": "c", "name": "f", "arguments": {}}),
        ("string_type", "input[0].arguments"),
    ),
    ("openai-responses", "tool role message", _oa_resp({"type": "message", "role": "tool", "content": "x"}), ("union_no_match", "input[0]")),
    ("openai-responses", "unknown item type", _oa_resp({"type": "tool_result", "call_id": "c", "output": "x"}), ("union_no_match", "input[0]")),
    # ---- Anthropic Messages: good
    (
        "anthropic-messages",
        "system blocks, tools, thinking, cache_control",
        _an(
            {"role": "user", "content": "Read a.rs"},
            {"role": "assistant", "content": [AN_THINKING, {"type": "text", "text": "Reading."}, AN_TOOL_USE]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "fn main() {}", "cache_control": EPHEMERAL},
                    {"type": "text", "text": "Go on.", "cache_control": {"type": "ephemeral", "ttl": "1h"}},
                ],
            },
            {"role": "assistant", "content": [dict(AN_TOOL_USE, id="toolu_2", input={})]},
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_2",
                        "content": [{"type": "text", "text": "no such file"}],
                        "is_error": True,
                    }
                ],
            },
            {"role": "assistant", "content": "Done."},
            system=[
                {"type": "text", "text": "You are a coding agent."},
                {"type": "text", "text": "Project rules.", "cache_control": EPHEMERAL},
            ],
            thinking={"type": "enabled", "budget_tokens": 512},
            stop_sequences=["END"],
            metadata={"user_id": "u1"},
            tools=[{"name": "read_file", "description": "Read", "input_schema": {"type": "object"}}],
        ),
        None,
    ),
    ("anthropic-messages", "system as a string", _an({"role": "user", "content": "hi"}, system="Be brief."), None),
    (
        "anthropic-messages",
        "role system in messages (accepted by anthropic >= 2.0; other tests must forbid it if we never emit it)",
        _an({"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}),
        None,
    ),
    # ---- Anthropic Messages: bad
    ("anthropic-messages", "unknown top-level key", _an({"role": "user", "content": "hi"}, stop="x"), ("extra_forbidden", "stop")),
    (
        "anthropic-messages",
        "unknown key in a text block",
        _an({"role": "user", "content": [{"type": "text", "text": "hi", "name": "x"}]}),
        ("extra_forbidden", "messages[0].content[0].name"),
    ),
    (
        "anthropic-messages",
        "unknown key in a message",
        _an({"role": "user", "content": "hi", "name": "bob"}),
        ("extra_forbidden", "messages[0].name"),
    ),
    (
        "anthropic-messages",
        "unknown key in cache_control",
        _an({"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral", "scope": "x"}}]}),
        ("extra_forbidden", "messages[0].content[0].cache_control.scope"),
    ),
    (
        "anthropic-messages",
        "tool_use without input",
        _an({"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f"}]}),
        ("missing", "messages[0].content[0].input"),
    ),
    (
        "anthropic-messages",
        "thinking without signature",
        _an({"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm"}]}),
        ("missing", "messages[0].content[0].signature"),
    ),
    (
        "anthropic-messages",
        "tool_result is_error as a string",
        _an({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x", "is_error": "true"}]}),
        ("bool_type", "messages[0].content[0].is_error"),
    ),
    ("anthropic-messages", "unknown role", _an({"role": "developer", "content": "hi"}), ("union_no_match", "messages[0]")),
    (
        "anthropic-messages",
        "system message with a tool_use block",
        _an({"role": "system", "content": [AN_TOOL_USE]}),
        ("literal_error", "messages[0].content[0].type"),
    ),
    (
        "anthropic-messages",
        "cache_control type persistent",
        _an({"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "persistent"}}]}),
        ("literal_error", "messages[0].content[0].cache_control.type"),
    ),
    (
        "anthropic-messages",
        "cache_control type persistent on system block",
        _an({"role": "user", "content": "hi"}, system=[{"type": "text", "text": "s", "cache_control": {"type": "persistent"}}]),
        ("literal_error", "system[0].cache_control.type"),
    ),
    (
        "anthropic-messages",
        "temperature (not a parameter since anthropic 1.0)",
        _an({"role": "user", "content": "hi"}, temperature=0.5),
        ("extra_forbidden", "temperature"),
    ),
    # ---- Compaction items round-trip: Anthropic's beta block, OpenAI's item
    (
        "anthropic-beta-messages",
        "a compaction block leading an assistant turn",
        _an(
            {"role": "user", "content": "Fix the test"},
            {
                "role": "assistant",
                "content": [
                    {"type": "compaction", "content": "Read a.rs.", "encrypted_content": "RU5D", "signature": "U0lH"},
                    AN_TOOL_USE,
                ],
            },
        ),
        None,
    ),
    (
        "anthropic-messages",
        "a compaction block outside the beta API",
        _an({"role": "assistant", "content": [{"type": "compaction", "content": "s"}]}),
        ("union_no_match", "messages[0].content[0]"),
    ),
    (
        "anthropic-beta-messages",
        "a compaction block with an unknown key",
        _an({"role": "assistant", "content": [{"type": "compaction", "content": "s", "summary": "s"}]}),
        ("extra_forbidden", "messages[0].content[0].summary"),
    ),
    (
        "openai-responses",
        "a compaction item",
        _oa_resp(
            {"type": "message", "role": "user", "content": "Fix the test"},
            {"type": "compaction", "encrypted_content": "gAAAA", "id": "cmp_1"},
        ),
        None,
    ),
    (
        "openai-responses",
        "a compaction item without encrypted_content",
        _oa_resp({"type": "compaction", "id": "cmp_1"}),
        ("missing", "input[0].encrypted_content"),
    ),
    ("anthropic-messages", "max_tokens as a string", dict(_an({"role": "user", "content": "hi"}), max_tokens="1024"), ("int_type", "max_tokens")),
    ("anthropic-messages", "missing max_tokens", {"model": "claude-sonnet-4-5", "messages": []}, ("missing", "max_tokens")),
]


def self_test() -> int:
    failures = 0
    for wire, name, body, expect in SELF_TEST:
        problems = check(wire, body)
        label = f"{'good' if expect is None else 'bad '} {wire}: {name}"
        if expect is None:
            if problems:
                failures += 1
                print(f"FAIL {label}: rejected:", file=sys.stderr)
                for p in problems:
                    print(f"       {format_problem(p)}", file=sys.stderr)
            else:
                print(f"ok   {label}")
            continue
        kind, path = expect
        hit = [p for p in problems if p["type"] == kind and p["path"] == path]
        if hit:
            print(f"ok   {label}: {format_problem(hit[0])}")
        else:
            failures += 1
            print(f"FAIL {label}: expected {kind} at {path}, got:", file=sys.stderr)
            for p in problems or [{"path": "-", "msg": "(accepted)", "type": "", "where": "", "input": ""}]:
                print(f"       {p['type']}: {format_problem(p)}", file=sys.stderr)
    total = len(SELF_TEST)
    print(f"self-test: {total - failures} passed, {failures} failed")
    return 1 if failures else 0


def _sdk_versions() -> str:
    from importlib.metadata import version

    return ", ".join(f"{p} {version(p)}" for p in ("openai", "anthropic", "pydantic"))


def main(argv: List[str]) -> int:
    usage = f"usage: {argv[0]} FILE.jsonl | - | --self-test"
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(usage, file=sys.stderr)
        return 2
    try:
        import anthropic  # noqa: F401
        import openai  # noqa: F401
        import pydantic  # noqa: F401
    except ImportError as err:
        print(
            f"validate_requests: cannot import the SDKs ({err}); run it with the python that "
            "`.ci/with-sdk-python` provides ($AGENT_CONTEXT_SDK_PYTHON)",
            file=sys.stderr,
        )
        return 2
    if argv[1] == "--self-test":
        print(f"self-test against {_sdk_versions()}")
        return self_test()
    try:
        records = read_records(argv[1])
    except BadInput as err:
        print(f"validate_requests: {err}", file=sys.stderr)
        return 2
    return validate_records(records)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
