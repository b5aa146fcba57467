//! Canonical values to Arrow rows and back. The only place that knows how a Session, Message or
//! Part is laid out in the session datasets (spec 5.1).

use super::jsonb::{self, Fields};
use super::schema::{MESSAGES_INGEST, PARTS_INGEST, SESSIONS_INGEST};
use super::search_text::search_text_for;
use arrow_array::builder::{
    Int32Builder, Int64Builder, LargeBinaryBuilder, StringBuilder, TimestampMicrosecondBuilder,
};
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, TimestampMicrosecondType};
use arrow_array::{Array, ArrayRef, RecordBatch};
use pond_canonical::{FileData, Message, PartRef, Session};
use serde_json::{Map, Value};
use std::sync::Arc;

/// Columns of `sessions`, `messages` and `parts` being filled for one write batch.
#[derive(Default)]
pub struct RowBuffer {
    sessions: usize,
    s_id: StringBuilder,
    s_parent: StringBuilder,
    s_parent_msg: StringBuilder,
    s_agent: StringBuilder,
    s_created: TimestampMicrosecondBuilder,
    s_created_text: StringBuilder,
    s_project: StringBuilder,
    s_options: LargeBinaryBuilder,
    s_ingested: TimestampMicrosecondBuilder,

    messages: usize,
    m_session: StringBuilder,
    m_id: StringBuilder,
    m_seq: Int64Builder,
    m_ts: TimestampMicrosecondBuilder,
    m_ts_text: StringBuilder,
    m_role: StringBuilder,
    m_agent: StringBuilder,
    m_project: StringBuilder,
    m_content: StringBuilder,
    m_search: StringBuilder,
    m_options: LargeBinaryBuilder,

    parts: usize,
    p_session: StringBuilder,
    p_message: StringBuilder,
    p_id: StringBuilder,
    p_ordinal: Int32Builder,
    p_type: StringBuilder,
    p_provenance: StringBuilder,
    p_variant: LargeBinaryBuilder,
    p_data: LargeBinaryBuilder,
    p_options: LargeBinaryBuilder,
}

/// `variant_data`: a part's variant-specific fields, encoded straight from the part (no copy of
/// its values), as [`part_rows`] reads them back. Base fields (`id`, back-references,
/// `provenance`, `type`) and `options` are columns of their own.
fn variant_data(part: PartRef<'_>) -> Vec<u8> {
    let f = Fields::default();
    match part {
        PartRef::Text(p) => f.text("text", &p.text),
        PartRef::Reasoning(p) => f.text("text", &p.text),
        // A FilePart's fields but the payload, which is in the blob column.
        PartRef::File(p) => f
            .text("media_type", &p.media_type)
            .opt_text("file_name", p.file_name.as_ref())
            .str(
                "data_kind",
                match p.data {
                    FileData::Base64(_) => "base64",
                    FileData::Url(_) => "url",
                },
            ),
        PartRef::ToolCall(p) => f
            .text("call_id", &p.call_id)
            .text("name", &p.name)
            .json("params", &p.params)
            .bool("provider_executed", p.provider_executed),
        PartRef::ToolResult(p) => f
            .text("call_id", &p.call_id)
            .opt_text("name", p.name.as_ref())
            .bool("is_failure", p.is_failure)
            .json("result", &p.result),
        PartRef::ToolApprovalRequest(p) => f
            .text("approval_id", &p.approval_id)
            .text("tool_call_id", &p.tool_call_id),
        PartRef::ToolApprovalResponse(p) => f
            .text("approval_id", &p.approval_id)
            .bool("approved", p.approved)
            .opt_text("reason", p.reason.as_ref()),
    }
    .encode()
}

impl RowBuffer {
    /// Rows buffered: (sessions, messages, parts).
    pub fn len(&self) -> (usize, usize, usize) {
        (self.sessions, self.messages, self.parts)
    }

    /// Whether nothing is buffered.
    pub fn is_empty(&self) -> bool {
        self.len() == (0, 0, 0)
    }

    /// Bytes of text and payload buffered in the large columns: what a flush bound by size
    /// looks at (a few messages can carry megabytes of tool output each).
    pub fn payload_bytes(&self) -> usize {
        let text = [&self.m_content, &self.m_search].map(|b| b.values_slice().len());
        let binary = [
            &self.m_options,
            &self.p_variant,
            &self.p_options,
            &self.s_options,
            &self.p_data,
        ]
        .map(|b| b.values_slice().len());
        text.iter().chain(&binary).sum()
    }

