//! The checks a `pond_ingest` batch (spec 7.5, 7.6) gets before any store is touched: its events
//! grouped by session in the order each session first appears, and each session's substream
//! checked by the rules the read faces obey (adapter-integrity-event-ordering, the role
//! allowlists, the model validator) and against the session as stored, when it is
//! (session-immutable-fields). The handler (`pond_server::ingest`) looks the stored sessions up
//! and writes what passes; this part needs no store, so the fuzz target `wire_events` runs it
//! on hostile bodies.

use crate::event::WireEvent;
use crate::model::{Session, SessionLog};
use crate::validate;
use std::collections::HashMap;

/// Why a session of a batch is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The spec rule id.
    pub rule: &'static str,
    /// What is wrong, for a person.
    pub message: String,
    /// The request field at fault, when it is one field of every event (`events[].project`).
    pub field: Option<&'static str>,
}

/// One session's events of a batch, each with its position in the batch.
pub type Substream = Vec<(usize, WireEvent)>;

/// The batch's events grouped by session id, sessions in the order each first appears, events in
/// batch order.
pub fn by_session(events: Vec<WireEvent>) -> Vec<(String, Substream)> {
    let mut order: Vec<(String, Substream)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for (i, event) in events.into_iter().enumerate() {
        let sid = match &event {
            WireEvent::Session(s) => s.id.to_string(),
            WireEvent::Message(m) => m.session_id.to_string(),
            WireEvent::Part(p) => p.owner().0.to_string(),
        };
        let slot = *index.entry(sid.clone()).or_insert_with(|| {
            order.push((sid, Vec::new()));
            order.len() - 1
        });
        order[slot].1.push((i, event));
    }
    order
}

/// One session's substream as a log ready to write, with the batch position of each of its
/// messages (the handler makes each message's `seq` of it); or why not. `stored` is the session
/// as the store holds it, if it does: a substream may then leave the session out (a
/// continuation), and may not change its `source_agent` or `project` (both are denormalized
/// onto its messages).
pub fn check_session(
    mut events: Substream,
    stored: Option<&Session>,
) -> Result<(SessionLog, Vec<usize>), Refusal> {
    let refused = |rule: &'static str, message: String| Refusal {
        rule,
        message,
        field: None,
    };
    match (events.first(), stored) {
        (Some((_, WireEvent::Session(sent))), Some(stored)) => {
            // spec 7.6: source_agent and project are immutable once stored.
            for (field, path, was, now) in [
                (
                    "source_agent",
                    "events[].source_agent",
                    stored.source_agent.as_str(),
                    sent.source_agent.as_str(),
                ),
                (
                    "project",
                    "events[].project",
                    stored.project.as_str(),
                    sent.project.as_str(),
                ),
            ] {
                if was != now {
                    return Err(Refusal {
                        field: Some(path),
                        ..refused(
                            "session-immutable-fields",
                            format!(
                                "session {}: {field} is {now:?} here but {was:?} in the store; it cannot change once stored (spec 7.6)",
                                sent.id
                            ),
                        )
                    });
                }
            }
        }
        (Some((_, WireEvent::Session(_))), None) => {}
        (_, Some(stored)) => {
            // A continuation: the session was stored by an earlier batch.
            events.insert(0, (usize::MAX, WireEvent::Session(stored.clone())));
        }
        (Some((i, _)), None) => {
            return Err(refused(
                "adapter-integrity-event-ordering",
                format!("event #{i}: its session is neither in this batch before it nor stored"),
            ));
        }
        (None, None) => {
            return Err(refused(
                "adapter-integrity-event-ordering",
                "a session with no events".to_owned(),
            ));
        }
    }
    let positions: Vec<usize> = events
        .iter()
        .filter(|(_, e)| matches!(e, WireEvent::Message(_)))
        .map(|(i, _)| *i)
        .collect();
    let mut logs = validate::assemble(events.into_iter().map(|(_, e)| e))
        .map_err(|v| refused(v.rule, v.to_string()))?;
    let Some(log) = logs.pop().filter(|_| logs.is_empty()) else {
        return Err(refused(
            "adapter-integrity-event-ordering",
            "one session's events did not assemble into one session".to_owned(),
        ));
    };
    if let Some(v) = validate::check_log(&log).into_iter().next() {
        return Err(refused(v.rule, v.to_string()));
    }
    Ok((log, positions))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn session(id: &str, project: &str) -> WireEvent {
        serde_json::from_value(json!({
            "kind": "session", "id": id, "source_agent": "claude-code",
            "created_at": "2026-01-01T00:00:00Z", "project": project, "options": {}
        }))
        .unwrap()
    }

    fn message(session: &str, id: &str) -> WireEvent {
        serde_json::from_value(json!({
            "kind": "message", "role": "system", "id": id, "session_id": session,
            "timestamp": "2026-01-01T00:00:01Z", "content": "note", "options": {}
        }))
        .unwrap()
    }

    #[test]
    fn a_batch_groups_by_session_in_first_appearance_order() {
        let groups = by_session(vec![
            session("b", "/p"),
            session("a", "/p"),
            message("b", "m1"),
            message("a", "m1"),
            message("b", "m2"),
        ]);
        let shape: Vec<(&str, Vec<usize>)> = groups
            .iter()
            .map(|(s, e)| (s.as_str(), e.iter().map(|(i, _)| *i).collect()))
            .collect();
        assert_eq!(shape, vec![("b", vec![0, 2, 4]), ("a", vec![1, 3])]);
        let (log, positions) = check_session(groups[0].1.clone(), None).unwrap();
        assert_eq!(log.messages.len(), 2);
        assert_eq!(positions, vec![2, 4]);
    }

    #[test]
    fn a_continuation_needs_the_stored_session_and_keeps_its_fields() {
        let WireEvent::Session(stored) = session("s", "/p") else {
            unreachable!()
        };
        let continuation = by_session(vec![message("s", "m3")]).remove(0).1;
        let refused = check_session(continuation.clone(), None).unwrap_err();
        assert_eq!(refused.rule, "adapter-integrity-event-ordering");
        let (log, positions) = check_session(continuation, Some(&stored)).unwrap();
        assert_eq!((log.session.id.as_str(), positions), ("s", vec![0]));

        let moved = by_session(vec![session("s", "/elsewhere")]).remove(0).1;
        let refused = check_session(moved, Some(&stored)).unwrap_err();
        assert_eq!(refused.rule, "session-immutable-fields");
        assert_eq!(refused.field, Some("events[].project"));
        assert!(
            refused.message.contains("/elsewhere"),
            "{}",
            refused.message
        );
    }
}
