"""agent_context: an LLM agent's typed memory in, the prompt within a token
budget out, with exact tokenizer counts; the `agent-context` CLI's JSON,
as Python values.

Every function mirrors a CLI command and returns exactly what it prints:
`build` is `agent-context build`, `count` is `agent-context count`,
`Engine.build` is `agent-context chat build`. The keywords are the CLI's
flags (`--max-tokens` is `max_tokens`) with the same defaults; giving one
as None means the default.

The GIL is released while building and counting. A ContextBuilder is
immutable and may be shared between threads; a Session or an Engine may be
too (calls on one Session take turns behind a lock; each Engine call opens
the store and saves in one transaction).
"""

import os
from typing import Any, Iterable, Literal, Mapping, Optional, Sequence, Union

__all__ = [
    "build", "count", "from_ai_sdk", "ContextBuilder", "Session", "Engine", "Error", "InputError",
    "CompactionError", "BudgetExceeded", "StoreError", "ChatError", "ContextWarning", "OUTPUTS",
]

JSON = Any
"""A JSON value: dict, list, str, int, float, bool or None; a number with a
fraction or an exponent that no float holds exactly (`1e400`,
`0.1000000000000000000001`) is a `decimal.Decimal` of its digits, both
ways: given back, a Decimal is written digit for digit."""

SessionInput = Union[Mapping[str, Any], str, bytes]
"""A session dict (`{"system_prompt", "fragments", "context_management",
"chunks": [...]}`), or its JSON text."""

PreviousReport = Union[dict[str, JSON], str, bytes]
"""The report of the previous build of the same session (`--previous
REPORT`): the dict a build returns with `output="report"`, or its JSON
text."""

Output = Literal[
    "report", "openai", "anthropic", "text", "openai-native", "openai-responses",
    "anthropic-native", "ai-sdk",
]

RequestFormat = Literal["messages", "openai", "anthropic"]
"""The shape of a compaction's summarization request: plain `[{role,
content}]` messages (a system message first), an OpenAI Chat Completions
body, or an Anthropic Messages body."""

NativeCompaction = Union[Mapping[str, Any], str, bytes]
"""The providers' own compaction items kept with a summary, as a dict or its
JSON: `{"anthropic": {"type": "compaction", ...}, "openai": {"type":
"compaction", "encrypted_content": ...}}` (either key)."""

OUTPUTS: list[str]
"""Every output's name, in the CLI's order."""


class Error(Exception):
    """The base of every error agent_context raises."""


class InputError(Error, ValueError):
    """Input or options the caller must fix (the CLI's exit status 2): invalid
    JSON or schema, an unknown option value, a cap too small, a str argument
    that UTF-8 cannot hold. The message is the one the CLI prints after
    `error: `."""


class CompactionError(InputError):
    """A compaction refused (the CLI's exit status 2): a plan that no longer
    holds (applied already, forged, its span rewound away, another
    compaction applied since, or made under other build settings), a
    summary that is empty or not smaller than the span it folds, an engine
    with unsaved changes. Nothing was written: plan again."""


class BudgetExceeded(Error):
    """The protected content does not fit the budget (the CLI's exit status 1)."""

    required: int
    """Tokens the protected content needs, framing included."""
    available: int
    """Tokens available: max_tokens - reserve."""
    max_tokens: int
    reserve: int


class StoreError(Error):
    """The store failed: a conflict with another writer, a database that
    cannot be read or written."""


class ChatError(StoreError, InputError):
    """A store, chat, branch, checkpoint or chunk named wrong (missing, or a
    name taken; a db that is a directory, a device, an empty path or no
    SQLite file): both a StoreError and an InputError."""


class ContextWarning(UserWarning):
    """What the CLI writes to standard error as `warning: ...`."""