    /// Adds a session row. `ingested_at` is pond's own clock (a separate column, spec 4.3).
    pub fn push_session(&mut self, s: &Session, ingested_at: i64) {
        self.sessions += 1;
        self.s_id.append_value(s.id.as_str());
        self.s_parent
            .append_option(s.parent_session_id.as_ref().map(|p| p.as_str()));
        self.s_parent_msg
            .append_option(s.parent_message_id.as_ref().map(|p| p.as_str()));
        self.s_agent.append_value(&s.source_agent);
        self.s_created.append_value(s.created_at.unix_micros());
        self.s_created_text.append_value(s.created_at.as_str());
        self.s_project.append_value(s.project.as_str());
        self.s_options
            .append_value(jsonb::encode_object(&s.options));
        self.s_ingested.append_value(ingested_at);
    }

    /// Adds a message row and its part rows. `session` supplies the denormalized filter columns
    /// (spec 5.3); `seq` is the message's position in its session's log.
    pub fn push_message(&mut self, session: &Session, seq: i64, m: &Message) {
        self.messages += 1;
        self.m_session.append_value(m.session_id().as_str());
        self.m_id.append_value(m.id().as_str());
        self.m_seq.append_value(seq);
        self.m_ts.append_value(m.timestamp().unix_micros());
        self.m_ts_text.append_value(m.timestamp().as_str());
        self.m_role.append_value(m.role());
        self.m_agent.append_value(&session.source_agent);
        self.m_project.append_value(session.project.as_str());
        match m {
            Message::System(s) => self.m_content.append_value(s.content.as_str()),
            _ => self.m_content.append_null(),
        }
        self.m_search.append_option(search_text_for(m));
        self.m_options
            .append_value(jsonb::encode_object(m.options()));
        for (ordinal, part) in m.part_refs().into_iter().enumerate() {
            self.push_part(ordinal as i32, part);
        }
    }

    fn push_part(&mut self, ordinal: i32, part: PartRef<'_>) {
        self.parts += 1;
        let (sid, mid) = part.owner();
        self.p_session.append_value(sid.as_str());
        self.p_message.append_value(mid.as_str());
        self.p_id.append_value(part.id().as_str());
        self.p_ordinal.append_value(ordinal);
        self.p_type.append_value(part.kind());
        self.p_provenance.append_value(match part.provenance() {
            pond_canonical::Provenance::Conversational => "conversational",
            pond_canonical::Provenance::Injected => "injected",
        });
        // A FilePart's payload goes to the blob column; its kind stays in variant_data.
        match part {
            PartRef::File(f) => self.p_data.append_value(match &f.data {
                FileData::Base64(b) => b.as_bytes(),
                FileData::Url(u) => u.as_bytes(),
            }),
            _ => self.p_data.append_null(),
        }
        self.p_variant.append_value(variant_data(part));
        self.p_options
            .append_value(jsonb::encode_object(part.options()));
    }

    /// The buffered rows as one batch per table (empty tables give `None`), leaving the buffer empty.
    pub fn take_batches(&mut self) -> [Option<RecordBatch>; 3] {
        let mut b = std::mem::take(self);
        let utc = |t: &mut TimestampMicrosecondBuilder| -> ArrayRef {
            Arc::new(t.finish().with_timezone("UTC"))
        };
        let sessions = (b.sessions > 0).then(|| {
            let cols: Vec<ArrayRef> = vec![
                Arc::new(b.s_id.finish()),
                Arc::new(b.s_parent.finish()),
                Arc::new(b.s_parent_msg.finish()),
                Arc::new(b.s_agent.finish()),
                utc(&mut b.s_created),
                Arc::new(b.s_created_text.finish()),
                Arc::new(b.s_project.finish()),
                Arc::new(b.s_options.finish()),
                utc(&mut b.s_ingested),
            ];
            RecordBatch::try_new(SESSIONS_INGEST.clone(), cols)
                .expect("sessions columns match their schema")
        });
        let messages = (b.messages > 0).then(|| {
            let cols: Vec<ArrayRef> = vec![
                Arc::new(b.m_session.finish()),
                Arc::new(b.m_id.finish()),
                Arc::new(b.m_seq.finish()),
                utc(&mut b.m_ts),
                Arc::new(b.m_ts_text.finish()),
                Arc::new(b.m_role.finish()),
                Arc::new(b.m_agent.finish()),
                Arc::new(b.m_project.finish()),
                Arc::new(b.m_content.finish()),
                Arc::new(b.m_search.finish()),
                Arc::new(b.m_options.finish()),
            ];
            // The embedding columns are left out: they stay null until the embed stage.
            RecordBatch::try_new(MESSAGES_INGEST.clone(), cols)
                .expect("messages columns match their schema")
        });
        let parts = (b.parts > 0).then(|| {
            let cols: Vec<ArrayRef> = vec![
                Arc::new(b.p_session.finish()),
                Arc::new(b.p_message.finish()),
                Arc::new(b.p_id.finish()),
                Arc::new(b.p_ordinal.finish()),
                Arc::new(b.p_type.finish()),
                Arc::new(b.p_provenance.finish()),
                Arc::new(b.p_variant.finish()),
                Arc::new(b.p_data.finish()),
                Arc::new(b.p_options.finish()),
            ];
            RecordBatch::try_new(PARTS_INGEST.clone(), cols)
                .expect("parts columns match their schema")
        });
        [sessions, messages, parts]
    }
}

