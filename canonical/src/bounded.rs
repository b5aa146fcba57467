//! Values bounded to what the store's text columns can hold (adapter-bounded-values).
//!
//! [`Text`], [`Json`] and [`Project`] hold source data and can only be built from
//! [`Extracted`] values, so every string a codec places in a canonical field passed through the
//! seam. A value whose encoding exceeds [`MAX_VALUE_BYTES`] is replaced in place by a marked
//! truncation sentinel that records the original byte count; the rest of the record is untouched.
//! See docs/decisions.md ("The per-value bound") for why the limit is what it is.

use crate::seam::Extracted;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

/// The largest value, in encoded bytes, that a text or JSON column of the store receives.
pub const MAX_VALUE_BYTES: usize = 32 * 1024 * 1024;

const SENTINEL_PREFIX: &str = "\u{27EA}pond:truncated original_bytes=";
const SENTINEL_SUFFIX: &str = "\u{27EB}";

/// The sentinel that stands in for a value of `original_bytes` bytes that was over the bound.
pub fn truncation_sentinel(original_bytes: usize) -> String {
    format!("{SENTINEL_PREFIX}{original_bytes}{SENTINEL_SUFFIX}")
}

/// The original byte count if `s` is a truncation sentinel.
pub fn truncated_original_bytes(s: &str) -> Option<u64> {
    s.strip_prefix(SENTINEL_PREFIX)?
        .strip_suffix(SENTINEL_SUFFIX)?
        .parse()
        .ok()
}

fn bound_string(s: String) -> String {
    if s.len() > MAX_VALUE_BYTES {
        truncation_sentinel(s.len())
    } else {
        s
    }
}

/// Bounds every string inside `value`, then the value's whole encoding.
fn bound_value(value: Value) -> Value {
    fn leaves(v: &mut Value) {
        match v {
            Value::String(s) if s.len() > MAX_VALUE_BYTES => *s = truncation_sentinel(s.len()),
            Value::Array(items) => items.iter_mut().for_each(leaves),
            Value::Object(map) => map.values_mut().for_each(leaves),
            _ => {}
        }
    }
    let mut value = value;
    leaves(&mut value);
    if encoded_upper_bound(&value) > MAX_VALUE_BYTES {
        let exact = serde_json::to_vec(&value)
            .map(|v| v.len())
            .unwrap_or(usize::MAX);
        if exact > MAX_VALUE_BYTES {
            return Value::String(truncation_sentinel(exact));
        }
    }
    value
}

/// A cheap upper bound on the JSON encoding's length (every string byte may escape to 6 bytes).
fn encoded_upper_bound(v: &Value) -> usize {
    match v {
        Value::Null | Value::Bool(_) => 5,
        Value::Number(_) => 40,
        Value::String(s) => s.len() * 6 + 2,
        Value::Array(items) => {
            items
                .iter()
                .map(|i| encoded_upper_bound(i) + 1)
                .sum::<usize>()
                + 2
        }
        Value::Object(map) => {
            map.iter()
                .map(|(k, v)| k.len() * 6 + 4 + encoded_upper_bound(v))
                .sum::<usize>()
                + 2
        }
    }
}

/// Source text in a canonical field, at most [`MAX_VALUE_BYTES`] long or a truncation sentinel.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct Text(String);

impl Text {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The original size in bytes if the source value was over the bound and this is its sentinel.
    pub fn truncated_original_bytes(&self) -> Option<u64> {
        truncated_original_bytes(&self.0)
    }

    /// Whether the text is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `application/octet-stream`, for a file whose source names no media type. model-no-synthesis
    /// permits this generic MIME type; a codec that uses it records the absence in options.
    pub fn generic_media_type() -> Self {
        Self("application/octet-stream".to_owned())
    }
}

impl From<Extracted<String>> for Text {
    fn from(value: Extracted<String>) -> Self {
        Self(bound_string(value.into_inner()))
    }
}

