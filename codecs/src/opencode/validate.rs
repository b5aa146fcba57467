//! The structural check of an `opencode export` document: what `opencode import` (1.18.33)
//! requires of it (opencode.md sections 4-7, opencode-pi-validators.md 2.2). Used by the
//! conformance suite on every foreign write; the real `import` stays the oracle.

use serde_json::{Map, Value};

/// The problems found in the document at `relative` (empty when it passes).
pub(crate) fn validate(relative: &str, bytes: &[u8]) -> Vec<String> {
    let mut p = Problems(Vec::new(), relative.to_owned());
    if !relative.ends_with(".json") {
        p.add("", "an opencode export document is a `.json` file");
    }
    let doc: Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => {
            p.add("", &format!("not JSON: {e}"));
            return p.0;
        }
    };
    let Some(info) = doc.get("info").and_then(Value::as_object) else {
        p.add("info", "missing or not an object");
        return p.0;
    };
    let sid = id(&mut p, info, "info.id", "ses");
    for f in ["slug", "projectID", "directory", "title", "version"] {
        string(&mut p, info, &format!("info.{f}"), f);
    }
    time(&mut p, info, "info.time", &["created", "updated"]);
    let Some(messages) = doc.get("messages").and_then(Value::as_array) else {
        p.add("messages", "missing or not an array");
        return p.0;
    };
    for (i, m) in messages.iter().enumerate() {
        let at = format!("messages[{i}]");
        let Some(mi) = m.get("info").and_then(Value::as_object) else {
            p.add(&format!("{at}.info"), "missing or not an object");
            continue;
        };
        let mid = id(&mut p, mi, &format!("{at}.info.id"), "msg");
        if mi.get("sessionID").and_then(Value::as_str) != sid.as_deref() {
            p.add(&format!("{at}.info.sessionID"), "is not the session's id");
        }
        match mi.get("role").and_then(Value::as_str) {
            Some("user") => {
                time(&mut p, mi, &format!("{at}.info.time"), &["created"]);
                string(&mut p, mi, &format!("{at}.info.agent"), "agent");
                match mi.get("model").and_then(Value::as_object) {
                    Some(model) => {
                        string(
                            &mut p,
                            model,
                            &format!("{at}.info.model.providerID"),
                            "providerID",
                        );
                        string(
                            &mut p,
                            model,
                            &format!("{at}.info.model.modelID"),
                            "modelID",
                        );
                    }
                    None => p.add(&format!("{at}.info.model"), "missing or not an object"),
                }
            }
            Some("assistant") => {
                time(&mut p, mi, &format!("{at}.info.time"), &["created"]);
                id(&mut p, mi, &format!("{at}.info.parentID"), "msg");
                for f in ["modelID", "providerID", "mode", "agent"] {
                    string(&mut p, mi, &format!("{at}.info.{f}"), f);
                }
                match mi.get("path").and_then(Value::as_object) {
                    Some(path) => {
                        string(&mut p, path, &format!("{at}.info.path.cwd"), "cwd");
                        string(&mut p, path, &format!("{at}.info.path.root"), "root");
                    }
                    None => p.add(&format!("{at}.info.path"), "missing or not an object"),
                }
                number(&mut p, mi, &format!("{at}.info.cost"), "cost");
                tokens(&mut p, mi.get("tokens"), &format!("{at}.info.tokens"));
            }
            _ => p.add(&format!("{at}.info.role"), "not `user` or `assistant`"),
        }
        let Some(parts) = m.get("parts").and_then(Value::as_array) else {
            p.add(&format!("{at}.parts"), "missing or not an array");
            continue;
        };
        for (k, part) in parts.iter().enumerate() {
            let at = format!("{at}.parts[{k}]");
            let Some(o) = part.as_object() else {
                p.add(&at, "not an object");
                continue;
            };
            id(&mut p, o, &format!("{at}.id"), "prt");
            if o.get("sessionID").and_then(Value::as_str) != sid.as_deref() {
                p.add(&format!("{at}.sessionID"), "is not the session's id");
            }
            if o.get("messageID").and_then(Value::as_str) != mid.as_deref() {
                p.add(&format!("{at}.messageID"), "is not the message's id");
            }
            part_shape(&mut p, o, &at);
        }
    }
    p.0
}

struct Problems(Vec<String>, String);

impl Problems {
    fn add(&mut self, at: &str, what: &str) {
        self.0.push(format!("{}: {at}: {what}", self.1));
    }
}

fn string(p: &mut Problems, o: &Map<String, Value>, at: &str, f: &str) {
    if !o.get(f).is_some_and(Value::is_string) {
        p.add(at, "missing or not a string");
    }
}

fn number(p: &mut Problems, o: &Map<String, Value>, at: &str, f: &str) {
    if !o.get(f).is_some_and(Value::is_number) {
        p.add(at, "missing or not a number");
    }
}

