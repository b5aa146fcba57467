//! Small lookups every codec needs the same way: a source's path relative to the input root, and
//! a named string somewhere inside a source record's options.

use serde_json::{Map, Value};
use std::path::Path;

/// `path` relative to `root`, with `/` separators (the form `Origin` records).
pub(crate) fn relative_of(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// Whether any of `keys` occurs in `map`, as a member's name or as a string anywhere within:
/// whether a foreign writer looking for `keys` (`SessionWriter::option_keys`) could find
/// anything in it. Strings are compared too, to be safe: it only ever keeps more.
pub(crate) fn names_any(map: &Map<String, Value>, keys: &[&str]) -> bool {
    members_name_any(map.iter().map(|(k, v)| (k.as_str(), v)), keys)
}

/// [`names_any`] of an object given as its members (a record's leftovers, before they are
/// built into a `Map` only to be found unwanted).
pub(crate) fn members_name_any<'a>(
    mut members: impl Iterator<Item = (&'a str, &'a Value)>,
    keys: &[&str],
) -> bool {
    members.any(|(k, v)| member_names_any(k, v, keys))
}

/// Whether the member `key` of value `value` names one of `keys` ([`names_any`] of an object
/// of that member alone).
fn member_names_any(key: &str, value: &Value, keys: &[&str]) -> bool {
    fn within(value: &Value, keys: &[&str]) -> bool {
        match value {
            Value::String(s) => keys.contains(&s.as_str()),
            Value::Array(items) => items.iter().any(|v| within(v, keys)),
            Value::Object(map) => names_any(map, keys),
            _ => false,
        }
    }
    keys.contains(&key) || within(value, keys)
}

/// The members of `map` that name one of `keys` ([`names_any`]), in their order: what a foreign
/// writer that looks for `keys` alone can find in a message's leftovers, which it finds the same
/// in them as in the whole ([`find_str`] and the writers' other searches look for a key at any
/// depth, and a member without one holds none).
pub(crate) fn keep_named(map: &mut Map<String, Value>, keys: &[&str]) {
    map.retain(|k, v| member_names_any(k, v, keys));
}

/// [`names_any`] of what a record has left ([`Record::into_rest`] would give).
///
/// [`Record::into_rest`]: pond_canonical::Record::into_rest
pub(crate) fn rest_names_any(record: &pond_canonical::Record<'_>, keys: &[&str]) -> bool {
    members_name_any(record.members().map(|(k, v)| (k, v.into_inner())), keys)
}

/// The first non-empty string under one of `keys` in the object `o`, searched breadth-first to
/// depth 4: how a foreign writer finds a model or provider id wherever a source harness kept
/// it. Borrowed: a writer asks this of every assistant message's options, and a copy of them
/// (reasoning's encrypted content and all) cost more than writing the message. Each object's
/// members are compared with `keys` in one pass (the earlier of `keys` wins), not looked up
/// one key at a time: options are maps of a few members, where a SipHash per key costs more.
/// Each level is walked from the top again rather than queued (the objects of a level come in
/// the order a queue gives them): no allocation, where a queue per level was two fifths of the
/// cost (10.9 -> 6.3 M instructions over pi→opencode pi-real20's 17,870 lookups).
pub(crate) fn find_str<'a>(o: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a str> {
    /// The first string of the objects `depth` levels below `o`, in order; `reached` is set
    /// when there is any object at that depth.
    fn at_depth<'a>(
        o: &'a Map<String, Value>,
        keys: &[&str],
        depth: usize,
        reached: &mut bool,
    ) -> Option<&'a str> {
        if depth == 0 {
            *reached = true;
            return first_str(o, keys);
        }
        o.values()
            .filter_map(Value::as_object)
            .find_map(|inner| at_depth(inner, keys, depth - 1, reached))
    }
    for depth in 0..4 {
        let mut reached = false;
        if let Some(s) = at_depth(o, keys, depth, &mut reached) {
            return Some(s);
        }
        if !reached {
            break;
        }
    }
    None
}

/// The non-empty string member of `o` named by the earliest of `keys` that names one, found in
/// one pass over `o`'s members (see [`find_str`]).
pub(crate) fn first_str<'a>(o: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a str> {
    let mut first: Option<(usize, &'a str)> = None;
    for (k, v) in o {
        if let Value::String(s) = v
            && !s.is_empty()
            && let Some(rank) = keys.iter().position(|key| key == k)
            && first.is_none_or(|(r, _)| rank < r)
        {
            first = Some((rank, s));
        }
    }
    first.map(|(_, s)| s)
}

/// `options.pond.project_from` on a session: where its project came from when not from the
/// place its format keeps it (`"user"`: the person running pond named it; Codex also
/// `"turn_context"`, `"environment_context"`, `"agents_md"`).
pub const PROJECT_FROM: &str = "project_from";

