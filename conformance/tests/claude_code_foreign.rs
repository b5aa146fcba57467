//! Foreign write into Claude Code (spec 6.3): every Codex fixture converted to Claude Code is a
//! valid transcript (the codec's `validate`), reads back with the Claude Code read face without a
//! fault, and keeps every conversational user text, assistant text and paired tool call; crafted
//! ids cannot place files outside the output; losses are reported; golden snapshots of reviewed
//! conversions live in `golden/foreign-claude-code/`.

use pond_canonical::SessionLog;
use pond_codecs::face::{Fidelity, Layout, Losses, Target, WriteError};
use pond_codecs::output::{DirOutput, MemoryOutput};
use pond_codecs::{claude_code, codex};
use pond_conformance::foreign_check::{Converted, convert_one, fixture_dirs, fixture_sources};
use pond_conformance::roundtrip::tempdir_for;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The Codex fixture roots: the shared ones (missing = failure) and the repo's own.
fn codex_roots() -> Vec<PathBuf> {
    fixture_dirs(&codex::CODEC)
}

/// Converts the Codex source `file`, in memory, and reads the transcript back.
fn convert(file: &Path) -> Converted {
    let reader = codex::CODEC.read.expect("codex reads");
    let sources = reader.discover(file).expect("discovers");
    let [source] = sources.as_slice() else {
        panic!("{}: {} sources", file.display(), sources.len());
    };
    let c =
        convert_one(&codex::CODEC, &claude_code::CODEC, source, Layout::Mirror).expect("converts");
    assert!(
        c.source_faults.is_empty(),
        "{}: {:?}",
        file.display(),
        c.source_faults
    );
    c
}

#[test]
fn every_codex_fixture_becomes_a_valid_claude_transcript_that_keeps_the_conversation() {
    let mut converted = 0;
    let mut malformed = Vec::new();
    for source in fixture_sources(&codex::CODEC) {
        let name = source.path().display().to_string();
        let c = convert_one(&codex::CODEC, &claude_code::CODEC, &source, Layout::Mirror)
            .expect("converts");
        if !c.source_faults.is_empty() {
            malformed.push(format!("{name}: {}", c.source_faults.join("; ")));
            continue;
        }
        converted += 1;
        assert!(
            c.summary.write_errors.is_empty(),
            "{name}: {:?}",
            c.summary.write_errors
        );
        assert!(!c.out.files.is_empty(), "{name}: nothing written");
        assert!(c.invalid.is_empty(), "{name}:\n{:#?}", c.invalid);
        for w in &c.summary.written {
            assert!(
                c.out.files.contains_key(&w.file),
                "{name}: {w:?} names no written file"
            );
            let resume = w.resume.as_deref().unwrap_or_default();
            assert!(
                resume.starts_with("cd '")
                    && resume.ends_with(&format!("claude --resume {}", w.session)),
                "{name}: {resume}"
            );
        }
        assert!(
            c.read_faults.is_empty(),
            "{name}: read back with faults: {:#?}",
            c.read_faults
        );
        // The source's conversational user texts, assistant texts and answered calls (only those
        // can exist in Claude Code; the others are reported losses), against every text, call
        // and result read back.
        let (s, t) = (c.source_counts, c.target_counts);
        let expected = [
            s.user_conversational_nonblank,
            s.assistant_texts_nonblank,
            s.answered_calls,
            s.answered_calls,
        ];
        let got = [
            t.user_conversational + t.user_conversational_empty,
            t.assistant_texts + t.assistant_empty,
            t.tool_calls,
            t.tool_results,
        ];
        assert_eq!(got, expected, "{name}: read back (left) vs source (right)");
    }
    eprintln!("converted {converted} Codex fixtures; malformed (skipped):");
    for m in &malformed {
        eprintln!("  {m}");
    }
    assert!(converted >= 10, "only {converted} Codex fixtures converted");
}

#[test]
fn encrypted_reasoning_is_a_reported_loss() {
    let file = codex_roots()[0].join(
        "localpush-2026-02-23/rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl",
    );
    let conversion = convert(&file);
    let loss = conversion
        .summary
        .losses
        .kinds
        .get("reasoning_encrypted_content")
        .unwrap_or_else(|| {
            panic!(
                "no encrypted-reasoning loss: {:#?}",
                conversion.summary.losses
            )
        });
    assert!(
        loss.count > 0 && loss.first.starts_with("session "),
        "{loss:?}"
    );
    // The written transcript holds no reasoning at all (no forged thinking block).
    for bytes in conversion.out.files.values() {
        let text = String::from_utf8_lossy(bytes);
        assert!(!text.contains("\"type\":\"thinking\""));
        assert!(!text.contains("encrypted_content"));
    }
}

