//! From export-document shape to canonical events, through the seam.
//!
//! Placement (spec 6.5), per record:
//!
//! * session `info`: `id` and `parentID` are typed and taken; everything else, with any other
//!   top-level document member, is kept in `Session.options.opencode` (rule 2). `time.created` is
//!   the typed `created_at` and `directory` the project, both also left in `info` so the native
//!   write gives opencode its record back as it was.
//! * message `info`: `id` is typed and taken; the rest is `options.opencode.info`. The message's
//!   parts, in source order, are `options.opencode.parts`: a content part appears there as its id
//!   (its data is the canonical part), any other part whole.
//! * part: the fields that became canonical fields are taken, the rest is the part's
//!   `options.opencode`.
//! * a message whose `role` is neither `user` nor `assistant`, or that has no id, is carried whole
//!   (rule 3).

use super::NAME;
use super::sources::{SourceMessage, SourceSession};
use pond_canonical::bounded::bounded_object;
use pond_canonical::{
    AssistantMessage, Event, Extracted, FileData, FilePart, Json, Locator, Message, MessageId,
    Origin, ParseError, ParseErrorKind, Part, PartId, PartKey, Project, Provenance, ReasoningPart,
    Record, Session, SessionId, SystemMessage, Text, TextPart, Timestamp, ToolCallPart,
    ToolResultPart, UserMessage, options_ns,
};
use serde_json::{Map, Value};

type Emit<'a> = &'a mut dyn FnMut(Result<Event, ParseError>);

/// The suffix of the id of the result part made from a `tool` part (the call keeps the part's id).
pub(crate) const RESULT_ID_SUFFIX: &str = "#result";

fn missing(field: &str) -> ParseErrorKind {
    ParseErrorKind::MissingField {
        field: field.to_owned(),
    }
}

/// `time.created` of an info object, in epoch milliseconds, as a timestamp.
fn created_of(
    record: &Record<'_>,
    info: &Extracted<Map<String, Value>>,
) -> Option<Result<Timestamp, ParseError>> {
    let millis = info
        .field("time")
        .and_then(|t| t.field("created"))
        .and_then(|c| c.as_i64())?;
    Some(Timestamp::from_unix_millis(millis).map_err(|e| {
        record.error(ParseErrorKind::InvalidField {
            field: "info.time.created".into(),
            reason: e.to_string(),
        })
    }))
}

/// The source's relative path and format, for the native write (`options.source`).
fn source_options(origin: &Origin, session: &mut Session, format: &'static str) {
    let source = options_ns(&mut session.options, "source");
    source.insert("format".into(), Value::from(format));
    source.insert(
        "file".into(),
        Value::from(origin.relative().into_inner().to_owned()),
    );
}