/// The project the person running pond named for `origin` (`--project`), for a session whose
/// source names none anywhere (model-project-non-empty; model-no-synthesis: pond never picks one
/// itself). A session given it is marked with [`mark_project_from`] `"user"`.
pub(crate) fn user_project(origin: &pond_canonical::Origin) -> Option<pond_canonical::Project> {
    origin
        .user_project()
        .and_then(pond_canonical::Project::from_extracted)
}

/// Records in `session`'s options where its project came from ([`PROJECT_FROM`]).
pub(crate) fn mark_project_from(session: &mut pond_canonical::Session, place: &str) {
    pond_canonical::options_ns(&mut session.options, "pond")
        .insert(PROJECT_FROM.into(), Value::from(place));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_earliest_key_wins_whatever_the_member_order() {
        let o: Map<String, Value> = serde_json::from_str(
            r#"{"model": "m", "x": {"modelID": "deep"}, "empty": "", "modelID": "", "provider": 3}"#,
        )
        .unwrap();
        // `modelID` is empty, so `model` is the first that names a string.
        assert_eq!(first_str(&o, &["modelID", "model"]), Some("m"));
        assert_eq!(first_str(&o, &["provider", "empty"]), None);
        assert_eq!(find_str(&o, &["modelID", "model"]), Some("m"));
        // Breadth first: a level's members before the next level's.
        assert_eq!(find_str(&o, &["modelID"]), Some("deep"));
        let reordered: Map<String, Value> =
            serde_json::from_str(r#"{"model": "second", "modelId": "first"}"#).unwrap();
        assert_eq!(first_str(&reordered, &["modelId", "model"]), Some("first"));
    }

    #[test]
    fn what_a_record_has_left_names_a_key_as_its_built_rest_does() {
        // Asked of the record before its leftovers are built: the same answer as of the built
        // `Map`, for a key as a member's name, as a string deep within, taken out, or absent.
        let origin = pond_canonical::Origin::new("test", "/tmp/t.jsonl", "t.jsonl");
        let line = br#"{"type":"x","model":"m","usage":{"a":[1,{"b":"modelID"}]},"id":"i"}"#;
        for (take, keys) in [
            (None, &["model"][..]),
            (Some("model"), &["model"][..]),
            (None, &["modelID"][..]),
            (Some("usage"), &["modelID"][..]),
            (None, &["absent", "b"][..]),
            (None, &[][..]),
        ] {
            let mut record = pond_canonical::Record::from_json_line(&origin, 1, line).unwrap();
            if let Some(key) = take {
                record.take(key);
            }
            let early = rest_names_any(&record, keys);
            assert_eq!(
                early,
                names_any(record.into_rest().get(), keys),
                "{take:?} taken, {keys:?}"
            );
        }
        let record = pond_canonical::Record::from_json_line(&origin, 1, line).unwrap();
        assert!(rest_names_any(&record, &["modelID"]));
        assert!(
            rest_names_any(&record, &["b"]),
            "a member's name deep within"
        );
        assert!(!rest_names_any(&record, &["absent", "modelId"]));
    }

    /// `find_str` as it was written first: a queue of the objects of each level.
    fn find_str_queued<'a>(o: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a str> {
        let mut level = vec![o];
        for _ in 0..4 {
            let mut next = Vec::new();
            for o in level {
                if let Some(s) = first_str(o, keys) {
                    return Some(s);
                }
                next.extend(o.values().filter_map(Value::as_object));
            }
            if next.is_empty() {
                break;
            }
            level = next;
        }
        None
    }

    #[test]
    fn a_search_by_levels_finds_what_a_queue_of_levels_finds() {
        let mut state = 0x853c_49e6_748f_ea9bu64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n) as usize
        };
        const NAMES: [&str; 6] = ["model", "modelID", "provider", "a", "b", "usage"];
        fn object(next: &mut dyn FnMut(u64) -> usize, depth: usize) -> Map<String, Value> {
            let mut o = Map::new();
            for _ in 0..next(5) {
                let name = NAMES[next(NAMES.len() as u64)];
                let value = match next(6) {
                    0 | 1 if depth < 6 => Value::Object(object(next, depth + 1)),
                    2 => Value::from(""),
                    3 => Value::from(7),
                    _ => Value::from(format!("v{}", next(100))),
                };
                o.insert(name.to_owned(), value);
            }
            o
        }
        let mut found = 0;
        for _ in 0..20_000 {
            let o = object(&mut next, 0);
            for keys in [
                &["model", "modelID"][..],
                &["provider"],
                &["modelID", "model"],
            ] {
                let queued = find_str_queued(&o, keys);
                assert_eq!(find_str(&o, keys), queued, "{o:?} {keys:?}");
                found += usize::from(queued.is_some());
            }
        }
        assert!(found > 10_000, "{found}");
    }
}