/// Reads a UTF-8 column value, `None` for null. Lance may hand a JSON column back as Utf8 or
/// LargeUtf8 (or JSONB bytes); all read here.
pub fn string_at(col: &dyn Array, i: usize) -> Option<String> {
    if let Some(s) = crate::substrate::str_at(col, i) {
        return Some(s.to_owned());
    }
    if col.is_null(i) {
        return None;
    }
    if let Some(a) = col.as_binary_opt::<i64>() {
        return Some(String::from_utf8_lossy(a.value(i)).into_owned());
    }
    None
}

fn object_at(col: &dyn Array, i: usize) -> Map<String, Value> {
    match string_at(col, i).and_then(|t| serde_json::from_str(&t).ok()) {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

fn column<'a>(batch: &'a RecordBatch, name: &str) -> Result<&'a ArrayRef, String> {
    batch
        .column_by_name(name)
        .ok_or_else(|| format!("column {name} missing from a stored batch"))
}

/// Stored session rows back to canonical sessions.
pub fn sessions_from(batch: &RecordBatch) -> Result<Vec<Session>, String> {
    let mut out = Vec::with_capacity(batch.num_rows());
    for i in 0..batch.num_rows() {
        let mut obj = Map::new();
        for (key, col) in [
            ("id", "id"),
            ("parent_session_id", "parent_session_id"),
            ("parent_message_id", "parent_message_id"),
            ("source_agent", "source_agent"),
            ("created_at", "created_at_text"),
            ("project", "project"),
        ] {
            if let Some(v) = string_at(column(batch, col)?.as_ref(), i) {
                obj.insert(key.into(), Value::String(v));
            }
        }
        obj.insert(
            "options".into(),
            Value::Object(object_at(column(batch, "options")?.as_ref(), i)),
        );
        out.push(
            serde_json::from_value(Value::Object(obj))
                .map_err(|e| format!("stored session row {i}: {e}"))?,
        );
    }
    Ok(out)
}

/// One stored message row without its parts: (session id, seq, JSON head).
pub struct MessageRow {
    pub session_id: String,
    pub id: String,
    pub seq: i64,
    pub timestamp_micros: i64,
    /// The message as canonical JSON with an empty `content` (filled from its parts).
    pub json: Map<String, Value>,
}

/// Stored message rows.
pub fn message_rows(batch: &RecordBatch) -> Result<Vec<MessageRow>, String> {
    let seq = column(batch, "seq")?
        .as_primitive_opt::<Int64Type>()
        .ok_or("seq is not Int64")?
        .clone();
    let ts = column(batch, "timestamp")?
        .as_primitive_opt::<TimestampMicrosecondType>()
        .ok_or("timestamp is not micros")?
        .clone();
    let mut out = Vec::with_capacity(batch.num_rows());
    for i in 0..batch.num_rows() {
        let get = |c: &str| column(batch, c).map(|a| string_at(a.as_ref(), i));
        let role = get("role")?.unwrap_or_default();
        let mut obj = Map::new();
        obj.insert("role".into(), Value::String(role.clone()));
        obj.insert("id".into(), Value::String(get("id")?.unwrap_or_default()));
        obj.insert(
            "session_id".into(),
            Value::String(get("session_id")?.unwrap_or_default()),
        );
        obj.insert(
            "timestamp".into(),
            Value::String(get("timestamp_text")?.unwrap_or_default()),
        );
        obj.insert(
            "content".into(),
            if role == "system" {
                Value::String(get("content")?.unwrap_or_default())
            } else {
                Value::Array(Vec::new())
            },
        );
        obj.insert(
            "options".into(),
            Value::Object(object_at(column(batch, "options")?.as_ref(), i)),
        );
        out.push(MessageRow {
            session_id: get("session_id")?.unwrap_or_default(),
            id: get("id")?.unwrap_or_default(),
            seq: seq.value(i),
            timestamp_micros: ts.value(i),
            json: obj,
        });
    }
    Ok(out)
}

/// One stored part row: (session id, message id, ordinal, canonical JSON of the part).
pub struct PartRow {
    pub session_id: String,
    pub message_id: String,
    pub ordinal: i32,
    pub json: Map<String, Value>,
}