/// Maps one session and emits it, then its messages in (time.created, id) order.
pub(crate) fn emit_session(origin: &Origin, mut s: SourceSession, emit: Emit<'_>) {
    // Messages in opencode's order: `ORDER BY time_created, id`.
    s.messages.sort_by(|a, b| {
        let key = |m: &SourceMessage| {
            (
                m.entry
                    .pointer("/info/time/created")
                    .and_then(Value::as_i64),
                m.entry
                    .pointer("/info/id")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            )
        };
        key(a).cmp(&key(b))
    });
    let mut doc = match Record::from_value(origin, s.locator.clone(), s.doc) {
        Ok(r) => r,
        Err(e) => return emit(Err(e)),
    };
    let Some(Ok(mut info)) = doc.take("info").map(Extracted::into_object) else {
        return emit(Err(doc.error(missing("info"))));
    };
    let Some(Ok(id)) = info.take("id").map(Extracted::into_string) else {
        return emit(Err(doc.error(missing("info.id"))));
    };
    let id = SessionId::from(id);

    // created_at: the session's own `time.created`; else its first message's (an earlier
    // source record of the same session, not a made-up value: model-no-synthesis).
    let created = match created_of(&doc, &info) {
        Some(Ok(t)) => Some(t),
        Some(Err(e)) => {
            emit(Err(e));
            None
        }
        None => None,
    };
    let created = created.or_else(|| {
        let first = s.messages.first()?;
        let rec = Record::from_value(origin, first.locator.clone(), first.entry.clone()).ok()?;
        let millis = rec.pointer("/info/time/created")?.as_i64()?;
        Timestamp::from_unix_millis(millis).ok()
    });
    let Some(created) = created else {
        return emit(Err(doc.error(missing("info.time.created"))));
    };

    // model-project-non-empty: the session directory, the project worktree, or the directory an
    // assistant turn ran in; never invented.
    let project = info
        .field("directory")
        .and_then(|d| d.as_str())
        .and_then(|d| Project::from_extracted(d.to_owned()))
        .or_else(|| {
            let (at, value) = s.project.clone()?;
            let rec = Record::from_value(origin, at, value).ok()?;
            Project::from_extracted(rec.str("worktree")?.to_owned())
        })
        .or_else(|| {
            s.messages.iter().find_map(|m| {
                let rec = Record::from_value(origin, m.locator.clone(), m.entry.clone()).ok()?;
                let root = rec
                    .pointer("/info/path/root")
                    .or_else(|| rec.pointer("/info/path/cwd"))?;
                Project::from_extracted(root.as_str()?.to_owned())
            })
        });
    // Else the project the person running pond named (`--project`), marked as theirs.
    let user_project = project.is_none();
    let Some(project) = project.or_else(|| crate::discover::user_project(origin)) else {
        return emit(Err(doc.error(ParseErrorKind::NoProject)));
    };

    let mut session = Session::new(id, NAME, created, project);
    if user_project {
        crate::discover::mark_project_from(&mut session, "user");
    }
    if let Some(Ok(parent)) = info.take("parentID").map(Extracted::into_string) {
        // A subagent child or a fork: opencode records no cut-point.
        session.set_parent(SessionId::from(parent), None);
    }
    let mut rest = doc.into_rest();
    rest.insert("info", info.into_value());
    session
        .options
        .insert(NAME.into(), Value::Object(bounded_object(rest)));
    source_options(origin, &mut session, s.format.as_str());

    let anchor = session.created_at.clone();
    let sid = session.id.clone();
    emit(Ok(Event::Session(session)));
    for m in s.messages {
        if let Some(message) = map_message(origin, &sid, &anchor, m, emit) {
            emit(Ok(Event::Message(message)));
        }
    }
}

