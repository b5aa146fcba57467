//! The structural check of a written Claude Code transcript: what Claude Code 2.1.197 needs to
//! load it whole (oracle README, "What Claude Code 2.1.197 needs") and what the strict public
//! schemas require of every line (`shared/formats/claude-code-validators.md`: claude-code-viewer's
//! zod `ConversationSchema`, claude-code-log's pydantic models).
//!
//! Checked per file: UTF-8, a trailing newline, one JSON object per line; on every `user`,
//! `assistant` and `system` line the envelope (`uuid` a UUID and unique, `parentUuid` present and
//! null or an earlier line's uuid, `isSidechain`, `userType`, `cwd`, `sessionId`, `version`, an
//! RFC 3339 `timestamp`); `message.role` matching `type`; on assistant lines `message.model` and
//! `message.id`, an id never reused by a later response; `tool_use.input` an object and
//! `tool_use` ids unique; every `tool_use` answered by a `tool_result` and every `tool_result`
//! answering a `tool_use`; a main file named `<sessionId>.jsonl` with a UUID; every line of a
//! sub-agent file `isSidechain: true`.

use super::naming::is_uuid;
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

/// The problems found in the file at `relative` (empty when it is a valid transcript).
pub fn validate(relative: &str, bytes: &[u8]) -> Vec<String> {
    let mut problems = Vec::new();
    let name = relative.rsplit(['/', '\\']).next().unwrap_or(relative);
    if name.ends_with(".meta.json") {
        if serde_json::from_slice::<Map<String, Value>>(bytes).is_err() {
            problems.push(format!(
                "{relative}: a sub-agent sidecar must be a JSON object"
            ));
        }
        return problems;
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => return vec![format!("{relative}: not UTF-8: {e}")],
    };
    if !name.ends_with(".jsonl") {
        problems.push(format!("{relative}: a transcript is a .jsonl file"));
    }
    if text.is_empty() {
        problems.push(format!("{relative}: empty file"));
        return problems;
    }
    if !text.ends_with('\n') {
        problems.push(format!("{relative}: no trailing newline"));
    }
    let agent_file = name.starts_with("agent-");
    let stem = name.strip_suffix(".jsonl").unwrap_or(name);
    if !agent_file && !is_uuid(stem) {
        problems.push(format!(
            "{relative}: a session file is named <session uuid>.jsonl"
        ));
    }
    let mut check = Check {
        relative,
        problems: &mut problems,
        uuids: HashSet::new(),
        closed_ids: HashSet::new(),
        open_id: None,
        calls: HashMap::new(),
        results: HashMap::new(),
        use_ids: HashSet::new(),
    };
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            check.problem(n, "empty line".into());
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(record)) => check.record(n, &record, agent_file, stem),
            Ok(_) => check.problem(n, "not a JSON object".into()),
            Err(e) => check.problem(n, format!("not JSON: {e}")),
        }
    }
    check.pairing();
    problems
}

struct Check<'a> {
    relative: &'a str,
    problems: &'a mut Vec<String>,
    uuids: HashSet<String>,
    /// Assistant message ids of responses that have ended.
    closed_ids: HashSet<String>,
    open_id: Option<String>,
    /// tool_use id -> line; tool_result tool_use_id -> line.
    calls: HashMap<String, usize>,
    results: HashMap<String, usize>,
    use_ids: HashSet<String>,
}