/// A canonical session as JSON, with one user message, under `id`.
fn crafted(id: &str, source_agent: &str, message_options: serde_json::Value) -> SessionLog {
    serde_json::from_value(serde_json::json!({
        "session": {
            "id": id, "source_agent": source_agent, "created_at": "2026-01-01T00:00:00Z",
            "project": "/tmp/../../etc", "options": {"source": {"path": id}},
        },
        "messages": [{
            "role": "user", "id": "m1", "session_id": id, "timestamp": "2026-01-01T00:00:01Z",
            "content": [{"type": "text", "id": "m1.0", "session_id": id, "message_id": "m1",
                         "provenance": "conversational", "text": "hi", "options": {}}],
            "options": message_options,
        }],
    }))
    .expect("a canonical session")
}

fn write(
    log: &SessionLog,
    fidelity: Fidelity,
    layout: Layout,
    out: &mut dyn pond_codecs::Output,
) -> (Result<(), WriteError>, Losses, Vec<pond_codecs::Written>) {
    let face = claude_code::CODEC.write.expect("writes");
    let mut writer = face.writer(layout);
    let mut losses = Losses::default();
    let mut written = Vec::new();
    let mut target = Target {
        out,
        losses: &mut losses,
        written: &mut written,
    };
    let mut result = writer.session(&log.session, fidelity, &mut target);
    for m in &log.messages {
        if result.is_ok() {
            result = writer.message(m, &mut target);
        }
    }
    if result.is_ok() {
        result = writer.end_source(&mut target);
    }
    (result, losses, written)
}