/// An id with its opencode prefix (`ses_`, `msg_`, `prt_`), returned when present.
fn id(p: &mut Problems, o: &Map<String, Value>, at: &str, prefix: &str) -> Option<String> {
    let f = at.rsplit('.').next().unwrap_or("id");
    match o.get(f).and_then(Value::as_str) {
        Some(s) if s.starts_with(prefix) => Some(s.to_owned()),
        Some(s) => {
            p.add(at, &format!("{s:?} does not start with `{prefix}`"));
            Some(s.to_owned())
        }
        None => {
            p.add(at, "missing or not a string");
            None
        }
    }
}

fn time(p: &mut Problems, o: &Map<String, Value>, at: &str, fields: &[&str]) {
    match o.get("time").and_then(Value::as_object) {
        Some(t) => {
            for f in fields {
                number(p, t, &format!("{at}.{f}"), f);
            }
        }
        None => p.add(at, "missing or not an object"),
    }
}

fn tokens(p: &mut Problems, v: Option<&Value>, at: &str) {
    let Some(t) = v.and_then(Value::as_object) else {
        p.add(at, "missing or not an object");
        return;
    };
    for f in ["input", "output", "reasoning"] {
        number(p, t, &format!("{at}.{f}"), f);
    }
    match t.get("cache").and_then(Value::as_object) {
        Some(c) => {
            number(p, c, &format!("{at}.cache.read"), "read");
            number(p, c, &format!("{at}.cache.write"), "write");
        }
        None => p.add(&format!("{at}.cache"), "missing or not an object"),
    }
}

/// The per-type fields of a part (opencode.md 5.2).
fn part_shape(p: &mut Problems, o: &Map<String, Value>, at: &str) {
    match o.get("type").and_then(Value::as_str) {
        Some("text") => string(p, o, &format!("{at}.text"), "text"),
        Some("reasoning") => {
            string(p, o, &format!("{at}.text"), "text");
            time(p, o, &format!("{at}.time"), &["start"]);
        }
        Some("file") => {
            string(p, o, &format!("{at}.mime"), "mime");
            string(p, o, &format!("{at}.url"), "url");
        }
        Some("tool") => {
            string(p, o, &format!("{at}.callID"), "callID");
            string(p, o, &format!("{at}.tool"), "tool");
            let Some(s) = o.get("state").and_then(Value::as_object) else {
                p.add(&format!("{at}.state"), "missing or not an object");
                return;
            };
            if !s.get("input").is_some_and(Value::is_object) {
                p.add(&format!("{at}.state.input"), "missing or not an object");
            }
            let st = format!("{at}.state");
            match s.get("status").and_then(Value::as_str) {
                Some("pending") => string(p, s, &format!("{st}.raw"), "raw"),
                Some("running") => time(p, s, &format!("{st}.time"), &["start"]),
                Some("completed") => {
                    string(p, s, &format!("{st}.output"), "output");
                    string(p, s, &format!("{st}.title"), "title");
                    if !s.get("metadata").is_some_and(Value::is_object) {
                        p.add(&format!("{st}.metadata"), "missing or not an object");
                    }
                    time(p, s, &format!("{st}.time"), &["start", "end"]);
                }
                Some("error") => {
                    string(p, s, &format!("{st}.error"), "error");
                    time(p, s, &format!("{st}.time"), &["start", "end"]);
                }
                _ => p.add(
                    &format!("{st}.status"),
                    "not pending, running, completed or error",
                ),
            }
        }
        Some("step-start") | Some("snapshot") | Some("patch") | Some("agent") => {}
        Some("step-finish") => {
            string(p, o, &format!("{at}.reason"), "reason");
            number(p, o, &format!("{at}.cost"), "cost");
            tokens(p, o.get("tokens"), &format!("{at}.tokens"));
        }
        Some("subtask") | Some("retry") | Some("compaction") => {}
        Some(other) => p.add(
            &format!("{at}.type"),
            &format!("unknown part type {other:?}"),
        ),
        None => p.add(&format!("{at}.type"), "missing"),
    }
}

#[cfg(test)]
mod tests {
    use super::validate;

    #[test]
    fn the_harness_generated_import_input_passes() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../shared/fixtures/opencode/harness-generated/import-input-all-part-types.json"
        );
        let bytes = std::fs::read(path).expect("shared fixture present");
        assert_eq!(validate("x.json", &bytes), Vec::<String>::new());
    }

    #[test]
    fn a_bad_document_is_reported() {
        let problems = validate("x.json", br#"{"info":{"id":"x"},"messages":[{}]}"#);
        assert!(
            problems.iter().any(|p| p.contains("info.id")),
            "{problems:?}"
        );
        assert!(
            problems.iter().any(|p| p.contains("messages[0].info")),
            "{problems:?}"
        );
    }
}
