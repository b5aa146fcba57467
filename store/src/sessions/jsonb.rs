//! JSON columns in the form Lance stores them (spec 5.1: `pa.json_()`, stored as JSONB), built
//! straight from canonical values.
//!
//! Handed JSON text, Lance parses every value again on write to encode it as JSONB; for a sync
//! that was a sixth of all the work (docs/benchmarks.md, "Ingest batches without null vectors or
//! JSON text"). Ingest instead encodes
//! the value it already holds, with Lance's own encoder, and hands Lance the stored form
//! (`lance.json`), which it writes as is. The bytes are the ones Lance would have produced from
//! the text (a test checks this over every shared fixture), so what a read returns is unchanged.

use lance_jsonb::{Number, Object, Value as Jsonb};
use pond_canonical::{Json, Text};
use serde_json::{Map, Value};
use std::borrow::Cow;

/// The extension name of Lance's stored JSON form (`lance_arrow::json::JSON_EXT_NAME`).
pub const STORED_JSON_EXT: &str = "lance.json";

/// `v` as a JSONB value, borrowing its strings.
fn value(v: &Value) -> Jsonb<'_> {
    match v {
        Value::Null => Jsonb::Null,
        Value::Bool(b) => Jsonb::Bool(*b),
        Value::Number(n) => Jsonb::Number(number(n)),
        Value::String(s) => Jsonb::String(Cow::Borrowed(s)),
        Value::Array(a) => Jsonb::Array(a.iter().map(value).collect()),
        Value::Object(m) => Jsonb::Object(object(m)),
    }
}

/// `m` as a JSONB object.
fn object(m: &Map<String, Value>) -> Object<'_> {
    m.iter().map(|(k, v)| (k.clone(), value(v))).collect()
}

/// A number as Lance's parser reads serde_json's text of it: a non-negative integer is
/// `UInt64`, a negative one `Int64`, and anything written with a fraction or exponent (every
/// `f64` serde_json holds) `Float64`.
fn number(n: &serde_json::Number) -> Number {
    if let Some(u) = n.as_u64() {
        Number::UInt64(u)
    } else if let Some(i) = n.as_i64() {
        Number::Int64(i)
    } else {
        Number::Float64(n.as_f64().unwrap_or(f64::NAN))
    }
}

/// A JSONB object under construction: fields in any order (JSONB sorts its keys).
#[derive(Default)]
pub struct Fields<'a>(Object<'a>);

impl<'a> Fields<'a> {
    pub fn text(mut self, key: &str, t: &'a Text) -> Self {
        self.0
            .insert(key.to_owned(), Jsonb::String(Cow::Borrowed(t.as_str())));
        self
    }

    pub fn opt_text(self, key: &str, t: Option<&'a Text>) -> Self {
        match t {
            Some(t) => self.text(key, t),
            None => self,
        }
    }

    pub fn str(mut self, key: &str, s: &'static str) -> Self {
        self.0
            .insert(key.to_owned(), Jsonb::String(Cow::Borrowed(s)));
        self
    }

    pub fn bool(mut self, key: &str, b: bool) -> Self {
        self.0.insert(key.to_owned(), Jsonb::Bool(b));
        self
    }

    pub fn json(mut self, key: &str, j: &'a Json) -> Self {
        self.0.insert(key.to_owned(), value(j.as_value()));
        self
    }

    /// The encoded object.
    pub fn encode(self) -> Vec<u8> {
        Jsonb::Object(self.0).to_vec()
    }
}

/// The encoded form of an options bag.
pub fn encode_object(m: &Map<String, Value>) -> Vec<u8> {
    Jsonb::Object(object(m)).to_vec()
}
