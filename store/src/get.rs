//! `pond get` / `pond_get` (spec 7.6): one stored session in pages, or one message with the
//! messages around it. The paging is a pure function of a loaded session ([`session_page`],
//! [`message_page`]) so the CLI, the HTTP API and the MCP server share it; [`get`] loads and
//! pages.
//!
//! Pages are bounded by a size budget (the JSON size of what they carry) and never cut a message
//! in two: a page holds at least one message (or, in message mode, one part) however large, and
//! stops before the first one that would pass the budget. The caller pages on by passing the last
//! id it got as `after_id` while `messages_remaining` / `target_parts_remaining` is non-zero.

use crate::sessions::{IdCandidates, SessionStore};
use crate::substrate::StoreError;
use pond_canonical::{Message, PartRef, Provenance, Session};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;

/// The default page budget: the JSON bytes of the messages (or parts) a page carries.
pub const DEFAULT_BUDGET_BYTES: usize = 64 * 1024;

/// How much of each message a session page carries (spec 7.6 `response_mode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResponseMode {
    /// The human and model text only: user and assistant messages with conversational text,
    /// each with a compact summary of its parts.
    #[default]
    Conversational,
    /// Every message, system and tool carriers included, with its text and parts summary.
    Complete,
    /// Every message with its full parts inline, as the canonical model has it.
    Verbatim,
}

/// What to get.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GetRequest {
    /// The stored session.
    pub session_id: String,
    /// Session mode: how much of each message to carry.
    #[serde(default)]
    pub response_mode: ResponseMode,
    /// Message mode: this message's full parts, with `context_depth` messages each side.
    #[serde(default)]
    pub message_id: Option<String>,
    /// Message mode: how many sibling messages to show each side of the target.
    #[serde(default)]
    pub context_depth: usize,
    /// Continue after this id: a message id in session mode, a part id in message mode.
    #[serde(default)]
    pub after_id: Option<String>,
    /// The page's size budget in bytes of JSON.
    #[serde(default = "default_budget")]
    pub budget_bytes: usize,
}

fn default_budget() -> usize {
    DEFAULT_BUDGET_BYTES
}

impl GetRequest {
    /// The first page of a session, conversational, default budget.
    pub fn session(id: impl Into<String>) -> Self {
        Self {
            session_id: id.into(),
            response_mode: ResponseMode::default(),
            message_id: None,
            context_depth: 0,
            after_id: None,
            budget_bytes: DEFAULT_BUDGET_BYTES,
        }
    }
}

/// The stored session a page belongs to.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SessionHead {
    pub id: String,
    pub source_agent: String,
    pub project: String,
    pub created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_session_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_message_id: Option<String>,
    /// Every message the session has, whatever the mode shows.
    pub message_count: u64,
}

/// A compact account of a message's parts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct PartsSummary {
    /// How many parts of each type (`text`, `tool_call`, ...).
    pub kinds: BTreeMap<&'static str, u64>,
    /// How many were injected by the harness rather than said by the user or model.
    #[serde(skip_serializing_if = "is_zero")]
    pub injected: u64,
    /// The tools called or answered, in order of first appearance.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One message as a page shows it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct MessageView {
    pub id: String,
    pub role: &'static str,
    pub timestamp: String,
    /// The message's text: conversational text in conversational mode, all text in complete mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Its parts, summarized (conversational and complete modes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parts_summary: Option<PartsSummary>,
    /// The whole canonical message, parts inline (verbatim mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<Value>,
}

/// A page of a session.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SessionPage {
    pub session: SessionHead,
    pub response_mode: ResponseMode,
    pub messages: Vec<MessageView>,
    /// Messages of this mode after the page; non-zero means page on with `after_id`.
    pub messages_remaining: u64,
    /// The id to pass as `after_id` for the next page, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_after_id: Option<String>,
}

/// One message with its full parts (a page of them) and its neighbours.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct MessagePage {
    pub session: SessionHead,
    /// The target message (text and summary; its parts are in `target_parts`).
    pub target: MessageView,
    /// The target's parts, in order, as the canonical model has them.
    pub target_parts: Vec<Value>,
    /// Parts of the target after this page; non-zero means page on with `after_id`.
    pub target_parts_remaining: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_after_id: Option<String>,
    /// Up to `context_depth` messages before the target, oldest first.
    pub before: Vec<MessageView>,
    /// Up to `context_depth` messages after the target.
    pub after: Vec<MessageView>,
}

/// What `get` answers.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum GetResponse {
    Session(SessionPage),
    Message(MessagePage),
}