#[test]
fn crafted_ids_cannot_leave_the_output() {
    let dir = tempdir_for("claude-crafted").expect("temp dir");
    let root = dir.join("out");
    // Foreign: a non-UUID id never reaches a path; the session gets a derived UUID, recorded.
    let log = crafted("../../.bashrc", "codex", serde_json::json!({}));
    let mut out = DirOutput::new(&root);
    let (result, losses, written) = write(&log, Fidelity::Foreign, Layout::Mirror, &mut out);
    out.finish().expect("flush");
    result.expect("written under a derived id");
    assert!(
        losses.kinds.contains_key("session_id_derived"),
        "{losses:#?}"
    );
    let w = &written[0];
    assert!(claude_code::naming::is_uuid(&w.session), "{w:?}");
    assert_eq!(w.file, format!("-tmp-------etc/{}.jsonl", w.session));
    assert!(root.join(&w.file).is_file());
    assert!(!dir.join(".bashrc").exists() && !root.join("../../.bashrc").exists());
    // Native: the source path is the file, so a crafted one is a typed error and no file.
    let native = crafted(
        "../../.bashrc",
        "claude-code",
        serde_json::json!({"source": {"envelope": {"type": "user"}, "content": "string"},
                           "anthropic": {"role": "user"}}),
    );
    let mut out = DirOutput::new(dir.join("native"));
    let (result, _, _) = write(&native, Fidelity::Native, Layout::Mirror, &mut out);
    assert!(
        matches!(result, Err(WriteError::UnsafePath { .. })),
        "{result:?}"
    );
    assert!(!dir.join(".bashrc").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn harness_layout_puts_native_sessions_under_the_encoded_cwd() {
    let native = crafted(
        "projects/-old-place/5e1f7e57-0000-4000-8000-000000000001.jsonl",
        "claude-code",
        serde_json::json!({"source": {"envelope": {"type": "user"}, "content": "string"},
                           "anthropic": {"role": "user"}}),
    );
    let mut out = MemoryOutput::default();
    let (result, _, written) = write(&native, Fidelity::Native, Layout::Harness, &mut out);
    result.expect("written");
    let file = "-tmp-------etc/5e1f7e57-0000-4000-8000-000000000001.jsonl";
    assert!(out.files.contains_key(file), "{:?}", out.files.keys());
    assert_eq!(written[0].file, file);
}

/// The Claude Code transcript of one Codex fixture, as JSON values per file, for review.
fn golden(name: &str, file: &Path) {
    let conversion = convert(file);
    let files: BTreeMap<&String, Vec<serde_json::Value>> = conversion
        .out
        .files
        .iter()
        .map(|(path, bytes)| {
            let lines = String::from_utf8_lossy(bytes)
                .lines()
                .map(|l| serde_json::from_str(l).expect("a JSON line"))
                .collect();
            (path, lines)
        })
        .collect();
    let snapshot = serde_json::json!({
        "files": files,
        "losses": conversion.summary.losses,
        "written": conversion.summary.written,
    });
    insta::with_settings!({
        snapshot_path => "../../golden/foreign-claude-code",
        prepend_module_to_snapshot => false,
        description => file.file_name().unwrap().to_string_lossy().into_owned(),
        omit_expression => true,
    }, {
        insta::assert_json_snapshot!(name, snapshot);
    });
}

#[test]
fn golden_codex_g0_with_local_shell_call() {
    golden(
        "codex_g0_local_shell",
        &codex_roots()[1].join(
            "g0-with-cwd/rollout-2025-08-01T10-00-00-0198aaaa-bbbb-7ccc-8ddd-eeeeffff0003.jsonl",
        ),
    );
}

#[test]
fn golden_codex_image_toolcall_compaction() {
    golden(
        "codex_image_toolcall_compaction",
        &codex_roots()[0]
            .join("generated-codex-0.169.0/exec-image-toolcall-resume-compaction.jsonl"),
    );
}

/// A tool call's id as Claude Code takes it: an id of `[A-Za-z0-9_-]` as it is; any other
/// character (one outside ASCII too) as `_`; an id taken already gets `_2`, `_3`, ...
/// (recorded as a loss); each result follows its call's new id. And a result's text and image
/// blocks are Claude's blocks, any other result its JSON text (recorded as a loss).
#[test]
fn call_ids_and_results_are_written_as_claude_takes_them() {
    let dir = tempdir_for("claude-call-ids").expect("temp dir");
    let path = dir.join("s.jsonl");
    let header = r#"{"type":"session","version":3,"id":"0f5e3c2a-1111-4222-8333-444455556666","timestamp":"2025-11-21T10:00:00.000Z","cwd":"/w"}"#;
    let mut lines = vec![header.to_owned()];
    let calls = [
        ("call_1|fc_2", r#"[{"type":"text","text":"a"}]"#),
        (
            "call_1_fc_2",
            r#"[{"type":"text","text":"b"},{"type":"image","data":"AA==","mimeType":"image/png"}]"#,
        ),
        ("call.1.fc.2", r#"[{"type":"audio","data":"x"}]"#),
        ("toolu_01-ok", r#""plain""#),
        ("réf", r#""x""#),
    ];
    let mut parent = "null".to_owned();
    for (i, (call, content)) in calls.iter().enumerate() {
        let (a, r) = (format!("a{i}"), format!("r{i}"));
        lines.push(format!(
            r#"{{"type":"message","id":"{a}","parentId":{parent},"timestamp":"2025-11-21T10:00:0{i}.000Z","message":{{"role":"assistant","content":[{{"type":"toolCall","id":"{call}","name":"ls","arguments":{{}}}}],"provider":"p","model":"m"}}}}"#
        ));
        lines.push(format!(
            r#"{{"type":"message","id":"{r}","parentId":"{a}","timestamp":"2025-11-21T10:00:0{i}.500Z","message":{{"role":"toolResult","toolCallId":"{call}","toolName":"ls","content":{content},"isError":false}}}}"#
        ));
        parent = format!("\"{r}\"");
    }
    std::fs::write(&path, lines.join("\n") + "\n").expect("pi file");
    let reader = pond_codecs::pi::CODEC.read.expect("pi reads");
    let sources = reader.discover(&path).expect("discovers");
    let c = convert_one(
        &pond_codecs::pi::CODEC,
        &claude_code::CODEC,
        &sources[0],
        Layout::Mirror,
    )
    .expect("converts");
    assert!(c.invalid.is_empty(), "{:?}", c.invalid);
    let [(_, bytes)] = c.out.files.iter().collect::<Vec<_>>()[..] else {
        panic!("{:?}", c.out.files.keys());
    };
    let records: Vec<serde_json::Value> = String::from_utf8(bytes.clone())
        .expect("UTF-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let blocks = |kind: &str| -> Vec<serde_json::Value> {
        records
            .iter()
            .filter_map(|r| r["message"]["content"].as_array())
            .flatten()
            .filter(|b| b["type"] == kind)
            .cloned()
            .collect()
    };
    let ids: Vec<_> = blocks("tool_use").iter().map(|b| b["id"].clone()).collect();
    assert_eq!(
        ids,
        [
            "call_1_fc_2",
            "call_1_fc_2_2",
            "call_1_fc_2_3",
            "toolu_01-ok",
            "r_f"
        ]
    );
    let results = blocks("tool_result");
    let answered: Vec<_> = results.iter().map(|b| b["tool_use_id"].clone()).collect();
    assert_eq!(answered, ids);
    assert_eq!(
        results[0]["content"],
        serde_json::json!([{"type": "text", "text": "a"}])
    );
    assert_eq!(
        results[1]["content"],
        serde_json::json!([{"type": "text", "text": "b"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}}])
    );
    assert_eq!(results[2]["content"], r#"[{"type":"audio","data":"x"}]"#);
    assert_eq!(results[3]["content"], "plain");
    assert_eq!(results[4]["content"], "x");
    let losses = &c.summary.losses;
    for kind in ["tool_call_id_rewritten", "tool_result_restructured"] {
        assert!(losses.kinds.contains_key(kind), "{kind}: {losses:#?}");
    }
    assert_eq!(losses.kinds["tool_call_id_rewritten"].count, 4);
    let _ = std::fs::remove_dir_all(&dir);
}