/// Carries a message entry whole (placement rule 3).
fn carrier(
    origin: &Origin,
    session: &SessionId,
    anchor: &Timestamp,
    m: SourceMessage,
    emit: Emit<'_>,
) -> Option<Message> {
    let mut whole = match m.entry {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    whole.insert(
        "parts".into(),
        Value::Array(m.parts.into_iter().map(|(_, p)| p).collect()),
    );
    let rec = match Record::from_value(origin, m.locator, Value::Object(whole)) {
        Ok(r) => r,
        Err(e) => {
            emit(Err(e));
            return None;
        }
    };
    let id = rec
        .pointer("/info/id")
        .and_then(|v| v.as_str())
        .map(|s| MessageId::from(s.to_owned()))
        .unwrap_or_else(|| MessageId::from(rec.position()));
    // model-no-synthesis permits the session-anchor fallback for a record with no time.
    let timestamp = rec
        .pointer("/info/time/created")
        .and_then(|v| v.as_i64())
        .and_then(|ms| Timestamp::from_unix_millis(ms).ok())
        .unwrap_or_else(|| anchor.clone());
    Some(SystemMessage::carrier(session, id, timestamp, rec.into_rest()).into())
}

fn map_message(
    origin: &Origin,
    session: &SessionId,
    anchor: &Timestamp,
    m: SourceMessage,
    emit: Emit<'_>,
) -> Option<Message> {
    let role = m
        .entry
        .pointer("/info/role")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let has_id = m.entry.pointer("/info/id").is_some_and(Value::is_string);
    if !has_id {
        // adapter-integrity-no-silent-drops: reported, and still carried whole.
        emit(Err(origin.error(m.locator.clone(), missing("info.id"))));
    }
    if !has_id || !matches!(role.as_str(), "user" | "assistant") {
        return carrier(origin, session, anchor, m, emit);
    }
    let mut entry = match Record::from_value(origin, m.locator.clone(), m.entry) {
        Ok(r) => r,
        Err(e) => {
            emit(Err(e));
            return None;
        }
    };
    let Some(Ok(mut info)) = entry.take("info").map(Extracted::into_object) else {
        emit(Err(entry.error(missing("info"))));
        return None;
    };
    let Some(Ok(id)) = info.take("id").map(Extracted::into_string) else {
        emit(Err(entry.error(missing("info.id"))));
        return None;
    };
    let timestamp = match created_of(&entry, &info) {
        Some(Ok(t)) => t,
        Some(Err(e)) => {
            emit(Err(e));
            anchor.clone()
        }
        None => anchor.clone(),
    };
    let assistant = role == "assistant";
    // A compaction summary is model text, but harness scaffolding (model-part-provenance).
    let summary = assistant
        && info
            .field("summary")
            .and_then(|s| s.as_bool())
            .is_some_and(|b| b.into_inner());
    let id = MessageId::from(id);
    let mut sequence = Vec::new();
    let mut message: Message = if assistant {
        let mut msg = AssistantMessage::new(session, id, timestamp);
        for (at, part) in m.parts {
            let key = |pid: PartId| msg.part_key_with_id(pid);
            let (parts, marker) = map_part(origin, at, part, true, summary, &key, emit);
            sequence.extend(marker);
            for p in parts {
                match pond_canonical::AssistantPart::try_from(p) {
                    Ok(p) => msg.push(p),
                    Err(p) => unreachable_part(origin, &p, emit),
                }
            }
        }
        msg.into()
    } else {
        let mut msg = UserMessage::new(session, id, timestamp);
        for (at, part) in m.parts {
            let key = |pid: PartId| msg.part_key_with_id(pid);
            let (parts, marker) = map_part(origin, at, part, false, false, &key, emit);
            sequence.extend(marker);
            for p in parts {
                match pond_canonical::UserPart::try_from(p) {
                    Ok(p) => msg.push(p),
                    Err(p) => unreachable_part(origin, &p, emit),
                }
            }
        }
        msg.into()
    };
    let mut rest = entry.into_rest();
    rest.insert("info", info.into_value());
    let mut rest = bounded_object(rest);
    rest.insert("parts".into(), Value::Array(sequence));
    message
        .options_mut()
        .insert(NAME.into(), Value::Object(rest));
    Some(message)
}

/// A part type the role does not admit: [`map_part`] only makes admitted ones, so this reports a
/// bug in this codec rather than panicking.
fn unreachable_part(origin: &Origin, part: &Part, emit: Emit<'_>) {
    emit(Err(origin.error(
        Locator::Record(part.id().to_string()),
        ParseErrorKind::Unrecognized {
            detail: format!("{} part not admitted by the message role", part.kind()),
        },
    )));
}

/// Which opencode part types become canonical parts, and what they need.
fn content_kind(part: &Value, assistant: bool) -> Option<&'static str> {
    let has_str = |k: &str| part.get(k).is_some_and(Value::is_string);
    if !has_str("id") {
        return None;
    }
    match part.get("type").and_then(Value::as_str)? {
        "text" if has_str("text") => Some("text"),
        "reasoning" if assistant && has_str("text") => Some("reasoning"),
        "file" if has_str("mime") && has_str("url") => Some("file"),
        "tool"
            if assistant
                && has_str("callID")
                && has_str("tool")
                && part.pointer("/state/input").is_some() =>
        {
            Some("tool")
        }
        _ => None,
    }
}

/// Whether a part of this type should have been content but lacks what content needs.
fn malformed_content(part: &Value, assistant: bool) -> Option<&'static str> {
    let ty = part.get("type").and_then(Value::as_str)?;
    let content =
        matches!(ty, "text" | "file") || (assistant && matches!(ty, "reasoning" | "tool"));
    (content && content_kind(part, assistant).is_none()).then_some(match ty {
        "text" | "reasoning" => "id and text",
        "file" => "id, mime and url",
        _ => "id, callID, tool and state.input",
    })
}

