//! Small lookups every codec needs the same way: a source's path relative to the input root, and
//! a named string somewhere inside a source record's options.

use serde_json::Value;
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

/// The first non-empty string under one of `keys` in `v`, searched breadth-first to depth 4:
/// how a foreign writer finds a model or provider id wherever a source harness kept it.
pub(crate) fn find_str<'a>(v: &'a Value, keys: &[&str]) -> Option<&'a str> {
    let mut level = vec![v];
    for _ in 0..4 {
        let mut next = Vec::new();
        for v in level {
            if let Value::Object(o) = v {
                for k in keys {
                    if let Some(Value::String(s)) = o.get(*k)
                        && !s.is_empty()
                    {
                        return Some(s);
                    }
                }
                next.extend(o.values().filter(|v| v.is_object()));
            }
        }
        level = next;
    }
    None
}
