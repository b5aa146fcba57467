//! `ReadFace::read_items` (carriers handed over as their source lines, and with `defer` messages
//! handed over as their lines and mappings, for a conversion) against `ReadFace::read`: for every
//! codec and every fixture, shared and hand-written, malformed ones included, the items stand for
//! exactly the events and faults `read` gives, in the same order, with and without `defer`; a
//! carried line is the record its carrier message holds, and a deferred message made on another
//! thread, after every later one, is the one `read` gives.

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
    let mut deferred = 0;
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
                for defer in [false, true] {
                    let mut items: Stream = Vec::new();
                    // Deferred messages, with their places in `items`: made after the read, in
                    // reverse order, since a conversion makes each on whichever thread is free
                    // (so not in line order): each must be the same whenever it is made.
                    let mut later: Vec<(usize, pond_codecs::face::Deferred)> = Vec::new();
                    reader.read_items(&source, defer, &mut |item| {
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
                            Ok(Item::Deferred(make)) => {
                                assert!(defer, "{}: deferred unasked", source.path().display());
                                deferred += 1;
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
                                items[at] =
                                    make(&source).map(Event::Message).map_err(|e| e.to_string());
                            }
                        })
                        .join()
                    })
                    .expect("making a deferred message panicked");
                    assert_eq!(plain, items, "{} (defer: {defer})", source.path().display());
                    compared += 1;
                }
            }
        }
    }
    assert!(compared > 50, "{compared} sources compared");
    assert!(carried > 1000, "only {carried} lines were carried as text");
    assert!(deferred > 1000, "only {deferred} messages were deferred");
}
