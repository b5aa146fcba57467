//! `ReadFace::read_items` (carriers handed over as their source lines, and with `defer` messages
//! handed over as their lines and mappings, for a conversion) against `ReadFace::read`: for every
//! codec and every fixture, shared and hand-written, malformed ones included, the items stand for
//! exactly the events and faults `read` gives, in the same order, with and without `defer`; a
//! carried line is the record its carrier message holds, and a deferred message made on another
//! thread, after every later one, is the one `read` gives.

use pond_canonical::{Event, Message, Origin};
use pond_codecs::{CODECS, Item, ReadFace};
use std::path::Path;

/// What one read gave, in order: events, and faults as their messages.
type Stream = Vec<Result<Event, String>>;

/// Every source of every codec's fixtures, shared and hand-written, with its codec.
fn fixture_sources() -> Vec<(&'static pond_codecs::Codec, Origin)> {
    let roots = [
        Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../shared/fixtures"
        )),
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures")),
    ];
    let mut sources = Vec::new();
    for codec in CODECS {
        let Some(reader) = codec.read else { continue };
        for root in roots {
            let dir = root.join(codec.name);
            if dir.is_dir() {
                let found = reader.discover(&dir).expect("discover");
                sources.extend(found.into_iter().map(|source| (*codec, source)));
            }
        }
    }
    sources
}

#[test]
fn read_items_stands_for_what_read_gives() {
    let mut carried = 0;
    let mut deferred = 0;
    let mut compared = 0;
    for (codec, source) in fixture_sources() {
        let seen = compare(codec.read.expect("a reader"), &source);
        carried += seen.carried;
        deferred += seen.deferred;
        compared += 1;
    }
    assert!(compared > 50, "{compared} sources compared");
    assert!(carried > 1000, "only {carried} lines were carried as text");
    assert!(deferred > 1000, "only {deferred} messages were deferred");
}

/// A foreign read for a writer that takes reasoning lines hands over, from every fixture of
/// every codec, only lines whose message is what the line says
/// (`hostile::reasoning_lines_are_read`); the Codex fixtures have many.
#[test]
fn reasoning_lines_stand_for_their_messages() {
    let mut lines = std::collections::BTreeMap::new();
    for (codec, source) in fixture_sources() {
        let reader = codec.read.expect("a reader");
        *lines.entry(codec.name).or_insert(0) +=
            pond_conformance::hostile::reasoning_lines_are_read(reader, &source);
    }
    assert!(
        lines.get("codex").is_some_and(|&n| n > 100),
        "reasoning lines by codec: {lines:?}"
    );
}

/// How many lines one source's `read_items` handed over as their text, and deferred.
#[derive(Default)]
struct Seen {
    carried: usize,
    deferred: usize,
}

/// Reads `source` with `read`, and with `read_items` without and with `defer` (each deferred
/// message made on another thread, after every later one), and asserts that the items stand for
/// what `read` gives.
fn compare(reader: &dyn ReadFace, source: &Origin) -> Seen {
    let mut seen = Seen::default();
    let mut plain: Stream = Vec::new();
    reader.read(source, &mut |item| {
        plain.push(item.map_err(|e| e.to_string()));
    });
    for defer in [false, true] {
        let mut items: Stream = Vec::new();
        // Deferred messages, with their places in `items`: made after the read, in
        // reverse order, since a conversion makes each on whichever thread is free
        // (so not in line order): each must be the same whenever it is made.
        let mut later: Vec<(usize, pond_codecs::face::Deferred)> = Vec::new();
        reader.read_items(source, defer, &mut |item| {
            items.push(match item {
                Ok(Item::Event(event)) => Ok(event),
                Ok(Item::Carried(line)) => {
                    seen.carried += 1;
                    let message = line.message();
                    let Message::System(system) = &message else {
                        panic!(
                            "{}: a carried line is no system message",
                            source.path().display()
                        );
                    };
                    let record = system.carried_record().expect("a carrier");
                    let text: serde_json::Value =
                        serde_json::from_str(line.line()).expect("a JSON line");
                    assert_eq!(
                        &text,
                        &serde_json::Value::Object(record.clone()),
                        "{}: the line is not its carrier's record",
                        source.path().display()
                    );
                    assert_eq!(line.session_id(), message.session_id());
                    Ok(Event::Message(message))
                }
                Ok(Item::Reasoning(_)) => {
                    panic!("{}: a reasoning line unasked", source.path().display())
                }
                Ok(Item::Deferred(make) | Item::Parsed(make)) => {
                    assert!(defer, "{}: deferred unasked", source.path().display());
                    seen.deferred += 1;
                    later.push((items.len(), make));
                    Err("deferred, not made yet".into())
                }
                Err(e) => Err(e.to_string()),
            });
        });
        // Made where a conversion makes them: on a thread other than the reader's.
        std::thread::scope(|s| {
            s.spawn(|| {
                for (at, make) in later.into_iter().rev() {
                    let mut made = Vec::new();
                    make(source, &mut |m| {
                        made.push(m.map(Event::Message).map_err(|e| e.to_string()))
                    });
                    items.splice(at..=at, made);
                }
            })
            .join()
        })
        .expect("making a deferred message panicked");
        assert_eq!(plain, items, "{} (defer: {defer})", source.path().display());
    }
    seen
}