def build(
    session: SessionInput,
    *,
    model: str = "gpt-4o",
    max_tokens: Optional[int] = None,
    reserve: Optional[int] = None,
    escape: Literal["structural", "xml", "none"] = "structural",
    framing: Literal["openai", "none"] = "openai",
    content_format: Literal["gfm", "markdown", "commonmark", "xml"] = "gfm",
    fragments_format: Literal["xml", "markdown", "md", "toml", "toon"] = "xml",
    group_fragments: bool = False,
    caps: Union[Mapping[str, Optional[int]], Iterable[str], None] = None,
    low_water: float = 0.8,
    context_management: Union[Mapping[str, Any], str, bytes, os.PathLike, None] = None,
    compact_at: Union[int, float, None] = None,
    exclude_kinds: Union[Iterable[str], str, None] = None,
    estimate_factor: Union[float, str, None] = None,
    threads: Optional[int] = None,
    output: Output = "report",
    explain: bool = False,
    cache_control: bool = True,
    no_cache_control: bool = False,
    previous: Optional[PreviousReport] = None,
    max_input_bytes: Optional[int] = None,
    input: Literal["session", "ai-sdk"] = "session",
    lossy_unicode: bool = False,
) -> Union[dict[str, JSON], str]:
    """Builds the prompt of `session` within the budget, exactly as
    `agent-context build` with the same flags: a dict for the JSON outputs,
    a str for `output="text"`.

    - max_tokens: the prompt budget (default: the model's context window).
    - reserve: tokens held back for the reply (default 0; 4096 or a quarter
      of max_tokens for `anthropic-native`).
    - caps: `{"tool_result": 2000, "tool:bash": 500, "id:r7": None}` (None
      lifts a cap), or `["tool_result=2000", ...]`.
    - low_water: the fraction of the budget a trim goes down to.
    - context_management: Anthropic's object (a dict, its JSON, or the path
      of a JSON file, as a str, bytes or os.PathLike), applied by
      agent-context for every model.
    - compact_at: when the report says `"compaction_due": true` (the
      history before trimming costs more): an int is a number of tokens
      (`100_000`), a float a fraction of the budget (`0.75`; above 0, and
      above 1 once the history outgrows the budget). Without it the report
      has no `compaction_due`.
    - exclude_kinds: chunk kinds left out (`["thinking"]`).
    - estimate_factor: estimates count F x o200k_base (default 1.6).
    - threads: threads to render and count on (default: up to 4).
    - explain: write the breakdown of every decision to sys.stderr.
    - cache_control: False (or no_cache_control=True) is `--no-cache-control`.
    - previous: the report of the previous build of this session (a dict,
      as `build` returns it with `output="report"`, or its JSON text), as
      `--previous REPORT`: the build keeps its cut while it fits, and the
      report gains `cache`, `{"stable_prefix_tokens", "broke_at": None or
      {"message", "chunk", "cause", "tokens_lost"}}`, what a prompt cache
      keeps of the previous prompt and where and why it broke. One that is
      no report raises InputError naming `previous`.
    - max_input_bytes: refuse session JSON longer than this.
    - input: "ai-sdk" reads `session` as the AI SDK's messages (a list of
      UIMessage or ModelMessage dicts, or {"system", "messages"}), as
      `--input ai-sdk` does; see `from_ai_sdk`.
    - `cap` and `exclude_kind`, the flags' own names, are read as `caps`
      and `exclude_kinds`.
    - lossy_unicode: read a lone UTF-16 surrogate escape as U+FFFD.

    Raises InputError, BudgetExceeded; warns with ContextWarning.
    """


def from_ai_sdk(
    messages: Union[Sequence[Mapping[str, Any]], Mapping[str, Any], str, bytes],
    *,
    start: int = 0,
    lossy_unicode: bool = False,
) -> dict[str, JSON]:
    """The session of the AI SDK's messages (UIMessage or ModelMessage
    dicts, or {"system", "messages"}), as `agent-context build --input
    ai-sdk` reads them: {"system_prompt", "chunks"}. Tool calls and results
    become paired chunks, signed reasoning thinking; parts no chunk holds
    (images, files, sources) are left out with one ContextWarning. `start`
    is the place of the first message in the whole history: the chunk ids
    follow it, so each turn's new messages append without meeting earlier
    ids. Raises
    InputError naming the message and part that is not what the SDK's types
    say."""


def count(text: str, *, model: str = "gpt-4o", estimate_factor: Union[float, str, None] = None) -> int:
    """The tokens of `text` for `model`, exactly as `agent-context count`
    (an estimate, with a ContextWarning, for a model without a public
    tokenizer)."""


