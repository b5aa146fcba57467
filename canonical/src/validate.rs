//! The validator for the model rules that types alone cannot hold, and the assembler that turns a
//! wire event stream into sessions while enforcing event order and the per-role allowlists.

use crate::event::{MessageHead, Role, WireEvent};
use crate::ids::SessionId;
use crate::model::{
    AssistantMessage, AssistantPart, Message, Part, Session, SessionLog, SystemMessage,
    ToolMessage, ToolPart, UserMessage, UserPart,
};
use serde::Serialize;
use std::collections::HashMap;
use std::fmt;

/// A broken model rule, named by its spec id, with where it broke.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// The spec rule id, e.g. `model-parent-pointer-coherence`.
    pub rule: &'static str,
    /// What broke it: a session, message or part id, or an event index.
    pub at: String,
    /// What is wrong, for a person.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = format!("{} at {}: {}", self.rule, self.at, self.message);
        f.write_str(&crate::untrusted::escape_controls(&text))
    }
}

impl std::error::Error for Violation {}

fn violation(rule: &'static str, at: impl fmt::Display, message: impl Into<String>) -> Violation {
    Violation {
        rule,
        at: at.to_string(),
        message: message.into(),
    }
}

/// Checks one session's own fields.
pub fn check_session(session: &Session) -> Vec<Violation> {
    let mut found = Vec::new();
    let at = format!("session {}", session.id);
    // model-parent-pointer-coherence
    if session.parent_message_id.is_some() && session.parent_session_id.is_none() {
        found.push(violation(
            "model-parent-pointer-coherence",
            &at,
            "parent_message_id is set but parent_session_id is not: a cut-point needs a parent session",
        ));
    }
    // model-project-non-empty
    if session.project.as_str().trim().is_empty() {
        found.push(violation(
            "model-project-non-empty",
            &at,
            "project is empty",
        ));
    }
    if session.source_agent.trim().is_empty() {
        found.push(violation(
            "model-session-source-agent",
            &at,
            "source_agent is empty",
        ));
    }
    found
}

/// Checks a whole session log: the session, and that every message and part points back at it.
pub fn check_log(log: &SessionLog) -> Vec<Violation> {
    let mut found = check_session(&log.session);
    let sid = &log.session.id;
    let mut seen = HashMap::new();
    for (i, m) in log.messages.iter().enumerate() {
        let at = format!("message {} (#{i})", m.id());
        if m.session_id() != sid {
            found.push(violation(
                "adapter-integrity-event-ordering",
                &at,
                format!("belongs to session {}, not {sid}", m.session_id()),
            ));
        }
        if let Some(first) = seen.insert(m.id().clone(), i) {
            found.push(violation(
                "adapter-integrity-dedup",
                &at,
                format!("same id as message #{first}"),
            ));
        }
        for p in m.parts() {
            let (ps, pm) = p.owner();
            if ps != sid || pm != m.id() {
                found.push(violation(
                    "adapter-integrity-event-ordering",
                    format!("part {}", p.id()),
                    format!("points at {ps}/{pm} but sits in {sid}/{}", m.id()),
                ));
            }
        }
    }
    found
}

/// Builds sessions from wire events, checking adapter-integrity-event-ordering (a session before
/// its messages, each message's parts right after it) and the per-role content allowlists.
pub fn assemble(events: impl IntoIterator<Item = WireEvent>) -> Result<Vec<SessionLog>, Violation> {
    const ORDER: &str = "adapter-integrity-event-ordering";
    const ALLOW: &str = "model-role-allowlist";
    let mut logs: Vec<SessionLog> = Vec::new();
    let mut index: HashMap<SessionId, usize> = HashMap::new();
    for (n, event) in events.into_iter().enumerate() {
        let at = format!("event #{n}");
        match event {
            WireEvent::Session(s) => {
                if let Some(v) = check_session(&s).into_iter().next() {
                    return Err(Violation {
                        at: format!("{at} ({})", v.at),
                        ..v
                    });
                }
                if index.contains_key(&s.id) {
                    return Err(violation(
                        ORDER,
                        at,
                        format!("session {} appears twice", s.id),
                    ));
                }
                index.insert(s.id.clone(), logs.len());
                logs.push(SessionLog::new(s, Vec::new()));
            }
            WireEvent::Message(head) => {
                let Some(&i) = index.get(&head.session_id) else {
                    return Err(violation(
                        ORDER,
                        at,
                        format!(
                            "message {} comes before its session {}",
                            head.id, head.session_id
                        ),
                    ));
                };
                let message = message_from_head(head).map_err(|m| violation(ALLOW, &at, m))?;
                logs[i].messages.push(message);
            }
            WireEvent::Part(part) => {
                let (sid, mid) = part.owner();
                let last = index.get(sid).and_then(|&i| logs[i].messages.last_mut());
                let Some(message) = last.filter(|m| m.id() == mid) else {
                    return Err(violation(
                        ORDER,
                        at,
                        format!(
                            "part {} for message {sid}/{mid} does not directly follow that message",
                            part.id()
                        ),
                    ));
                };
                add_part(message, part).map_err(|m| violation(ALLOW, &at, m))?;
            }
        }
    }
    Ok(logs)
}

fn message_from_head(head: MessageHead) -> Result<Message, String> {
    let MessageHead {
        id,
        session_id,
        role,
        timestamp,
        content,
        options,
    } = head;
    if role != Role::System && content.is_some() {
        return Err(format!(
            "message {id}: only a system message has string content"
        ));
    }
    Ok(match role {
        Role::System => {
            let content = content.ok_or_else(|| format!("system message {id} has no content"))?;
            Message::System(SystemMessage {
                id,
                session_id,
                timestamp,
                content,
                options,
            })
        }
        Role::User => Message::User(UserMessage {
            id,
            session_id,
            timestamp,
            content: Vec::new(),
            options,
        }),
        Role::Assistant => Message::Assistant(AssistantMessage {
            id,
            session_id,
            timestamp,
            content: Vec::new(),
            options,
        }),
        Role::Tool => Message::Tool(ToolMessage {
            id,
            session_id,
            timestamp,
            content: Vec::new(),
            options,
        }),
    })
}

fn add_part(message: &mut Message, part: Part) -> Result<(), String> {
    let refuse = |role: &str, p: Part| format!("a {} part cannot be in a {role} message", p.kind());
    match message {
        Message::System(_) => Err(format!(
            "a {} part cannot be in a system message",
            part.kind()
        )),
        Message::User(m) => UserPart::try_from(part)
            .map(|p| m.content.push(p))
            .map_err(|p| refuse("user", p)),
        Message::Assistant(m) => AssistantPart::try_from(part)
            .map(|p| m.content.push(p))
            .map_err(|p| refuse("assistant", p)),
        Message::Tool(m) => ToolPart::try_from(part)
            .map(|p| m.content.push(p))
            .map_err(|p| refuse("tool", p)),
    }
}