/// Stored part rows; a file part's payload is read from the blob column when the batch holds it.
pub fn part_rows(batch: &RecordBatch) -> Result<Vec<PartRow>, String> {
    let ordinal = column(batch, "ordinal")?
        .as_primitive_opt::<Int32Type>()
        .ok_or("ordinal is not Int32")?
        .clone();
    let data = batch.column_by_name("data").cloned();
    let mut out = Vec::with_capacity(batch.num_rows());
    for i in 0..batch.num_rows() {
        let get = |c: &str| column(batch, c).map(|a| string_at(a.as_ref(), i));
        let mut obj = object_at(column(batch, "variant_data")?.as_ref(), i);
        let kind = get("type")?.unwrap_or_default();
        obj.insert("type".into(), Value::String(kind.clone()));
        for key in ["id", "session_id", "message_id", "provenance"] {
            obj.insert(key.into(), Value::String(get(key)?.unwrap_or_default()));
        }
        obj.insert(
            "options".into(),
            Value::Object(object_at(column(batch, "options")?.as_ref(), i)),
        );
        if kind == "file" {
            let data_kind = obj
                .remove("data_kind")
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            let payload = data
                .as_ref()
                .and_then(|d| string_at(d.as_ref(), i))
                .unwrap_or_default();
            obj.insert(
                "data".into(),
                serde_json::json!({"kind": data_kind, "value": payload}),
            );
        }
        out.push(PartRow {
            session_id: get("session_id")?.unwrap_or_default(),
            message_id: get("message_id")?.unwrap_or_default(),
            ordinal: ordinal.value(i),
            json: obj,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pond_canonical::Event;
    use pond_codecs::CODECS;
    use pond_conformance::foreign_check::{fixture_sources, read_origin};

    /// What Lance stores for a JSON column given as text (`lance_arrow::json::encode_json`).
    fn lance_encoded(text: &str) -> Vec<u8> {
        lance_jsonb::parse_value(text.as_bytes())
            .expect("Lance parses serde_json's text")
            .to_vec()
    }

    fn as_lance_from_text(m: &Map<String, Value>) -> Vec<u8> {
        lance_encoded(&serde_json::to_string(m).unwrap())
    }

    /// The variant fields of a part as [`part_rows`] reads them back: the canonical part without
    /// the fields that are columns of their own, a file's payload reduced to its kind.
    fn variant_fields(part: &pond_canonical::Part) -> Map<String, Value> {
        let Value::Object(mut fields) = serde_json::to_value(part).unwrap() else {
            panic!("a part serializes to an object")
        };
        for base in [
            "id",
            "session_id",
            "message_id",
            "provenance",
            "type",
            "options",
        ] {
            fields.remove(base);
        }
        if let Some(data) = fields.remove("data") {
            fields.insert("data_kind".into(), data["kind"].clone());
        }
        fields
    }

    #[test]
    fn json_columns_are_the_bytes_lance_encodes_from_their_text() {
        let (mut sessions, mut messages, mut parts) = (0, 0, 0);
        for codec in CODECS {
            for origin in fixture_sources(codec) {
                for event in read_origin(codec, &origin) {
                    match event {
                        Event::Session(s) => {
                            sessions += 1;
                            assert_eq!(
                                jsonb::encode_object(&s.options),
                                as_lance_from_text(&s.options),
                                "{}: session {} options",
                                codec.name,
                                s.id
                            );
                        }
                        Event::Message(m) => {
                            messages += 1;
                            assert_eq!(
                                jsonb::encode_object(m.options()),
                                as_lance_from_text(m.options()),
                                "{}: message {} options",
                                codec.name,
                                m.id()
                            );
                            for (part, r) in m.parts().iter().zip(m.part_refs()) {
                                parts += 1;
                                let at = format!("{}: part {}", codec.name, r.id());
                                assert_eq!(
                                    variant_data(r),
                                    as_lance_from_text(&variant_fields(part)),
                                    "{at} variant_data"
                                );
                                assert_eq!(
                                    jsonb::encode_object(r.options()),
                                    as_lance_from_text(r.options()),
                                    "{at} options"
                                );
                            }
                        }
                    }
                }
            }
        }
        assert!(
            sessions > 10 && messages > 1000 && parts > 1000,
            "{sessions} sessions, {messages} messages, {parts} parts"
        );
    }

    #[test]
    fn numbers_and_strings_encode_as_lance_reads_their_text() {
        let edge = serde_json::json!({
            "u64_max": u64::MAX,
            "i64_min": i64::MIN,
            "zero": 0,
            "minus_one": -1,
            "negative_zero": -0.0,
            "tenth": 0.1,
            "whole_float": 100.0,
            "huge": 1e300,
            "tiny": 5e-324,
            "escapes": "quote \" backslash \\ nul \u{0} tab \t",
            "unicode": "日本語 🐟",
            "nested": [[], {}, [null, true, false, {"b": 1, "a": [2.5]}]],
            "": "empty key",
        });
        let Value::Object(m) = edge else {
            unreachable!()
        };
        assert_eq!(jsonb::encode_object(&m), as_lance_from_text(&m));
    }
}