class ContextBuilder:
    """Build settings: the keywords of `build`, checked once and kept
    (immutable; share it between threads and sessions)."""

    def __init__(
        self,
        *,
        model: str = "gpt-4o",
        max_tokens: Optional[int] = None,
        reserve: Optional[int] = None,
        escape: Literal["structural", "xml", "none"] = "structural",
        framing: Literal["openai", "none"] = "openai",
        content_format: Literal["gfm", "markdown", "commonmark", "xml"] = "gfm",
        fragments_format: Literal["xml", "markdown", "md", "toml", "toon"] = "xml",
        group_fragments: bool = False,
        caps: Union[Mapping[str, Optional[int]], Iterable[str], None] = None,
        low_water: float = 0.8,
        context_management: Union[Mapping[str, Any], str, bytes, os.PathLike, None] = None,
        compact_at: Union[int, float, None] = None,
        exclude_kinds: Union[Iterable[str], str, None] = None,
        estimate_factor: Union[float, str, None] = None,
        threads: Optional[int] = None,
        output: Output = "report",
        explain: bool = False,
        cache_control: bool = True,
        no_cache_control: bool = False,
        max_input_bytes: Optional[int] = None,
        input: Literal["session", "ai-sdk"] = "session",
    ) -> None: ...

    def with_options(self, **kwargs: Any) -> "ContextBuilder":
        """A copy with the given keywords changed."""

    def build(
        self,
        session: SessionInput,
        *,
        output: Optional[Output] = None,
        lossy_unicode: bool = False,
        previous: Optional[PreviousReport] = None,
    ) -> Union[dict[str, JSON], str]:
        """`build(session, **settings)`; `output` overrides the builder's, and
        `previous` is `build`'s (one build's, not a setting: the builder
        takes no `previous`)."""

    def options(self) -> dict[str, Any]:
        """Every setting, as keywords (all of `build`'s but `no_cache_control`,
        which `cache_control` says): `ContextBuilder(**b.options())` is `b`."""


class Session:
    """A conversation built turn after turn: `push`/`extend` chunks, then
    `build()` once per turn. A turn renders and counts only what is new;
    the trimmed prefix stays put between trims (prompt caches hold)."""

    def __init__(
        self,
        builder: Optional[ContextBuilder] = None,
        state: Optional[SessionInput] = None,
        *,
        lossy_unicode: bool = False,
    ) -> None: ...

    def push(self, chunk: Union[Mapping[str, Any], str], *, lossy_unicode: bool = False) -> None:
        """Appends one chunk (as in the session JSON); unchanged on error."""

    def extend(
        self, chunks: Union[Sequence[Mapping[str, Any]], str], *, lossy_unicode: bool = False
    ) -> None:
        """Appends chunks, all or nothing."""

    def build(self, *, output: Optional[Output] = None) -> Union[dict[str, JSON], str]:
        """This turn's prompt, shaped as `build` shapes it (default: the
        builder's output, `report`). Every report after the first has
        `cache`, against the session's previous build (see `build`'s
        `previous`)."""

    def plan_compaction(
        self,
        *,
        keep_tokens: Optional[int] = None,
        summarizer_model: Optional[str] = None,
        summarizer_max_tokens: Optional[int] = None,
        summary_tokens: Optional[int] = None,
        instructions: Optional[str] = None,
        output: RequestFormat = "messages",
    ) -> dict[str, JSON]:
        """Plans a compaction of the history under the builder's settings
        (as `Engine.plan_compaction`, which see): `{"plan": TOKEN, "covers",
        "folded", "remaining", "request", "request_tokens",
        "request_tokens_exact", "summary_tokens"}`, or `{"plan": None,
        "reason": ...}`. The session is unchanged."""

    def apply_compaction(
        self,
        plan: Union[str, Mapping[str, Any]],
        summary: str,
        *,
        native: Optional[NativeCompaction] = None,
    ) -> dict[str, JSON]:
        """Appends the compaction chunk of `plan` (the token, or the dict
        `plan_compaction` returned) with `summary`, the summarizer's text:
        `{"compaction", "covers", "tokens_before", "tokens_after"}` (a
        session has no `chat`, `branch` or `head`). Raises CompactionError (the
        session unchanged) for a plan that no longer holds or a summary that
        is empty or not smaller than its span."""

    def state(self) -> dict[str, JSON]:
        """The session as JSON: what `build` would take."""

    def stats(self) -> dict[str, Union[int, bool]]:
        """The last build's work: chunks_rendered, tokens_counted,
        chunks_cached, chunks_restored, extended, replanned."""

    def __len__(self) -> int: ...


