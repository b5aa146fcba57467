//! The structural check of a written rollout: what Codex 0.169 requires to load and resume it
//! (`/work/shared/formats/codex.md` section 8, `codex-validators.md`, the oracle README's Codex
//! facts). Codex never rejects a file: it silently skips every line it cannot parse, so each
//! problem found here is a line (or a whole session) Codex would not see.

use super::foreign::is_uuid;
use super::read::COMPRESSED_SUFFIX;
use serde_json::{Map, Value};

/// The top-level line types Codex 0.169 parses (G1 plus the 0.16x additions).
const LINE_TYPES: &[&str] = &[
    "session_meta",
    "response_item",
    "event_msg",
    "turn_context",
    "compacted",
    "world_state",
    "token_usage_record",
    "inter_agent_communication",
    "inter_agent_communication_metadata",
];

/// The problems found in the rollout at `relative` whose bytes are `bytes` (a `.jsonl.zst`
/// archive is decompressed first). Empty when Codex would load every line.
pub fn rollout(relative: &str, bytes: &[u8]) -> Vec<String> {
    let mut problems = Vec::new();
    let plain;
    let bytes = if relative.ends_with(COMPRESSED_SUFFIX) {
        match super::archive::decompress(bytes) {
            Ok(b) => {
                plain = b;
                &plain[..]
            }
            Err(e) => return vec![format!("not a zstd archive: {e}")],
        }
    } else {
        bytes
    };
    let Ok(text) = std::str::from_utf8(bytes) else {
        return vec!["not UTF-8".to_owned()];
    };
    let name = relative.rsplit('/').next().unwrap_or(relative);
    let name = name.strip_suffix(COMPRESSED_SUFFIX).unwrap_or(name);
    // codex.md 8 item 1: rollout-YYYY-MM-DDThh-mm-ss-<uuid>.jsonl.
    let file_id = name
        .strip_prefix("rollout-")
        .and_then(|r| r.strip_suffix(".jsonl"))
        .and_then(|stem| {
            let time = stem.get(..19)?;
            let shape = time.bytes().enumerate().all(|(i, b)| match i {
                4 | 7 | 13 | 16 => b == b'-',
                10 => b == b'T',
                _ => b.is_ascii_digit(),
            });
            (shape && stem.get(19..20) == Some("-")).then(|| stem.get(20..))?
        });
    match file_id {
        Some(id) if is_uuid(id) => {}
        _ => problems.push(format!(
            "file name {name:?} is not rollout-YYYY-MM-DDThh-mm-ss-<uuid>.jsonl: `codex resume` finds a session by the UUID in its file name"
        )),
    }
    let mut first = true;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                problems.push(format!("line {n}: not JSON ({e})"));
                first = false;
                continue;
            }
        };
        let Some(obj) = value.as_object() else {
            problems.push(format!("line {n}: not a JSON object"));
            first = false;
            continue;
        };
        if first {
            first = false;
            session_meta(n, obj, file_id, &mut problems);
            continue;
        }
        line_problems(n, obj, &mut problems);
    }
    if first {
        problems.push("empty rollout: line 1 must be a session_meta".to_owned());
    }
    problems
}

fn str_field<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    map.get(key).and_then(Value::as_str)
}

fn session_meta(n: usize, line: &Map<String, Value>, file_id: Option<&str>, out: &mut Vec<String>) {
    if str_field(line, "type") != Some("session_meta") {
        out.push(format!(
            "line {n}: the first line is not a `{{timestamp, type: session_meta, payload}}` envelope (a pre-envelope G0 file is empty to Codex 0.169)"
        ));
        return;
    }
    envelope(n, line, out);
    let Some(payload) = line.get("payload").and_then(Value::as_object) else {
        return;
    };
    // codex.md 3.1: required for deserialization; without them resume fails.
    for key in ["id", "timestamp", "cwd", "originator", "cli_version"] {
        if str_field(payload, key).is_none() {
            out.push(format!("line {n}: session_meta has no string `{key}`"));
        }
    }
    if let Some(id) = str_field(payload, "id") {
        if !is_uuid(id) {
            out.push(format!(
                "line {n}: session id {id:?} is not a UUID (codex resume would start a new session)"
            ));
        } else if let Some(file) = file_id
            && !file.eq_ignore_ascii_case(id)
        {
            out.push(format!(
                "line {n}: session id {id} differs from the file name's {file}"
            ));
        }
    }
    if let Some(v) = payload.get("model_provider")
        && !v.is_null()
        && !v.is_string()
    {
        out.push(format!(
            "line {n}: session_meta.model_provider is not a string"
        ));
    }
}

