//! The agent's typed memory: a session of chunks, parsed and validated from JSON.
//!
//! The JSON shape is the contract of the CLI and of serde (see the README):
//! every chunk has an `id` and a `kind`; any unknown field is an error that
//! names the chunk and the field, because a typo such as `"pined": true` would
//! otherwise silently drop a guarantee the caller asked for.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::content::Block;
use crate::error::{ChunkLocation, ErrorKind, Result};
use crate::fragment::Fragment;
use crate::model::compaction::{CompactionFields, NativeCompaction, SpanSize, check_covers};
use crate::model::context_management::ContextManagement;
use crate::model::roles::{ChunkKind, Retention, Role};
use crate::syntax::json_text::JsonText;

/// One entry of the agent's memory.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct MemoryChunk {
    /// Unique id within the session.
    pub id: String,
    /// What the chunk records.
    pub kind: ChunkKind,
    /// Speaker of an `agent` chunk (required there, rejected elsewhere).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// Sub-kind, e.g. `tool_call`, `subagent_result`, `task_completed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<Box<str>>,
    /// Text body.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// JSON body, rendered as pretty JSON (exclusive with `text`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<JsonText>,
    /// Formatted content, rendered in the builder's content format
    /// (exclusive with `text` and `data`; see [`crate::content`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<Arc<[Block]>>,
    /// Tool or skill name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<Box<str>>,
    /// Pairs a tool call with its result(s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_id: Option<Box<str>>,
    /// Whether a result or subagent succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub success: Option<bool>,
    /// Type of a spawned subagent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<Box<str>>,
    /// Pairs delegation chunks of one subagent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subagent_id: Option<Box<str>>,
    /// Where an environment chunk came from (e.g. `tool`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<Box<str>>,
    /// Status of a call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Box<str>>,
    /// Why a task ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<Box<str>>,
    /// Error text of a failed result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<Box<str>>,
    /// The provider's signature of a `thinking` chunk (Anthropic's extended
    /// thinking), sent back with it in native requests; text mode leaves it out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<Box<str>>,
    /// A `compaction` chunk's `covers`, `native` and `folded` (see
    /// [`covers`](MemoryChunk::covers) and the others), written at this
    /// place among the fields.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<Box<CompactionFields>>,
    /// Higher keeps longer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    /// Never dropped.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub pinned: bool,
    /// How willingly the chunk gives way.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retention: Option<Retention>,
    /// When the chunk was recorded (string or number, kept as given).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<JsonText>,
    /// Free JSON for custom renderers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub custom: Option<JsonText>,
}

impl MemoryChunk {
    /// A copy without its body (`text`, `data`) and `signature`, which
    /// vouches for the whole text: what a cut body is put back into,
    /// without copying a body of any length first.
    pub(crate) fn without_body(&self) -> MemoryChunk {
        let MemoryChunk {
            id,
            kind,
            role,
            action,
            text: _,
            data: _,
            content,
            tool,
            call_id,
            success,
            agent_type,
            subagent_id,
            source,
            status,
            reason,
            error,
            signature: _,
            compaction,
            priority,
            pinned,
            retention,
            created_at,
            custom,
        } = self;
        MemoryChunk {
            id: id.clone(),
            kind: *kind,
            role: *role,
            action: action.clone(),
            text: None,
            data: None,
            content: content.clone(),
            tool: tool.clone(),
            call_id: call_id.clone(),
            success: *success,
            agent_type: agent_type.clone(),
            subagent_id: subagent_id.clone(),
            source: source.clone(),
            status: status.clone(),
            reason: reason.clone(),
            error: error.clone(),
            signature: None,
            compaction: compaction.clone(),
            priority: *priority,
            pinned: *pinned,
            retention: *retention,
            created_at: created_at.clone(),
            custom: custom.clone(),
        }
    }

    /// A chunk with the given id and kind and no other field.
    pub fn new(id: impl Into<String>, kind: ChunkKind) -> Self {
        MemoryChunk {
            id: id.into(),
            kind,
            role: None,
            action: None,
            text: None,
            data: None,
            content: None,
            tool: None,
            call_id: None,
            success: None,
            agent_type: None,
            subagent_id: None,
            source: None,
            status: None,
            reason: None,
            error: None,
            signature: None,
            compaction: None,
            priority: None,
            pinned: false,
            retention: None,
            created_at: None,
            custom: None,
        }
    }

    /// An `agent` chunk spoken by `role`.
    pub fn agent(id: impl Into<String>, role: Role, text: impl Into<String>) -> Self {
        MemoryChunk::new(id, ChunkKind::Agent)
            .with_role(role)
            .with_text(text)
    }