/// Why a get could not be answered.
#[derive(Debug)]
pub enum GetError {
    /// No stored session has this id, nor is it the start of exactly one stored id; the ids that
    /// begin with it are named.
    SessionNotFound {
        id: String,
        candidates: IdCandidates,
    },
    /// The session has no message with this id.
    MessageNotFound { session: String, message: String },
    /// `after_id` names nothing on this path (a message id in session mode, a part id of the
    /// target in message mode).
    AfterIdNotFound { after_id: String },
    /// The store failed.
    Store(StoreError),
}

impl fmt::Display for GetError {
    /// The message, with every control character quoted from the input escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        pond_canonical::untrusted::write_escaped(f, |f| self.describe(f))
    }
}

impl GetError {
    /// The message as it is made, before its control characters are escaped.
    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::SessionNotFound { id, candidates } => {
                write!(f, "{}", candidates.message(id))
            }
            Self::MessageNotFound { session, message } => {
                write!(f, "session {session} has no message {message}")
            }
            Self::AfterIdNotFound { after_id } => {
                write!(f, "--after-id {after_id} is not an id on this page's path")
            }
            Self::Store(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for GetError {}

impl From<StoreError> for GetError {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

/// Loads the session `request` names and answers with one page.
pub async fn get(store: &SessionStore, request: &GetRequest) -> Result<GetResponse, GetError> {
    let id = store
        .resolve_session_id(&request.session_id)
        .await?
        .map_err(|candidates| GetError::SessionNotFound {
            id: request.session_id.clone(),
            candidates,
        })?;
    let session = store
        .session_and_children(&id)
        .await?
        .into_iter()
        .find(|s| s.id.as_str() == id)
        .ok_or_else(|| GetError::SessionNotFound {
            id: request.session_id.clone(),
            candidates: IdCandidates::default(),
        })?;
    let messages: Vec<Message> = store
        .load_messages(session.id.as_str())
        .await?
        .into_iter()
        .map(|(_, m)| m)
        .collect();
    match &request.message_id {
        None => session_page(&session, &messages, request).map(GetResponse::Session),
        Some(id) => message_page(&session, &messages, id, request).map(GetResponse::Message),
    }
}

fn head(session: &Session, messages: &[Message]) -> SessionHead {
    SessionHead {
        id: session.id.to_string(),
        source_agent: session.source_agent.clone(),
        project: session.project.as_str().to_owned(),
        created_at: session.created_at.to_string(),
        parent_session_id: session.parent_session_id.as_ref().map(ToString::to_string),
        parent_message_id: session.parent_message_id.as_ref().map(ToString::to_string),
        message_count: messages.len() as u64,
    }
}

/// One page of `messages` (a session's, in log order) in the request's response mode.
pub fn session_page(
    session: &Session,
    messages: &[Message],
    request: &GetRequest,
) -> Result<SessionPage, GetError> {
    let mode = request.response_mode;
    let shown: Vec<&Message> = messages
        .iter()
        .filter(|m| mode != ResponseMode::Conversational || conversational_text(m).is_some())
        .collect();
    let start = match &request.after_id {
        None => 0,
        Some(after) => {
            shown
                .iter()
                .position(|m| m.id().as_str() == after)
                .ok_or_else(|| GetError::AfterIdNotFound {
                    after_id: after.clone(),
                })?
                + 1
        }
    };
    let views = shown[start..].iter().map(|m| view(m, mode));
    let (page, rest) = fill(views, request.budget_bytes);
    Ok(SessionPage {
        session: head(session, messages),
        response_mode: mode,
        next_after_id: (rest > 0)
            .then(|| page.last().map(|v| v.id.clone()))
            .flatten(),
        messages: page,
        messages_remaining: rest,
    })
}

/// Message `id` of `messages` with a page of its parts and `context_depth` neighbours each side.
pub fn message_page(
    session: &Session,
    messages: &[Message],
    id: &str,
    request: &GetRequest,
) -> Result<MessagePage, GetError> {
    let at = messages
        .iter()
        .position(|m| m.id().as_str() == id)
        .ok_or_else(|| GetError::MessageNotFound {
            session: session.id.to_string(),
            message: id.to_owned(),
        })?;
    let target = &messages[at];
    let parts: Vec<(String, Value)> = target
        .part_refs()
        .iter()
        .map(|p| {
            let value = serde_json::to_value(p.to_part()).expect("a part serializes");
            (p.id().to_string(), value)
        })
        .collect();
    let start = match &request.after_id {
        None => 0,
        Some(after) => {
            parts
                .iter()
                .position(|(pid, _)| pid == after)
                .ok_or_else(|| GetError::AfterIdNotFound {
                    after_id: after.clone(),
                })?
                + 1
        }
    };
    let (page, rest) = fill(
        parts[start..]
            .iter()
            .map(|(pid, v)| (pid.clone(), v.clone())),
        request.budget_bytes,
    );
    let next_after_id = (rest > 0)
        .then(|| page.last().map(|(pid, _)| pid.clone()))
        .flatten();
    let depth = request.context_depth;
    let context = |ms: &[Message]| -> Vec<MessageView> {
        ms.iter().map(|m| view(m, ResponseMode::Complete)).collect()
    };
    Ok(MessagePage {
        session: head(session, messages),
        target: view(target, ResponseMode::Complete),
        target_parts: page.into_iter().map(|(_, v)| v).collect(),
        target_parts_remaining: rest,
        next_after_id,
        before: context(&messages[at.saturating_sub(depth)..at]),
        after: context(&messages[at + 1..(at + 1 + depth).min(messages.len())]),
    })
}

/// Something a page carries, and its JSON size.
trait Carried {
    fn json_len(&self) -> usize;
}

impl Carried for MessageView {
    fn json_len(&self) -> usize {
        serde_json::to_vec(self).map_or(0, |v| v.len())
    }
}

impl Carried for (String, Value) {
    fn json_len(&self) -> usize {
        serde_json::to_vec(&self.1).map_or(0, |v| v.len())
    }
}

/// Takes items while they fit `budget` (always at least one); returns them and how many are left.
fn fill<T: Carried>(items: impl ExactSizeIterator<Item = T>, budget: usize) -> (Vec<T>, u64) {
    let total = items.len();
    let mut page = Vec::new();
    let mut used = 0usize;
    for item in items {
        let len = item.json_len();
        if !page.is_empty() && used + len > budget {
            break;
        }
        used += len;
        page.push(item);
    }
    let rest = (total - page.len()) as u64;
    (page, rest)
}

/// A message as `mode` shows it.
pub fn view(m: &Message, mode: ResponseMode) -> MessageView {
    let (text, parts_summary, message) = match mode {
        ResponseMode::Conversational => (conversational_text(m), Some(summary(m)), None),
        ResponseMode::Complete => (all_text(m), Some(summary(m)), None),
        ResponseMode::Verbatim => (
            None,
            None,
            Some(serde_json::to_value(m).expect("a message serializes")),
        ),
    };
    MessageView {
        id: m.id().to_string(),
        role: m.role(),
        timestamp: m.timestamp().as_str().to_owned(),
        text,
        parts_summary,
        message,
    }
}

/// The human or model text of a user or assistant message: its conversational text parts.
pub fn conversational_text(m: &Message) -> Option<String> {
    if !matches!(m, Message::User(_) | Message::Assistant(_)) {
        return None;
    }
    join_text(m, |p| p.provenance() == Provenance::Conversational)
}

/// Every text a message carries: its text parts, or a system message's content.
fn all_text(m: &Message) -> Option<String> {
    if let Message::System(s) = m {
        let t = s.content.as_str();
        return (!t.is_empty()).then(|| t.to_owned());
    }
    join_text(m, |_| true)
}

fn join_text(m: &Message, keep: impl Fn(&PartRef<'_>) -> bool) -> Option<String> {
    let texts: Vec<&str> = m
        .part_refs()
        .into_iter()
        .filter(|p| keep(p))
        .filter_map(|p| match p {
            PartRef::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .filter(|t| !t.trim().is_empty())
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n\n"))
}

/// A message's parts counted by type, with the tools they call or answer.
pub fn summary(m: &Message) -> PartsSummary {
    summary_of(m.part_refs())
}

/// The summary of some parts (one message's, in order).
pub fn summary_of<'a>(parts: impl IntoIterator<Item = PartRef<'a>>) -> PartsSummary {
    let mut s = PartsSummary::default();
    for p in parts {
        let tool = match p {
            PartRef::ToolCall(c) => Some(c.name.as_str()),
            PartRef::ToolResult(r) => r.name.as_ref().map(|n| n.as_str()),
            _ => None,
        };
        s.add(p.kind(), p.provenance(), tool);
    }
    s
}

impl PartsSummary {
    /// Counts one part: its `type`, its provenance, and the tool it calls or answers.
    pub fn add(&mut self, kind: &'static str, provenance: Provenance, tool: Option<&str>) {
        *self.kinds.entry(kind).or_insert(0) += 1;
        if provenance == Provenance::Injected {
            self.injected += 1;
        }
        if let Some(t) = tool
            && !self.tools.iter().any(|x| x == t)
        {
            self.tools.push(t.to_owned());
        }
    }
}