impl Check<'_> {
    fn problem(&mut self, line: usize, what: String) {
        self.problems
            .push(format!("{}:{line}: {what}", self.relative));
    }

    fn record(&mut self, n: usize, r: &Map<String, Value>, agent_file: bool, stem: &str) {
        let Some(kind) = r.get("type").and_then(Value::as_str) else {
            self.problem(n, "no `type`".into());
            return;
        };
        if !matches!(kind, "user" | "assistant" | "system") {
            return; // metadata records (summary, file-history-snapshot, ...) are not chained
        }
        let s = |k: &str| r.get(k).and_then(Value::as_str);
        match s("uuid") {
            Some(u) if is_uuid(u) => {
                if !self.uuids.insert(u.to_owned()) {
                    self.problem(n, format!("uuid {u} is used twice"));
                }
            }
            _ => self.problem(n, "`uuid` is missing or not a UUID".into()),
        }
        match r.get("parentUuid") {
            Some(Value::Null) => {}
            Some(Value::String(p)) if self.uuids.contains(p) && s("uuid") != Some(p) => {}
            Some(Value::String(p)) if stem.starts_with("agent-acompact") && is_uuid(p) => {}
            Some(Value::String(p)) => {
                self.problem(n, format!("parentUuid {p} names no earlier line"))
            }
            _ => self.problem(n, "`parentUuid` is missing (null or a uuid)".into()),
        }
        match r.get("isSidechain") {
            Some(Value::Bool(b)) => {
                if agent_file && !b {
                    self.problem(n, "a sub-agent line needs isSidechain: true".into());
                }
            }
            _ => self.problem(n, "`isSidechain` is missing or not a boolean".into()),
        }
        for key in ["userType", "cwd", "sessionId", "version"] {
            if s(key).is_none_or(str::is_empty) {
                self.problem(n, format!("`{key}` is missing or not a string"));
            }
        }
        if !agent_file
            && is_uuid(stem)
            && let Some(sid) = s("sessionId")
            && sid != stem
        {
            self.problem(n, format!("sessionId {sid} differs from the file name"));
        }
        if !s("timestamp").is_some_and(is_rfc3339) {
            self.problem(n, "`timestamp` is missing or not RFC 3339".into());
        }
        if kind == "system" {
            return;
        }
        let Some(message) = r.get("message").and_then(Value::as_object) else {
            self.problem(n, "`message` is missing or not an object".into());
            return;
        };
        if message.get("role").and_then(Value::as_str) != Some(kind) {
            self.problem(n, format!("message.role is not `{kind}`"));
        }
        let content = message.get("content");
        if kind == "assistant" {
            if message
                .get("model")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                self.problem(n, "assistant line without message.model".into());
            }
            match message.get("id").and_then(Value::as_str) {
                Some(id) if !id.is_empty() => {
                    if self.open_id.as_deref() != Some(id) {
                        if self.closed_ids.contains(id) {
                            self.problem(
                                n,
                                format!("message.id {id} is reused by a later response"),
                            );
                        }
                        if let Some(old) = self.open_id.replace(id.to_owned()) {
                            self.closed_ids.insert(old);
                        }
                    }
                }
                _ => self.problem(n, "assistant line without message.id".into()),
            }
            if !content.is_some_and(Value::is_array) {
                self.problem(n, "assistant message.content is not an array".into());
            }
        } else if !content.is_some_and(|c| c.is_string() || c.is_array()) {
            self.problem(
                n,
                "user message.content is neither a string nor an array".into(),
            );
        }
        let Some(Value::Array(blocks)) = content else {
            return;
        };
        for block in blocks {
            match block.get("type").and_then(Value::as_str) {
                Some("tool_use") => {
                    let id = block.get("id").and_then(Value::as_str).unwrap_or_default();
                    if id.is_empty() {
                        self.problem(n, "tool_use without an id".into());
                    } else if !self.use_ids.insert(id.to_owned()) {
                        self.problem(n, format!("tool_use id {id} is used twice"));
                    }
                    self.calls.entry(id.to_owned()).or_insert(n);
                    if !block.get("input").is_some_and(Value::is_object) {
                        self.problem(n, format!("tool_use {id}: input is not an object"));
                    }
                    if block.get("name").and_then(Value::as_str).is_none() {
                        self.problem(n, format!("tool_use {id}: no name"));
                    }
                }
                Some("tool_result") => {
                    let id = block
                        .get("tool_use_id")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    if !self.calls.contains_key(id) {
                        self.problem(
                            n,
                            format!("tool_result for {id} before or without its tool_use"),
                        );
                    }
                    self.results.entry(id.to_owned()).or_insert(n);
                }
                Some("text") if block.get("text").and_then(Value::as_str).is_none() => {
                    self.problem(n, "text block without text".into());
                }
                Some("thinking") if block.get("signature").and_then(Value::as_str).is_none() => {
                    self.problem(n, "thinking block without a signature".into());
                }
                _ => {}
            }
        }
    }

    fn pairing(&mut self) {
        let mut unanswered: Vec<(usize, String)> = self
            .calls
            .iter()
            .filter(|(id, _)| !self.results.contains_key(*id))
            .map(|(id, n)| (*n, id.clone()))
            .collect();
        unanswered.sort();
        for (n, id) in unanswered {
            self.problem(
                n,
                format!("tool_use {id} has no tool_result (Claude Code drops the whole line)"),
            );
        }
    }
}

