//! adapter-integrity-event-ordering and the role allowlists on wire event streams.

use pond_canonical::validate::assemble;
use pond_canonical::{Event, SessionLog, WireEvent};

fn example() -> SessionLog {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fixtures/canonical/valid-tool-round.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn wire(log: &SessionLog) -> Vec<WireEvent> {
    let mut events = Event::Session(log.session.clone()).to_wire();
    for m in &log.messages {
        events.extend(Event::Message(m.clone()).to_wire());
    }
    events
}

#[test]
fn a_well_ordered_stream_assembles_to_the_same_session() {
    let log = example();
    let events = wire(&log);
    // Through JSON, as they arrive at pond_ingest.
    let json = serde_json::to_string(&events).unwrap();
    let events: Vec<WireEvent> = serde_json::from_str(&json).unwrap();
    assert_eq!(assemble(events).unwrap(), vec![log]);
}

#[test]
fn a_message_before_its_session_is_refused() {
    let mut events = wire(&example());
    events.swap(0, 1);
    let err = assemble(events).unwrap_err();
    assert_eq!(err.rule, "adapter-integrity-event-ordering");
    assert!(err.message.contains("comes before its session"), "{err}");
}

#[test]
fn a_part_that_does_not_follow_its_message_is_refused() {
    let mut events = wire(&example());
    // Move the first part of the user message after the assistant message head.
    let part = events.remove(3);
    events.insert(6, part);
    let err = assemble(events).unwrap_err();
    assert_eq!(err.rule, "adapter-integrity-event-ordering", "{err}");
}

#[test]
fn a_part_outside_its_role_allowlist_is_refused() {
    let log = example();
    let mut events = wire(&log);
    // Re-home the tool_result part (last event) onto the user message u1 and put it right after it.
    let WireEvent::Part(pond_canonical::Part::ToolResult(mut r)) = events.pop().unwrap() else {
        panic!()
    };
    r.message_id = log.messages[1].id().clone();
    events.insert(5, WireEvent::Part(pond_canonical::Part::ToolResult(r)));
    let err = assemble(events).unwrap_err();
    assert_eq!(err.rule, "model-role-allowlist");
    assert!(
        err.message
            .contains("a tool_result part cannot be in a user message"),
        "{err}"
    );
}
