//! The structural check of a pi session file: what pi 0.73.1 needs to load and resume it
//! (pi.md sections 2-5, opencode-pi-validators.md section 3). Used by the conformance suite on
//! every foreign write; the real `pi` stays the oracle.

use serde_json::{Map, Value};
use std::collections::HashSet;

/// The problems found in the file at `relative` (empty when it passes).
pub(crate) fn validate(relative: &str, bytes: &[u8]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut add = |line: usize, what: &str| problems.push(format!("{relative}:{line}: {what}"));
    if !relative.ends_with(".jsonl") {
        add(0, "a pi session is a `.jsonl` file");
    }
    let mut ids = HashSet::new();
    let mut version = 1;
    let mut lines = 0;
    for (i, raw) in bytes.split(|b| *b == b'\n').enumerate() {
        let n = i + 1;
        if raw.trim_ascii().is_empty() {
            continue;
        }
        lines += 1;
        let v: Value = match serde_json::from_slice(raw) {
            Ok(Value::Object(o)) => Value::Object(o),
            Ok(_) => {
                add(n, "not a JSON object");
                continue;
            }
            Err(e) => {
                add(n, &format!("not JSON ({e}); pi skips such lines"));
                continue;
            }
        };
        let o = v.as_object().cloned().unwrap_or_default();
        let ty = o.get("type").and_then(Value::as_str).unwrap_or("");
        if lines == 1 {
            // Line 1 must be the header, else pi starts a new, empty session in the file.
            if ty != "session" {
                add(n, "line 1 is not a `session` header");
                continue;
            }
            for f in ["id", "timestamp", "cwd"] {
                if !o.get(f).is_some_and(Value::is_string) {
                    add(n, &format!("header `{f}` missing or not a string"));
                }
            }
            version = o.get("version").and_then(Value::as_u64).unwrap_or(1);
            if version > 3 {
                add(
                    n,
                    &format!("header version {version} is newer than pi 0.73.1 knows (3)"),
                );
            }
            continue;
        }
        if ty.is_empty() {
            add(n, "entry `type` missing");
        }
        if !o.get("timestamp").is_some_and(Value::is_string) {
            add(n, "entry `timestamp` (ISO) missing or not a string");
        }
        if version >= 2 {
            match o.get("id").and_then(Value::as_str) {
                Some(id) if !ids.insert(id.to_owned()) => {
                    add(n, &format!("duplicate entry id {id:?}"))
                }
                Some(_) => {}
                None => add(n, "entry `id` missing (version 2+)"),
            }
            match o.get("parentId") {
                Some(Value::Null) => {}
                Some(Value::String(p)) if ids.contains(p) => {}
                Some(Value::String(p)) => add(n, &format!("parentId {p:?} names no earlier entry")),
                _ => add(n, "entry `parentId` missing (version 2+)"),
            }
        }
        if ty == "message" {
            match o.get("message").and_then(Value::as_object) {
                Some(m) => message(m, &mut |w| add(n, w)),
                None => add(n, "`message` missing or not an object"),
            }
        }
    }
    if lines == 0 {
        problems.push(format!("{relative}: empty file"));
    }
    problems
}

fn message(m: &Map<String, Value>, add: &mut dyn FnMut(&str)) {
    if !m.get("timestamp").is_some_and(Value::is_number) {
        add("message `timestamp` (epoch ms) missing or not a number");
    }
    let blocks = |m: &Map<String, Value>, allowed: &[&str], add: &mut dyn FnMut(&str)| {
        let Some(content) = m.get("content").and_then(Value::as_array) else {
            add("message `content` is not an array");
            return;
        };
        for b in content {
            let ty = b.get("type").and_then(Value::as_str).unwrap_or("");
            if !allowed.contains(&ty) {
                add(&format!("content block type {ty:?} not allowed here"));
                continue;
            }
            let need: &[&str] = match ty {
                "text" => &["text"],
                "thinking" => &["thinking"],
                "image" => &["data", "mimeType"],
                "toolCall" => &["id", "name"],
                _ => &[],
            };
            for f in need {
                if !b.get(*f).is_some_and(Value::is_string) {
                    add(&format!("{ty} block `{f}` missing or not a string"));
                }
            }
            if ty == "toolCall" && !b.get("arguments").is_some_and(Value::is_object) {
                add("toolCall block `arguments` missing or not an object");
            }
        }
    };
    match m.get("role").and_then(Value::as_str) {
        Some("user") | Some("custom") | Some("hookMessage") => {
            if !m.get("content").is_some_and(Value::is_string) {
                blocks(m, &["text", "image"], add);
            }
        }
        Some("assistant") => {
            blocks(m, &["text", "thinking", "toolCall"], add);
            for f in ["provider", "model"] {
                if !m.get(f).is_some_and(Value::is_string) {
                    add(&format!("assistant `{f}` missing or not a string"));
                }
            }
            // Written by pi itself, but not needed to load or replay (pi-session-*.jsonl of
            // git-ai have none): checked for shape only when present.
            if m.get("api").is_some_and(|v| !v.is_string()) {
                add("assistant `api` not a string");
            }
            if m.get("usage").is_some_and(|v| !v.is_object()) {
                add("assistant `usage` not an object");
            }
            match m.get("stopReason").map(Value::as_str) {
                None | Some(Some("stop" | "length" | "toolUse" | "error" | "aborted")) => {}
                _ => add("assistant `stopReason` not stop, length, toolUse, error or aborted"),
            }
        }
        Some("toolResult") => {
            for f in ["toolCallId", "toolName"] {
                if !m.get(f).is_some_and(Value::is_string) {
                    add(&format!("toolResult `{f}` missing or not a string"));
                }
            }
            if !m.get("isError").is_some_and(Value::is_boolean) {
                add("toolResult `isError` missing or not a boolean");
            }
            blocks(m, &["text", "image"], add);
        }
        Some("bashExecution") => {
            if !m.get("command").is_some_and(Value::is_string) {
                add("bashExecution `command` missing");
            }
        }
        Some(other) => add(&format!("unknown message role {other:?}")),
        None => add("message `role` missing"),
    }
}

#[cfg(test)]
mod tests {
    use super::validate;

    #[test]
    fn a_harness_generated_session_passes() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../shared/fixtures/pi/git-ai/pi-session-tool.jsonl"
        );
        let bytes = std::fs::read(path).expect("shared fixture present");
        assert_eq!(validate("x.jsonl", &bytes), Vec::<String>::new());
    }

    #[test]
    fn a_missing_header_and_a_broken_chain_are_reported() {
        let p = validate(
            "x.jsonl",
            b"{\"type\":\"message\",\"id\":\"a\",\"parentId\":null}\n",
        );
        assert!(p.iter().any(|p| p.contains("header")), "{p:?}");
        let p = validate(
            "x.jsonl",
            b"{\"type\":\"session\",\"version\":3,\"id\":\"u\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n{\"type\":\"label\",\"id\":\"a\",\"parentId\":\"zz\",\"timestamp\":\"t\"}\n",
        );
        assert!(
            p.iter().any(|p| p.contains("names no earlier entry")),
            "{p:?}"
        );
    }
}