impl From<Extracted<&str>> for Text {
    fn from(value: Extracted<&str>) -> Self {
        let s = value.into_inner();
        Self(if s.len() > MAX_VALUE_BYTES {
            truncation_sentinel(s.len())
        } else {
            s.to_owned()
        })
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

/// An arbitrary JSON value from the source (tool parameters, tool results), bounded like [`Text`].
#[derive(Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct Json(Value);

impl Json {
    /// The value.
    pub fn as_value(&self) -> &Value {
        &self.0
    }

    /// The value, by move.
    pub fn into_value(self) -> Value {
        self.0
    }
}

impl From<Extracted<Value>> for Json {
    fn from(value: Extracted<Value>) -> Self {
        Self(bound_value(value.into_inner()))
    }
}

impl From<Extracted<&Value>> for Json {
    fn from(value: Extracted<&Value>) -> Self {
        Self(bound_value(value.into_inner().clone()))
    }
}

impl fmt::Debug for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

/// Metadata extracted from a record that goes into an `options` bag, bounded like [`Json`].
pub fn bounded_object(value: Extracted<Map<String, Value>>) -> Map<String, Value> {
    match bound_value(Value::Object(value.into_inner())) {
        Value::Object(map) => map,
        sentinel => Map::from_iter([("pond_truncated".to_owned(), sentinel)]),
    }
}

/// The shared-state scope a session belongs to (model-project-non-empty): never empty, and only
/// ever taken from source data.
#[derive(
    Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(transparent)]
pub struct Project(#[schemars(length(min = 1))] String);

impl Project {
    /// The project if the extracted value is non-empty (model-project-non-empty).
    pub fn from_extracted(value: Extracted<String>) -> Option<Self> {
        let s = value.into_inner();
        (!s.trim().is_empty()).then(|| Self(bound_string(s)))
    }

    /// The project.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Project {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Project({:?})", self.0)
    }
}

/// A FilePart payload: base64 text or a URL. Blobs are exempt from the text bound (spec 6.4).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum FileData {
    /// Inline base64, exactly as the source carried it.
    Base64(String),
    /// A URL, or `pond://blob/<sha256>` for a payload held in the store's blob column.
    Url(String),
}

impl FileData {
    /// Inline base64 read from the source.
    pub fn base64(value: Extracted<String>) -> Self {
        Self::Base64(value.into_inner())
    }

    /// A URL read from the source.
    pub fn url(value: Extracted<String>) -> Self {
        Self::Url(value.into_inner())
    }
}

impl fmt::Debug for FileData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Base64(b) => write!(f, "Base64({} bytes)", b.len()),
            Self::Url(u) => write!(f, "Url({u:?})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_over_the_bound_becomes_a_sentinel_with_its_exact_byte_count() {
        let original = "é".repeat(MAX_VALUE_BYTES / 2 + 1); // 2 bytes each: MAX + 2 bytes
        let text = Text::from(Extracted::new(original));
        assert_eq!(
            text.truncated_original_bytes(),
            Some(MAX_VALUE_BYTES as u64 + 2)
        );
        assert!(text.as_str().len() < 100);
    }

    #[test]
    fn text_at_the_bound_is_kept_whole() {
        let original = "a".repeat(MAX_VALUE_BYTES);
        let text = Text::from(Extracted::new(original.as_str()));
        assert_eq!(text.as_str(), original);
        assert_eq!(text.truncated_original_bytes(), None);
    }

    #[test]
    fn json_bounds_the_oversized_leaf_and_keeps_the_rest() {
        let big = "x".repeat(MAX_VALUE_BYTES + 7);
        let json = Json::from(Extracted::new(
            serde_json::json!({"stdout": big, "exit": 0}),
        ));
        let v = json.as_value();
        assert_eq!(v["exit"], 0);
        assert_eq!(
            truncated_original_bytes(v["stdout"].as_str().unwrap()),
            Some(MAX_VALUE_BYTES as u64 + 7)
        );
    }

    #[test]
    fn empty_project_is_refused() {
        assert!(Project::from_extracted(Extracted::new("  ".to_owned())).is_none());
        assert_eq!(
            Project::from_extracted(Extracted::new("/src/pond".to_owned()))
                .unwrap()
                .as_str(),
            "/src/pond"
        );
    }
}