/// Maps one part: canonical parts plus the entry for `options.opencode.parts` (the part id for a
/// content part, the whole part otherwise).
fn map_part(
    origin: &Origin,
    at: Locator,
    part: Value,
    assistant: bool,
    summary: bool,
    key: &dyn Fn(PartId) -> PartKey,
    emit: Emit<'_>,
) -> (Vec<Part>, Option<Value>) {
    let kind = content_kind(&part, assistant);
    if let Some(needs) = malformed_content(&part, assistant) {
        emit(Err(origin.error(
            at.clone(),
            ParseErrorKind::InvalidField {
                field: "type".into(),
                reason: format!("a content part needs {needs}; kept whole in the message options"),
            },
        )));
    }
    let mut rec = match Record::from_value(origin, at, part) {
        Ok(r) => r,
        Err(e) => {
            emit(Err(e));
            return (Vec::new(), None);
        }
    };
    let Some(kind) = kind else {
        // Harness metadata (step-start, step-finish, snapshot, patch, agent, subtask, retry,
        // compaction, ...): placement rule 2, kept whole and in order on the message.
        let whole = Json::from(rec.whole().derive(Value::Object));
        return (Vec::new(), Some(whole.into_value()));
    };
    let Some(id) = rec.take_str("id") else {
        return (Vec::new(), None);
    };
    let marker = Value::from(id.get().clone());
    let pid = PartId::from(id.clone());
    let mut parts: Vec<Part> = Vec::new();
    match kind {
        "text" | "reasoning" => {
            let Some(text) = rec.take_str("text") else {
                return (parts, None);
            };
            // model-part-provenance: `synthetic` text is opencode's own (file contents, command
            // echoes); a compaction summary is scaffolding too.
            let synthetic = rec
                .get("synthetic")
                .and_then(|v| v.as_bool())
                .is_some_and(|b| b.into_inner());
            let provenance = if synthetic || summary {
                Provenance::Injected
            } else {
                Provenance::Conversational
            };
            let mut p: Part = if kind == "text" {
                TextPart::new(key(pid), provenance, Text::from(text)).into_part()
            } else {
                ReasoningPart::new(key(pid), provenance, Text::from(text)).into_part()
            };
            set_options(&mut p, rec.into_rest());
            parts.push(p);
        }
        "file" => {
            let (Some(mime), Some(url)) = (rec.take_str("mime"), rec.take_str("url")) else {
                return (parts, None);
            };
            let name = rec.take_str("filename").map(Text::from);
            let mut p = Part::File(FilePart::new(
                key(pid),
                Provenance::Conversational,
                Text::from(mime),
                name,
                FileData::url(url),
            ));
            set_options(&mut p, rec.into_rest());
            parts.push(p);
        }
        _ => {
            let (Some(call), Some(name)) = (rec.take_str("callID"), rec.take_str("tool")) else {
                return (parts, None);
            };
            let Some(Ok(mut state)) = rec.take("state").map(Extracted::into_object) else {
                return (parts, None);
            };
            let status = state
                .field("status")
                .and_then(|s| s.as_str())
                .map(|s| s.get().to_string())
                .unwrap_or_default();
            let Some(input) = state.take("input") else {
                return (parts, None);
            };
            let outcome = match status.as_str() {
                "completed" => state.take("output").map(|o| (o, false)),
                "error" => state.take("error").map(|e| (e, true)),
                _ => None,
            };
            let provider_executed = rec
                .pointer("/metadata/providerExecuted")
                .and_then(|v| v.as_bool())
                .is_some_and(|b| b.into_inner());
            let mut rest = rec.into_rest();
            rest.insert("state", state.into_value());
            let mut call_part = Part::ToolCall(ToolCallPart::new(
                key(pid),
                Provenance::Conversational,
                Text::from(call.clone()),
                Text::from(name.clone()),
                Json::from(input),
                provider_executed,
            ));
            set_options(&mut call_part, rest);
            parts.push(call_part);
            if let Some((result, is_failure)) = outcome {
                // model-part-provenance: tool output is produced by the runtime.
                let rid = PartId::from(id.derive(|s| format!("{s}{RESULT_ID_SUFFIX}")));
                parts.push(Part::ToolResult(ToolResultPart::new(
                    key(rid),
                    Provenance::Injected,
                    Text::from(call),
                    Some(Text::from(name)),
                    is_failure,
                    Json::from(result),
                )));
            }
        }
    }
    (parts, Some(marker))
}

/// Puts a part's leftover fields in its `options.opencode` (placement rule 2).
fn set_options(part: &mut Part, rest: Extracted<Map<String, Value>>) {
    let rest = Value::Object(bounded_object(rest));
    let options = match part {
        Part::Text(p) => &mut p.options,
        Part::Reasoning(p) => &mut p.options,
        Part::File(p) => &mut p.options,
        Part::ToolCall(p) => &mut p.options,
        Part::ToolResult(p) => &mut p.options,
        Part::ToolApprovalRequest(p) => &mut p.options,
        Part::ToolApprovalResponse(p) => &mut p.options,
    };
    options.insert(NAME.into(), rest);
}

trait IntoPart {
    fn into_part(self) -> Part;
}
impl IntoPart for TextPart {
    fn into_part(self) -> Part {
        Part::Text(self)
    }
}
impl IntoPart for ReasoningPart {
    fn into_part(self) -> Part {
        Part::Reasoning(self)
    }
}
