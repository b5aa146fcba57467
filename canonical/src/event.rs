//! Canonical event streams: what a read face emits and what `pond_ingest` accepts.
//!
//! In process, a read face emits [`Event`]s: a session, then its messages with their parts inline,
//! which is adapter-integrity-event-ordering by construction. On the wire (spec 7.6) each
//! Session, Message and Part is its own [`WireEvent`]; [`crate::validate::assemble`] checks their
//! order and the per-role allowlists and builds [`SessionLog`](crate::SessionLog)s from them.

use crate::bounded::Text;
use crate::ids::{MessageId, SessionId};
use crate::model::{Message, Options, Part, Session};
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

/// One step of a read face's output. Sessions of one source may interleave, but each session's
/// `Session` event comes before any of its messages.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Session(Session),
    Message(Message),
}

/// A message's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// A message without its parts, as it travels on the wire; its parts follow it as `part` events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MessageHead {
    pub id: MessageId,
    pub session_id: SessionId,
    pub role: Role,
    pub timestamp: Timestamp,
    /// The text of a system message; absent for every other role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Text>,
    #[serde(default)]
    pub options: Options,
}

/// One canonical object on the wire, tagged with its kind (spec 7.6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WireEvent {
    Session(Session),
    Message(MessageHead),
    Part(Part),
}

impl Event {
    /// The wire events of this event: a message becomes its head followed by its parts.
    pub fn to_wire(&self) -> Vec<WireEvent> {
        match self {
            Event::Session(s) => vec![WireEvent::Session(s.clone())],
            Event::Message(m) => {
                let role = match m {
                    Message::System(_) => Role::System,
                    Message::User(_) => Role::User,
                    Message::Assistant(_) => Role::Assistant,
                    Message::Tool(_) => Role::Tool,
                };
                let content = match m {
                    Message::System(s) => Some(s.content.clone()),
                    _ => None,
                };
                let head = MessageHead {
                    id: m.id().clone(),
                    session_id: m.session_id().clone(),
                    role,
                    timestamp: m.timestamp().clone(),
                    content,
                    options: m.options().clone(),
                };
                std::iter::once(WireEvent::Message(head))
                    .chain(m.parts().into_iter().map(WireEvent::Part))
                    .collect()
            }
        }
    }
}