    /// Sets the text body.
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text = Some(text.into());
        self
    }

    /// Sets the JSON body.
    pub fn with_data(mut self, data: impl Into<JsonText>) -> Self {
        self.data = Some(data.into());
        self
    }

    /// Sets formatted content as the body.
    pub fn with_content(mut self, blocks: Vec<Block>) -> Self {
        self.content = Some(blocks.into());
        self
    }

    /// Sets the role.
    pub fn with_role(mut self, role: Role) -> Self {
        self.role = Some(role);
        self
    }

    /// Sets the action.
    pub fn with_action(mut self, action: impl Into<String>) -> Self {
        self.action = Some(action.into().into_boxed_str());
        self
    }

    /// Sets the tool name.
    pub fn with_tool(mut self, tool: impl Into<String>) -> Self {
        self.tool = Some(tool.into().into_boxed_str());
        self
    }

    /// Sets the call id that pairs a tool call with its results.
    pub fn with_call_id(mut self, call_id: impl Into<String>) -> Self {
        self.call_id = Some(call_id.into().into_boxed_str());
        self
    }

    /// Pins the chunk: it is never dropped.
    pub fn pinned(mut self) -> Self {
        self.pinned = true;
        self
    }

    /// Sets the retention.
    pub fn with_retention(mut self, retention: Retention) -> Self {
        self.retention = Some(retention);
        self
    }

    /// Sets the signature of a `thinking` chunk.
    pub fn with_signature(mut self, signature: impl Into<String>) -> Self {
        self.signature = Some(signature.into().into_boxed_str());
        self
    }

    /// Sets the priority.
    pub fn with_priority(mut self, priority: i64) -> Self {
        self.priority = Some(priority);
        self
    }

    /// Checks this chunk on its own (all but uniqueness), reporting it as
    /// `chunks[index]`.
    pub(crate) fn validate_at(&self, index: usize) -> Result<()> {
        let fail = |field: &str, message: String| Err(chunk_error(index, self, field, message));
        if self.id.is_empty() {
            return fail("id", "must be a non-empty string".into());
        }
        match (self.kind, self.role) {
            (ChunkKind::Agent, None) => fail(
                "role",
                "an agent chunk needs \"role\": \"user\" or \"assistant\"".into(),
            ),
            (ChunkKind::Agent, Some(Role::System)) => fail(
                "role",
                "an agent chunk's role is \"user\" or \"assistant\"; use kind \"system\" for \
                 system context"
                    .into(),
            ),
            (kind, Some(_)) if kind != ChunkKind::Agent => fail(
                "role",
                format!(
                    "only agent chunks take a role; a {} chunk's role follows from its kind and \
                     action",
                    kind.as_str()
                ),
            ),
            _ if self.text.is_some() && self.data.is_some() => {
                fail("data", "give either \"text\" or \"data\", not both".into())
            }
            _ if self.content.is_some() && (self.text.is_some() || self.data.is_some()) => fail(
                "content",
                "give one body: \"content\", \"text\" or \"data\", not several".into(),
            ),
            (kind, _) if self.signature.is_some() && kind != ChunkKind::Thinking => fail(
                "signature",
                format!(
                    "only thinking chunks carry a signature, not a {} chunk",
                    kind.as_str()
                ),
            ),
            (ChunkKind::Compaction, _) => self.validate_compaction(index),
            (kind, _) => match self.compaction_field() {
                Some(field) => fail(
                    field,
                    format!(
                        "only compaction chunks take \"{field}\", not a {} chunk",
                        kind.as_str()
                    ),
                ),
                None => Ok(()),
            },
        }
    }

    /// The last chunk a `compaction` chunk stands for (its id).
    pub fn covers(&self) -> Option<&str> {
        self.compaction.as_ref()?.covers.as_deref()
    }

    /// A `compaction` chunk's own provider items.
    pub fn native(&self) -> Option<&NativeCompaction> {
        self.compaction.as_ref()?.native.as_ref()
    }

    /// What a `compaction` chunk folds, as its plan counted it.
    pub fn folded(&self) -> Option<SpanSize> {
        self.compaction.as_ref()?.folded
    }

    /// The compaction fields, made empty if the chunk has none yet.
    pub fn compaction_fields(&mut self) -> &mut CompactionFields {
        self.compaction.get_or_insert_with(Box::default)
    }

    /// The first field only a compaction chunk may set, if this sets one.
    fn compaction_field(&self) -> Option<&'static str> {
        [
            ("covers", self.covers().is_some()),
            ("native", self.native().is_some()),
            ("folded", self.folded().is_some()),
        ]
        .into_iter()
        .find_map(|(field, set)| set.then_some(field))
    }

    /// A compaction chunk on its own: it names what it covers and holds a
    /// summary someone can read (its `text`, or Anthropic's `content`).
    fn validate_compaction(&self, index: usize) -> Result<()> {
        let fail =
            |field: &str, message: &str| Err(chunk_error(index, self, field, message.into()));
        if self.covers().is_none_or(str::is_empty) {
            return fail(
                "covers",
                "a compaction chunk names the last chunk it stands for: \"covers\": ID",
            );
        }
        if self.data.is_some() || self.content.is_some() {
            let field = if self.data.is_some() {
                "data"
            } else {
                "content"
            };
            return fail(field, "a compaction's summary is its \"text\"");
        }
        let readable = self.text.as_deref().is_some_and(|t| !t.is_empty())
            || self.native().and_then(|n| n.readable_text()).is_some();
        if !readable {
            return fail(
                "text",
                "a compaction chunk needs a summary: a non-empty \"text\", or a \
                 native.anthropic block with readable \"content\"",
            );
        }
        Ok(())
    }

    /// Whether this is the user speaking (an `agent` chunk with role `user`).
    pub fn is_user_turn(&self) -> bool {
        self.kind == ChunkKind::Agent && self.role == Some(Role::User)
    }
}

