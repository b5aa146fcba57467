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
///
/// A string may be held as its JSON text instead ([`Json::from_json_text`]): the text
/// serde_json writes for it, as the source line spelled it. Its value is decoded only when a
/// reader asks for it ([`Json::as_value`]), and a writer that asks for the text
/// ([`Json::json_text`]) copies it as it is: a tool's output, most of a Codex rollout's bytes,
/// is then neither decoded nor escaped again in a conversion.
#[derive(Clone)]
pub struct Json(Repr);

#[derive(Clone)]
enum Repr {
    Value(Value),
    /// Boxed, so that a [`Json`] is no larger than a [`Value`].
    Held(Box<Held>),
}

#[derive(Clone)]
struct Held {
    /// serde_json's compact encoding of a string ([`is_serde_json_string`]), quotes included.
    text: Box<str>,
    value: std::sync::OnceLock<Value>,
}

impl Json {
    /// The value.
    pub fn as_value(&self) -> &Value {
        match &self.0 {
            Repr::Value(v) => v,
            Repr::Held(held) => held
                .value
                .get_or_init(|| Value::String(decode_serde_json_string(&held.text))),
        }
    }

    /// The value, by move.
    pub fn into_value(self) -> Value {
        match self.0 {
            Repr::Value(v) => v,
            Repr::Held(held) => {
                let Held { text, value } = *held;
                value
                    .into_inner()
                    .unwrap_or_else(|| Value::String(decode_serde_json_string(&text)))
            }
        }
    }

    /// A string value held as `text`, its JSON text as the source spelled it, quotes included:
    /// `None` unless `text` is exactly what serde_json writes for the string it encodes (every
    /// escape in serde_json's form, no other) and within the bound (an encoding of at most
    /// [`MAX_VALUE_BYTES`] bytes, whose string is then no longer either). Such a text is the
    /// one encoding of its value a writer of compact JSON gives, so copying it is writing it.
    pub fn from_json_text(text: Extracted<&str>) -> Option<Self> {
        let text = text.into_inner();
        (text.len() <= MAX_VALUE_BYTES && is_serde_json_string(text)).then(|| {
            Self(Repr::Held(Box::new(Held {
                text: text.into(),
                value: std::sync::OnceLock::new(),
            })))
        })
    }

    /// The value's compact JSON text (what serde_json writes for it), when it is held as text
    /// ([`Json::from_json_text`]).
    pub fn json_text(&self) -> Option<&str> {
        match &self.0 {
            Repr::Held(held) => Some(&held.text),
            Repr::Value(_) => None,
        }
    }
}

/// Whether `text` is a JSON string exactly as serde_json writes it: quoted, `"` and `\` and
/// the control characters escaped (`\b`, `\t`, `\n`, `\f`, `\r`, else `\u00XX` in lowercase
/// hex) and nothing else (no `\/`, no `\u` escape of any other character).
fn is_serde_json_string(text: &str) -> bool {
    let bytes = text.as_bytes();
    let Some(inner) = bytes
        .strip_prefix(b"\"")
        .and_then(|b| b.strip_suffix(b"\""))
    else {
        return false;
    };
    // No control byte anywhere; tested 64 bytes at a time with no early exit within a block
    // (the loop the compiler can make wide).
    if inner
        .chunks(64)
        .any(|block| block.iter().fold(false, |seen, &b| seen | (b < 0x20)))
    {
        return false;
    }
    let mut rest = inner;
    while let Some(i) = memchr::memchr2(b'"', b'\\', rest) {
        if rest[i] == b'"' {
            return false;
        }
        match rest.get(i + 1) {
            Some(b'"' | b'\\' | b'b' | b't' | b'n' | b'f' | b'r') => rest = &rest[i + 2..],
            Some(b'u') => {
                let Some(&[b'0', b'0', hi, lo]) = rest.get(i + 2..i + 6) else {
                    return false;
                };
                let digit = |d: u8| match d {
                    b'0'..=b'9' => Some(d - b'0'),
                    b'a'..=b'f' => Some(d - b'a' + 10),
                    _ => None,
                };
                let (Some(hi), Some(lo)) = (digit(hi), digit(lo)) else {
                    return false;
                };
                let c = hi << 4 | lo;
                // serde_json writes these five with their letters, and escapes nothing above.
                if c >= 0x20 || matches!(c, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d) {
                    return false;
                }
                rest = &rest[i + 6..];
            }
            _ => return false,
        }
    }
    true
}

