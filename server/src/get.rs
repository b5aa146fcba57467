//! `pond_get` (spec 7.5): a stored session a page at a time, or one message with its parts and
//! neighbours. The paging is `pond_store::get`'s (pure functions of a loaded session, shared with
//! `pond get`); its page types are the wire response, re-exported here.

use crate::envelope::{Pond, check_version};
use crate::error::{ErrorCode, PondError};
use pond_store::get::{DEFAULT_BUDGET_BYTES, GetError};
pub use pond_store::get::{
    GetResponse, MessagePage, MessageView, PartsSummary, ResponseMode, SessionHead, SessionPage,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The most `context_depth`: enough to read around a match, not a way to page a session.
pub const MAX_CONTEXT_DEPTH: u32 = 50;

/// A `pond_get` request: a session (session mode), or one of its messages (message mode, with
/// `message_id`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetRequest {
    /// The protocol version; this pond speaks 1.
    pub protocol_version: u32,
    /// The tenant namespace; omit it for the personal pond.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The session, as a search result or `pond sessions` names it; or the start of its id (at
    /// least 4 characters) when no other stored id begins with it.
    pub session_id: String,
    /// Session mode: `conversational` (the default: what the user and the model said, with a
    /// summary of each message's parts), `complete` (every message, tool and system ones too),
    /// or `verbatim` (every message with all its parts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_mode: Option<ResponseMode>,
    /// Message mode: this message's full parts, a page at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// Message mode: how many messages to show on each side of it (0 to 50; default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_depth: Option<u32>,
    /// The next page: the `next_after_id` of the page before (a message id in session mode, a
    /// part id in message mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_id: Option<String>,
}

impl GetRequest {
    /// The first page of a session, conversational.
    pub fn session(id: impl Into<String>) -> Self {
        Self {
            protocol_version: crate::PROTOCOL_VERSION,
            namespace: None,
            session_id: id.into(),
            response_mode: None,
            message_id: None,
            context_depth: None,
            after_id: None,
        }
    }
}

/// `pond_get`: one page of a session, or one message with its neighbours.
pub async fn pond_get(pond: &Pond, request: GetRequest) -> Result<GetResponse, PondError> {
    check_version(request.protocol_version)?;
    let store = pond.namespace(request.namespace.as_deref()).await?;
    if request.session_id.is_empty() {
        return Err(PondError::invalid("session_id", "session_id is empty"));
    }
    let depth = request.context_depth.unwrap_or(0);
    if depth > MAX_CONTEXT_DEPTH {
        return Err(PondError::invalid(
            "context_depth",
            format!(
                "context_depth {depth} is over {MAX_CONTEXT_DEPTH}: page the session instead (leave out message_id)"
            ),
        ));
    }
    if depth > 0 && request.message_id.is_none() {
        return Err(PondError::invalid(
            "context_depth",
            "context_depth needs message_id: it is the number of messages shown around that message",
        ));
    }
    let inner = pond_store::get::GetRequest {
        session_id: request.session_id,
        response_mode: request.response_mode.unwrap_or_default(),
        message_id: request.message_id,
        context_depth: depth as usize,
        after_id: request.after_id,
        budget_bytes: DEFAULT_BUDGET_BYTES,
    };
    pond_store::get::get(&store, &inner).await.map_err(|e| match e {
        GetError::SessionNotFound { id, candidates } => PondError::new(
            ErrorCode::NotFound,
            candidates.message(&id),
        )
        .with("session_id", id)
        .with("candidates", candidates.ids),
        GetError::MessageNotFound { session, message } => PondError::new(
            ErrorCode::NotFound,
            format!("session {session} has no message {message}"),
        )
        .with("session_id", session)
        .with("message_id", message),
        GetError::AfterIdNotFound { after_id } => PondError::invalid(
            "after_id",
            format!("after_id {after_id} is not an id on this path: pass the next_after_id of the page before"),
        ),
        GetError::Store(e) => e.into(),
    })
}