/// `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`.
fn is_rfc3339(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| {
        b.get(r.clone())
            .is_some_and(|d| d.len() == r.len() && d.iter().all(u8::is_ascii_digit))
    };
    if !(digits(0..4)
        && b.get(4) == Some(&b'-')
        && digits(5..7)
        && b.get(7) == Some(&b'-')
        && digits(8..10)
        && matches!(b.get(10), Some(b'T' | b't' | b' '))
        && digits(11..13)
        && b.get(13) == Some(&b':')
        && digits(14..16)
        && b.get(16) == Some(&b':')
        && digits(17..19))
    {
        return false;
    }
    let mut i = 19;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    match b.get(i) {
        Some(b'Z' | b'z') => i + 1 == b.len(),
        Some(b'+' | b'-') => {
            digits(i + 1..i + 3)
                && b.get(i + 3) == Some(&b':')
                && digits(i + 4..i + 6)
                && i + 6 == b.len()
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SID: &str = "5e1f7e57-0000-4000-8000-000000000001";

    fn line(n: u8, parent: Option<u8>, kind: &str, message: Value) -> String {
        let u = |n: u8| format!("00000000-0000-4000-8000-0000000000{n:02}");
        serde_json::json!({
            "parentUuid": parent.map(u), "isSidechain": false, "userType": "external",
            "cwd": "/tmp/x", "sessionId": SID, "version": "2.1.197", "type": kind,
            "message": message, "uuid": u(n), "timestamp": "2026-01-01T10:00:00.000Z",
        })
        .to_string()
    }

    fn good() -> Vec<String> {
        vec![
            line(
                1,
                None,
                "user",
                serde_json::json!({"role": "user", "content": "hi"}),
            ),
            line(
                2,
                Some(1),
                "assistant",
                serde_json::json!({"role": "assistant", "id": "msg_1",
                "model": "m", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]}),
            ),
            line(
                3,
                Some(2),
                "user",
                serde_json::json!({"role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}),
            ),
            line(
                4,
                Some(3),
                "assistant",
                serde_json::json!({"role": "assistant", "id": "msg_2",
                "model": "m", "content": [{"type": "text", "text": "done"}]}),
            ),
        ]
    }

    fn run(lines: &[String]) -> Vec<String> {
        validate(
            &format!("-tmp-x/{SID}.jsonl"),
            format!("{}\n", lines.join("\n")).as_bytes(),
        )
    }

    #[test]
    fn a_valid_transcript_passes() {
        assert_eq!(run(&good()), Vec::<String>::new());
    }

    #[test]
    fn broken_transcripts_are_named() {
        let mut l = good();
        l.remove(2); // the tool_result
        assert!(
            run(&l).iter().any(|p| p.contains("has no tool_result")),
            "{:?}",
            run(&l)
        );
        let mut l = good();
        l.push(line(
            5,
            Some(4),
            "assistant",
            serde_json::json!({"role": "assistant",
            "id": "msg_1", "model": "m", "content": [{"type": "text", "text": "again"}]}),
        ));
        let p = run(&l);
        assert!(p.iter().any(|p| p.contains("reused")), "{p:?}");
        let mut l = good();
        l.push(line(
            6,
            Some(9),
            "user",
            serde_json::json!({"role": "user", "content": "x"}),
        ));
        let p = run(&l);
        assert!(p.iter().any(|p| p.contains("parentUuid")), "{p:?}");
        let mut l = good();
        l[3] = l[3].replace(",\"model\":\"m\"", "");
        assert!(run(&l).iter().any(|p| p.contains("model")));
        let bytes = good().join("\n");
        assert!(
            validate(&format!("{SID}.jsonl"), bytes.as_bytes())
                .iter()
                .any(|p| p.contains("trailing"))
        );
        assert!(!is_rfc3339("not a date"));
        assert!(is_rfc3339("2026-01-01T10:00:00+02:00"));
    }
}