/// A Codex rollout whose `response_item` lines are each deferred as soon as their `type` is read
/// (the rest of the line unwalked), with every fault and odd spelling a line can hold: each
/// deferred line made on another thread gives what `read` gives there (faults, several records
/// on one line, an unusable timestamp, a payload that is no object, a repeated `type`), and a
/// line that may name an `ordinal` (plainly, or with an escaped letter) is read by the reader,
/// whose state its id depends on.
#[test]
fn codex_items_deferred_at_their_type_stand_for_what_read_gives() {
    let message = |text: &str| {
        format!(
            r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"{text}"}}]}}"#
        )
    };
    let item = |ts: &str, payload: &str| {
        format!(r#"{{"timestamp":"{ts}","type":"response_item","payload":{payload}}}"#)
    };
    let ts = "2026-01-01T00:00:01.000Z";
    let lines = [
        r#"{"timestamp":"2026-01-01T00:00:00.000Z","type":"session_meta","payload":{"id":"019c8a4c-ed82-79a1-aa28-7738fc5ab61a","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/work/app","originator":"codex_cli_rs","cli_version":"0.104.0"}}"#.to_owned(),
        item(ts, &message("plain, with \\\"escapes\\\" and \\u00e9")),
        item("not a time", &message("an unusable timestamp")),
        item(ts, &message("first of two")) + &item(ts, &message("second of two")),
        item(ts, &message("then a truncated one")) + r#"{"timestamp":"#,
        format!(r#"{{"type":"response_item","timestamp":"{ts}","payload":{},"ordinal":7}}"#, message("an ordinal after the type")),
        format!(r#"{{"type":"response_item","timestamp":"{ts}","payload":{},"ordin\u0061l":8}}"#, message("an escaped ordinal")),
        format!(r#"{{"type":"response_item","timestamp":"{ts}","payload":{},"ordinal":7}}"#, message("an ordinal seen before")),
        item(ts, r#""a payload that is no object""#),
        format!(r#"{{"type":"response_item","type":"event_msg","timestamp":"{ts}","payload":{}}}"#, message("a repeated type")),
        r#"{"timestamp":"2026-01-01T00:00:02.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"cut"#.to_owned(),
        r#"{"timestamp":"2026-01-01T00:00:02.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"{\"ok\": true}"}}"#.to_owned(),
        r#"{"timestamp":"2026-01-01T00:00:02.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"\ud800"}]}}"#.to_owned(),
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir
        .path()
        .join("rollout-2026-01-01T00-00-00-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let codec = pond_codecs::find("codex").unwrap();
    let reader = codec.read.unwrap();
    let sources = reader.discover(dir.path()).unwrap();
    assert_eq!(sources.len(), 1);
    let seen = compare(reader, &sources[0]);
    // Every `response_item` line but the three that may name an ordinal.
    assert_eq!(seen.deferred, lines.len() - 1 - 3, "deferred lines");
    // The ordinals are read by the reader: the first 7 is an id, the second falls back to its
    // line; the escaped one is 8.
    let mut ids = Vec::new();
    let mut faults = 0;
    reader.read(&sources[0], &mut |event| match event {
        Ok(Event::Message(m)) => ids.push(m.id().to_string()),
        Ok(_) => {}
        Err(_) => faults += 1,
    });
    for id in ["7", "8", "L8"] {
        assert!(ids.iter().any(|i| i == id), "no message {id} in {ids:?}");
    }
    assert!(faults >= 4, "{faults} faults");
}
