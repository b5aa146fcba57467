//! `ReadFace::read_items` (carriers handed over as their source lines, for a conversion) against
//! `ReadFace::read`: for every codec and every fixture, shared and hand-written, malformed ones
//! included, the items stand for exactly the events and faults `read` gives, in the same order,
//! and a carried line is the record its carrier message holds.

use pond_canonical::{Event, Message};
use pond_codecs::{CODECS, Item};
use std::path::Path;

/// What one read gave, in order: events, and faults as their messages.
type Stream = Vec<Result<Event, String>>;

#[test]
fn read_items_stands_for_what_read_gives() {
    let roots = [
        Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../shared/fixtures"
        )),
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures")),
    ];
    let mut carried = 0;
    let mut compared = 0;
    for codec in CODECS {
        let Some(reader) = codec.read else { continue };
        for root in roots {
            let dir = root.join(codec.name);
            if !dir.is_dir() {
                continue;
            }
            for source in reader.discover(&dir).expect("discover") {
                let mut plain: Stream = Vec::new();
                reader.read(&source, &mut |item| {
                    plain.push(item.map_err(|e| e.to_string()));
                });
                let mut items: Stream = Vec::new();
                reader.read_items(&source, &mut |item| {
                    items.push(match item {
                        Ok(Item::Event(event)) => Ok(event),
                        Ok(Item::Carried(line)) => {
                            carried += 1;
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
                        Err(e) => Err(e.to_string()),
                    });
                });
                assert_eq!(plain, items, "{}", source.path().display());
                compared += 1;
            }
        }
    }
    assert!(compared > 50, "{compared} sources compared");
    assert!(carried > 1000, "only {carried} lines were carried as text");
}