class Engine:
    """A chat of a store (a SQLite path, created by the first `append`, or a
    postgres:// URL). Each method is the `agent-context chat` verb of the
    same name and returns what it prints."""

    def __init__(self, db: Union[str, "os.PathLike[str]"], chat: str, *, branch: Optional[str] = None) -> None: ...

    @property
    def db(self) -> str: ...
    @property
    def chat(self) -> str: ...
    @property
    def branch(self) -> Optional[str]:
        """The branch this engine is pinned to; None follows the active one."""

    def append(
        self,
        input: Union[SessionInput, Sequence[Mapping[str, Any]]],
        *,
        replace_last_assistant: bool = False,
        clear_system: bool = False,
        model: Optional[str] = None,
        lossy_unicode: bool = False,
    ) -> dict[str, JSON]:
        """`chat append`: a session, one chunk, a list of chunks, or JSON
        (Lines) text, in one transaction."""

    def build(
        self, *, previous: Optional[PreviousReport] = None, **kwargs: Any
    ) -> Union[dict[str, JSON], str]:
        """`chat build`, with the keywords of `build`. `previous` (`chat build
        --previous`), the report of an earlier build of the chat, only
        compares: the report gains `cache` against it. `input` must stay
        "session": the chat is in the store (append `from_ai_sdk(messages)`'s
        chunks)."""

    def plan_compaction(
        self,
        *,
        keep_tokens: Optional[int] = None,
        summarizer_model: Optional[str] = None,
        summarizer_max_tokens: Optional[int] = None,
        summary_tokens: Optional[int] = None,
        instructions: Optional[str] = None,
        output: RequestFormat = "messages",
        **kwargs: Any,
    ) -> dict[str, JSON]:
        """`chat compact --plan`: the span to fold and the request that
        summarizes it, `{"plan": TOKEN, "covers", "folded": {"chunks",
        "tokens"}, "remaining": {"chunks", "tokens"}, "request",
        "request_tokens", "request_tokens_exact", "summary_tokens"}`, or
        `{"plan": None, "reason": ...}` when there is nothing to fold. The
        chat is unchanged.

        - keep_tokens: tokens of the newest history kept verbatim (default:
          a quarter of the budget).
        - summarizer_model: the model that writes the summary and counts the
          request (default: `model`).
        - summarizer_max_tokens: its window, request and summary together
          (default: the summarizer model's window).
        - summary_tokens: the most tokens the summary may take (default 2048).
        - instructions: the summarizer's instructions, instead of the
          default template (text).
        - output: the request's shape.
        - `kwargs`: the chat's build settings, the keywords of `build` but
          `output`, `explain` and `cache_control` (`model`, `max_tokens`,
          `reserve`, `caps`, ...). `apply_compaction` must be given the same.
        """

    def apply_compaction(
        self,
        plan: Union[str, Mapping[str, Any]],
        summary: str,
        *,
        native: Optional[NativeCompaction] = None,
        **kwargs: Any,
    ) -> dict[str, JSON]:
        """`chat compact --apply`: appends the compaction chunk of `plan`
        (the token, or the dict `plan_compaction` returned) with `summary`,
        the summarizer's text, in one save: `{"chat", "branch", "head",
        "compaction", "covers", "tokens_before", "tokens_after"}`. `native`
        keeps the providers' own compaction items with it. `kwargs` are the
        build settings the plan was made with.

        Raises CompactionError, writing nothing, for a plan that no longer
        holds (applied already, rewound away, another compaction since,
        other settings) or a summary that is empty or not smaller than its
        span."""

    def export(self) -> dict[str, JSON]:
        """`chat export`: the branch as session JSON."""

    def checkpoint(self, name: str, *, force: bool = False) -> dict[str, JSON]:
        """`chat checkpoint`: names the branch's head."""

    def restore(self, checkpoint: str, *, name: Optional[str] = None) -> dict[str, JSON]:
        """`chat restore`: a new branch at the checkpoint, switched to."""

    def fork(self, name: str) -> dict[str, JSON]:
        """`chat fork`: a branch at the head, without switching."""

    def rewind(self, *, to: str, name: Optional[str] = None) -> dict[str, JSON]:
        """`chat rewind`: a new branch holding what came before chunk `to`."""

    def switch(self, name: str) -> dict[str, JSON]:
        """`chat switch`: makes branch `name` active."""

    def branches(self) -> dict[str, JSON]:
        """`chat branches`: the chat's branches and checkpoints."""

    def chats(self) -> dict[str, JSON]:
        """`chat list`: the store's chats."""