/// The string a text [`is_serde_json_string`] accepted encodes.
fn decode_serde_json_string(text: &str) -> String {
    let inner = &text[1..text.len() - 1];
    let bytes = inner.as_bytes();
    let mut out = String::with_capacity(inner.len());
    let mut rest = 0;
    while let Some(i) = memchr::memchr(b'\\', &bytes[rest..]).map(|i| rest + i) {
        out.push_str(&inner[rest..i]);
        let (c, len) = match bytes[i + 1] {
            b'b' => ('\u{8}', 2),
            b't' => ('\t', 2),
            b'n' => ('\n', 2),
            b'f' => ('\u{c}', 2),
            b'r' => ('\r', 2),
            b'u' => {
                let hex = &inner[i + 2..i + 6];
                let code = u32::from_str_radix(hex, 16).unwrap_or(0xfffd);
                (char::from_u32(code).unwrap_or('\u{fffd}'), 6)
            }
            // `"` and `\`.
            other => (char::from(other), 2),
        };
        out.push(c);
        rest = i + len;
    }
    out.push_str(&inner[rest..]);
    out
}

impl PartialEq for Json {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            // One encoding per value (see `from_json_text`).
            (Repr::Held(a), Repr::Held(b)) => a.text == b.text,
            _ => self.as_value() == other.as_value(),
        }
    }
}

impl Serialize for Json {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.as_value().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Value::deserialize(d).map(|v| Self(Repr::Value(v)))
    }
}

/// Any JSON value, held as text or not: the schema the derived one was (docs/schema).
impl schemars::JsonSchema for Json {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Json".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "An arbitrary JSON value from the source (tool parameters, tool results), bounded like [`Text`]."
        })
    }
}

impl From<Extracted<Value>> for Json {
    fn from(value: Extracted<Value>) -> Self {
        Self(Repr::Value(bound_value(value.into_inner())))
    }
}

impl From<Extracted<&Value>> for Json {
    fn from(value: Extracted<&Value>) -> Self {
        Self(Repr::Value(bound_value(value.into_inner().clone())))
    }
}

impl fmt::Debug for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_value(), f)
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
    fn a_string_is_held_as_the_text_serde_json_writes_for_it_and_only_that() {
        // Every character serde_json escapes or not, alone and among others, by a small LCG.
        let alphabet: Vec<char> = (0u32..0x80)
            .filter_map(char::from_u32)
            .chain(['é', '\u{7f}', '\u{2028}', '\u{1F600}', '\u{FFFD}'])
            .collect();
        let mut seed = 0x2545_f491_u64;
        for n in 0..4000 {
            let len = n % 37;
            let s: String = (0..len)
                .map(|_| {
                    seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    alphabet[(seed >> 33) as usize % alphabet.len()]
                })
                .collect();
            let text = serde_json::to_string(&s).unwrap();
            let json = Json::from_json_text(Extracted::new(text.as_str()))
                .unwrap_or_else(|| panic!("{text} refused"));
            assert_eq!(json.json_text(), Some(text.as_str()));
            assert_eq!(json.as_value(), &Value::String(s.clone()), "{text}");
            assert_eq!(json.clone().into_value(), Value::String(s.clone()));
            assert_eq!(json, Json::from(Extracted::new(Value::String(s))));
        }
        // What serde_json would not write, though JSON allows some of it.
        for other in [
            r#""\/""#,
            r#""\u0041""#,
            r#""\u001F""#,
            r#""\u000a""#,
            r#""\u00e9""#,
            r#""\ud83d\ude00""#,
            "\"a\tb\"",
            r#""a"b""#,
            r#""\""#,
            r#""\x""#,
            r#""\u00""#,
            r#""abc"#,
            "abc",
            "\"",
            "",
            "1",
        ] {
            assert!(
                Json::from_json_text(Extracted::new(other)).is_none(),
                "{other} held"
            );
        }
    }

    #[test]
    fn a_held_string_serializes_and_compares_as_its_value() {
        let text = r#""line\nand \"quoted\" \u001b[0m""#;
        let held = Json::from_json_text(Extracted::new(text)).unwrap();
        assert_eq!(serde_json::to_string(&held).unwrap(), text);
        let back: Json = serde_json::from_str(text).unwrap();
        assert_eq!(back.json_text(), None);
        assert_eq!(back, held);
        assert_eq!(held, back);
        assert_eq!(format!("{held:?}"), format!("{:?}", back.as_value()));
        assert_ne!(held, Json::from(Extracted::new(Value::from("line"))));
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