/// A session: the whole memory an agent turns into a prompt.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct MemoryState {
    /// Optional session id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Rendered first in the system message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Structured system context, rendered after the system prompt.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fragments: Vec<Fragment>,
    /// The chunks, oldest first.
    pub chunks: Vec<MemoryChunk>,
    /// Anthropic's `context_management` edits this session asks for (see
    /// [`ContextManagement`](crate::budget::ContextManagement)): a build applies them unless its policy sets
    /// its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_management: Option<ContextManagement>,
}

impl MemoryState {
    /// An empty session.
    pub fn new() -> Self {
        MemoryState::default()
    }

    /// Sets the system prompt.
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Appends a fragment of structured system context.
    pub fn with_fragment(mut self, fragment: Fragment) -> Self {
        self.fragments.push(fragment);
        self
    }

    /// Appends a chunk.
    pub fn with_chunk(mut self, chunk: MemoryChunk) -> Self {
        self.chunks.push(chunk);
        self
    }

    /// Checks the invariants a hand-built session must also hold: ids present
    /// and unique, `role` given exactly on `agent` chunks, one body at most
    /// (`text`, `data` or `content`).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Chunk`] naming the first offending chunk and field.
    pub fn validate(&self) -> Result<()> {
        self.validate_with(Covers::Here)
    }

    /// [`validate`](MemoryState::validate), with compactions' `covers`
    /// looked for as `covers` says.
    pub(crate) fn validate_with(&self, covers_in: Covers) -> Result<()> {
        let mut seen: HashMap<&str, usize> = HashMap::with_capacity(self.chunks.len());
        // The newest compaction so far, with the index of what it covers.
        let mut previous: Option<(&MemoryChunk, usize)> = None;
        for (index, chunk) in self.chunks.iter().enumerate() {
            chunk.validate_at(index)?;
            if let Some(covers) = chunk
                .covers()
                .filter(|c| covers_in == Covers::Here || seen.contains_key(c))
            {
                let covered = seen.get(covers).map(|&i| (i, &self.chunks[i]));
                let at = check_covers(covers, covered, previous)
                    .map_err(|message| chunk_error(index, chunk, "covers", message))?;
                previous = Some((chunk, at));
            }
            if seen.insert(chunk.id.as_str(), index).is_some() {
                return Err(chunk_error(index, chunk, "id", DUPLICATE_ID.into()));
            }
        }
        Ok(())
    }
}

/// Where the chunks a compaction covers are looked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Covers {
    /// Among the chunks before it in this state.
    Here,
    /// Also on a branch this state is appended to, which checks them (a
    /// batch for `chat append`): only those in the batch are checked here.
    #[cfg_attr(not(feature = "command"), allow(dead_code))]
    AlsoBefore,
}

/// The message for an id that is taken.
pub(crate) const DUPLICATE_ID: &str = "duplicate id: every chunk id must be unique";

/// An error about `chunk`'s `field`, located at `chunks[index]`.
pub(crate) fn chunk_error(
    index: usize,
    chunk: &MemoryChunk,
    field: &str,
    message: String,
) -> crate::Error {
    ErrorKind::Chunk {
        location: ChunkLocation {
            index,
            id: Some(chunk.id.clone()),
        },
        field: field.to_owned(),
        message,
    }
    .into()
}

pub(crate) type JsonObject = Map<String, Value>;