/// The envelope: a string `timestamp`, a `type`, an object `payload`.
fn envelope(n: usize, line: &Map<String, Value>, out: &mut Vec<String>) -> bool {
    let mut ok = true;
    match str_field(line, "timestamp") {
        Some(ts) if looks_like_rfc3339(ts) => {}
        Some(ts) => {
            out.push(format!("line {n}: timestamp {ts:?} is not RFC 3339"));
            ok = false;
        }
        None => {
            out.push(format!(
                "line {n}: no string `timestamp` (Codex drops the line)"
            ));
            ok = false;
        }
    }
    if !line.get("payload").is_some_and(Value::is_object) {
        out.push(format!("line {n}: no object `payload`"));
        ok = false;
    }
    ok
}

fn looks_like_rfc3339(ts: &str) -> bool {
    let b = ts.as_bytes();
    b.len() >= 20
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[7] == b'-'
        && (b[10] == b'T' || b[10] == b't')
        && b[13] == b':'
        && b[16] == b':'
}

fn line_problems(n: usize, line: &Map<String, Value>, out: &mut Vec<String>) {
    let kind = str_field(line, "type").unwrap_or("");
    if !LINE_TYPES.contains(&kind) {
        out.push(format!(
            "line {n}: line type {kind:?} is unknown to Codex (the line is ignored)"
        ));
        return;
    }
    if !envelope(n, line, out) {
        return;
    }
    let Some(payload) = line.get("payload").and_then(Value::as_object) else {
        return;
    };
    match kind {
        "response_item" => response_item(n, payload, out),
        "event_msg" if str_field(payload, "type").is_none() => {
            out.push(format!("line {n}: event_msg payload has no `type`"));
        }
        "turn_context" => {
            for key in ["cwd", "model"] {
                if str_field(payload, key).is_none() {
                    out.push(format!("line {n}: turn_context has no string `{key}`"));
                }
            }
        }
        _ => {}
    }
}

fn response_item(n: usize, item: &Map<String, Value>, out: &mut Vec<String>) {
    let kind = str_field(item, "type").unwrap_or("");
    let mut need = |key: &str| {
        if str_field(item, key).is_none() {
            out.push(format!("line {n}: {kind} has no string `{key}`"));
        }
    };
    match kind {
        "message" => {
            need("role");
            let role = str_field(item, "role").unwrap_or("");
            let Some(content) = item.get("content").and_then(Value::as_array) else {
                out.push(format!("line {n}: message has no `content` array"));
                return;
            };
            for (j, c) in content.iter().enumerate() {
                let ctype = c.get("type").and_then(Value::as_str).unwrap_or("");
                let ok = match (role, ctype) {
                    ("assistant", "output_text") => c.get("text").is_some_and(Value::is_string),
                    ("assistant", _) => false,
                    (_, "input_text") => c.get("text").is_some_and(Value::is_string),
                    (_, "input_image") => {
                        c.get("image_url").is_some_and(Value::is_string)
                            || c.get("file_id").is_some_and(Value::is_string)
                    }
                    (_, "input_audio" | "input_file") => true,
                    _ => false,
                };
                if !ok {
                    out.push(format!(
                        "line {n}: {role} content item {j} of type {ctype:?} is not what Codex reads (assistant: output_text; user/developer: input_text, input_image)"
                    ));
                }
            }
        }
        "function_call" => {
            need("name");
            need("call_id");
            if !item.get("arguments").is_some_and(Value::is_string) {
                out.push(format!(
                    "line {n}: function_call.arguments is not a JSON string (Codex drops the line)"
                ));
            }
        }
        "function_call_output" | "custom_tool_call_output" => {
            need("call_id");
            match item.get("output") {
                Some(Value::String(_)) => {}
                Some(Value::Array(items))
                    if items.iter().all(|i| {
                        matches!(
                            i.get("type").and_then(Value::as_str),
                            Some("input_text" | "input_image" | "output_text")
                        )
                    }) => {}
                _ => out.push(format!(
                    "line {n}: {kind}.output is not a string or a content-item array (Codex drops the line)"
                )),
            }
        }
        "custom_tool_call" => {
            need("call_id");
            need("name");
            need("input");
        }
        "reasoning" => {
            if !item.get("summary").is_some_and(Value::is_array) {
                out.push(format!("line {n}: reasoning has no `summary` array"));
            }
            if let Some(e) = item.get("encrypted_content")
                && !e.is_null()
                && !e.is_string()
            {
                out.push(format!(
                    "line {n}: reasoning.encrypted_content is not a string"
                ));
            }
        }
        "" => out.push(format!("line {n}: response_item payload has no `type`")),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::rollout;

    const NAME: &str =
        "2026/01/02/rollout-2026-01-02T03-04-05-0199aaaa-bbbb-7ccc-8ddd-eeeeffff0001.jsonl";

    #[test]
    fn the_minimal_accepted_file_passes() {
        let file = concat!(
            r#"{"timestamp":"2026-01-02T03:04:05.000Z","type":"session_meta","payload":{"id":"0199aaaa-bbbb-7ccc-8ddd-eeeeffff0001","timestamp":"2026-01-02T03:04:05.000Z","cwd":"/w","originator":"pond","cli_version":"0.0.0","model_provider":"openai"}}"#,
            "\n",
            r#"{"timestamp":"2026-01-02T03:04:06.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"2+2?"}]}}"#,
            "\n",
            r#"{"timestamp":"2026-01-02T03:04:07.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"4"}]}}"#,
            "\n"
        );
        assert_eq!(rollout(NAME, file.as_bytes()), Vec::<String>::new());
    }

    #[test]
    fn the_measured_pitfalls_are_found() {
        let file = concat!(
            r#"{"timestamp":"2026-01-02T03:04:05.000Z","type":"session_meta","payload":{"id":"not-a-uuid","timestamp":"2026-01-02T03:04:05.000Z","cwd":"/w"}}"#,
            "\n",
            r#"{"timestamp":"2026-01-02T03:04:07.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"text","text":"4"}]}}"#,
            "\n",
            r#"{"timestamp":"2026-01-02T03:04:07.000Z","type":"response_item","payload":{"type":"function_call","name":"x","call_id":"c","arguments":{}}}"#,
            "\n",
            r#"{"timestamp":"2026-01-02T03:04:07.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":{"content":"x","success":true}}}"#,
            "\n",
            r#"{"type":"response_item","payload":{"type":"message","role":"user","content":[]}}"#,
            "\n",
            r#"{"timestamp":"2026-01-02T03:04:07.000Z","type":"mystery","payload":{}}"#,
            "\n"
        );
        let problems = rollout("x/session.jsonl", file.as_bytes());
        let all = problems.join("\n");
        for needle in [
            "file name",
            "no string `originator`",
            "no string `cli_version`",
            "not a UUID",
            "content item 0 of type \"text\"",
            "arguments is not a JSON string",
            "output is not a string",
            "line 5: no string `timestamp`",
            "\"mystery\" is unknown",
        ] {
            assert!(all.contains(needle), "{needle:?} not in:\n{all}");
        }
    }
}
