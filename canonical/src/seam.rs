//! The parse seam (spec 6.4): how a codec's read face turns one source record into canonical values.
//!
//! * [`Record`] is a transport-agnostic accessor over one source record
//!   (adapter-transport-agnostic-seam): a JSON object plus where it came from. A file codec builds
//!   it from a line, a database codec from a row, a stream codec from a message.
//! * [`Extracted`] holds a value read from a record. It has no public constructor: the accessors of
//!   [`Record`] and of `Extracted` itself are its only producers, so codec code cannot put a
//!   literal, default or sentinel where source data belongs (model-no-synthesis,
//!   model-schema-honesty). Every canonical field that holds source data is built from one.
//! * [`ParseError`] names the codec, the file and the line or record of every fault
//!   (adapter-integrity-no-silent-drops).
//!
//! ```compile_fail
//! // model-no-synthesis: an extracted value cannot be made from a literal.
//! let fake: pond_canonical::seam::Extracted<String> = pond_canonical::seam::Extracted("x".into());
//! ```

use serde_json::{Map, Value};
use std::fmt;
use std::path::{Path, PathBuf};

/// A value read from source data. Only the seam produces one (model-no-synthesis).
#[derive(Clone, PartialEq)]
pub struct Extracted<T>(T);

impl<T> Extracted<T> {
    pub(crate) fn new(value: T) -> Self {
        Self(value)
    }

    /// The value.
    pub fn get(&self) -> &T {
        &self.0
    }

    /// The value, by move. Reading it is always allowed; only making one is restricted.
    pub fn into_inner(self) -> T {
        self.0
    }

    /// A value computed from this one: decoding, splitting at a byte boundary, converting a type.
    /// The result is still source data. Never use it to replace the value with a made-up one.
    pub fn derive<U>(self, f: impl FnOnce(T) -> U) -> Extracted<U> {
        Extracted(f(self.0))
    }

    /// Like [`derive`](Self::derive) for a computation that may find nothing.
    pub fn derive_opt<U>(self, f: impl FnOnce(T) -> Option<U>) -> Option<Extracted<U>> {
        f(self.0).map(Extracted)
    }

    /// Borrows the value as an extracted reference.
    pub fn as_ref(&self) -> Extracted<&T> {
        Extracted(&self.0)
    }
}

impl<T: fmt::Debug> fmt::Debug for Extracted<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Extracted({:?})", self.0)
    }
}

impl<'a> Extracted<&'a Value> {
    /// The member `key` of an object value.
    pub fn field(&self, key: &str) -> Option<Extracted<&'a Value>> {
        self.0.get(key).map(Extracted)
    }

    /// The value at a JSON pointer (`/message/content/0`).
    pub fn pointer(&self, pointer: &str) -> Option<Extracted<&'a Value>> {
        self.0.pointer(pointer).map(Extracted)
    }

    /// The value as a string, if it is one.
    pub fn as_str(&self) -> Option<Extracted<&'a str>> {
        self.0.as_str().map(Extracted)
    }

    /// The value as an integer, if it is one.
    pub fn as_i64(&self) -> Option<Extracted<i64>> {
        self.0.as_i64().map(Extracted)
    }

    /// The value as a boolean, if it is one.
    pub fn as_bool(&self) -> Option<Extracted<bool>> {
        self.0.as_bool().map(Extracted)
    }

    /// The elements of an array value.
    pub fn items(&self) -> Option<impl Iterator<Item = Extracted<&'a Value>> + 'a> {
        self.0.as_array().map(|items| items.iter().map(Extracted))
    }

    /// An owned copy.
    pub fn cloned(&self) -> Extracted<Value> {
        Extracted(self.0.clone())
    }
}

impl Extracted<&str> {
    /// An owned copy.
    pub fn to_owned(&self) -> Extracted<String> {
        Extracted(self.0.to_owned())
    }
}

impl Extracted<Value> {
    /// Removes and returns the member `key` of an object value.
    pub fn take(&mut self, key: &str) -> Option<Extracted<Value>> {
        self.0.as_object_mut()?.remove(key).map(Extracted)
    }

    /// The value as an object, if it is one.
    pub fn into_object(self) -> Result<Extracted<Map<String, Value>>, Self> {
        match self.0 {
            Value::Object(map) => Ok(Extracted(map)),
            other => Err(Extracted(other)),
        }
    }

    /// The value as an owned string, if it is one.
    pub fn into_string(self) -> Result<Extracted<String>, Self> {
        match self.0 {
            Value::String(s) => Ok(Extracted(s)),
            other => Err(Extracted(other)),
        }
    }

    /// The elements of an array value, by move.
    pub fn into_items(self) -> Result<Vec<Extracted<Value>>, Self> {
        match self.0 {
            Value::Array(items) => Ok(items.into_iter().map(Extracted).collect()),
            other => Err(Extracted(other)),
        }
    }

    /// Borrows the value for read access.
    pub fn view(&self) -> Extracted<&Value> {
        Extracted(&self.0)
    }
}

impl Extracted<Map<String, Value>> {
    /// Removes and returns the member `key`.
    pub fn take(&mut self, key: &str) -> Option<Extracted<Value>> {
        self.0.remove(key).map(Extracted)
    }

    /// The member `key`, borrowed.
    pub fn field(&self, key: &str) -> Option<Extracted<&Value>> {
        member(&self.0, key).map(Extracted)
    }

    /// Puts an extracted value back under `key`: a codec that took a nested member out of a
    /// sub-object (a tool state's `input`) returns the remainder to the record's leftovers. Only
    /// extracted values go in, so this cannot introduce synthesized data (model-no-synthesis).
    pub fn insert(&mut self, key: &str, value: Extracted<Value>) {
        self.0.insert(key.to_owned(), value.0);
    }

    /// The object as a JSON value.
    pub fn into_value(self) -> Extracted<Value> {
        Extracted(Value::Object(self.0))
    }
}

/// Where in its source a record sits.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", content = "at", rename_all = "snake_case")]
pub enum Locator {
    /// The source as a whole (a file that cannot be opened, a layout that is not recognised).
    File,
    /// A 1-based line of a line-oriented file.
    Line(u64),
    /// The `record`-th (2 or more) of several JSON records written on one line with no newline
    /// between them (`{...}{...}`); the first of them is at `Line(line)`.
    LineRecord { line: u64, record: u64 },
    /// A record addressed some other way: a database row, a JSON path, an archive member.
    Record(String),
}

impl fmt::Display for Locator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File => Ok(()),
            Self::Line(n) => write!(f, ":{n}"),
            Self::LineRecord { line, record } => write!(f, ":{line} (record {record} of the line)"),
            Self::Record(r) => write!(f, " [{r}]"),
        }
    }
}

/// One source a codec reads: which codec, which file (or database, or stream), and its path
/// relative to the root the user named, which is also where a native write puts it again.
#[derive(Debug, Clone)]
pub struct Origin {
    codec: &'static str,
    path: PathBuf,
    relative: String,
    /// The project the person running pond named for this source (`--project`).
    user_project: Option<String>,
}

impl Origin {
    /// A source at `path`, known to the user as `relative` below the input they named.
    pub fn new(codec: &'static str, path: impl Into<PathBuf>, relative: impl Into<String>) -> Self {
        Self {
            codec,
            path: path.into(),
            relative: relative.into(),
            user_project: None,
        }
    }

    /// The same source, with the project the person running pond names for it (`pond convert
    /// --project`, `pond sync --project`): a codec uses it only for a session whose source names
    /// no project anywhere, and marks that session's project as user-supplied
    /// (`options.pond.project_from = "user"`), so it is never mistaken for source data.
    pub fn with_user_project(mut self, project: impl Into<String>) -> Self {
        self.user_project = Some(project.into()).filter(|p| !p.trim().is_empty());
        self
    }

    /// The project the person running pond named for this source, if any (see
    /// [`Origin::with_user_project`]). model-no-synthesis: this is the person's statement, not
    /// a default; a codec that uses it says so in the session's options.
    pub fn user_project(&self) -> Option<Extracted<String>> {
        self.user_project.clone().map(Extracted)
    }

    /// The codec reading this source.
    pub fn codec(&self) -> &'static str {
        self.codec
    }

    /// The source's path as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The source's path relative to the input root, with `/` separators.
    pub fn relative(&self) -> Extracted<&str> {
        Extracted(&self.relative)
    }

    /// The text of a line read from this source, for a codec that takes a value as the line
    /// spells it rather than as its parse builds it (a string's JSON text,
    /// `Json::from_json_text`).
    pub fn line_text<'b>(&self, text: &'b str) -> Extracted<&'b str> {
        Extracted(text)
    }

    /// The file name without its extension(s) after the first dot, as source data: many formats
    /// name a session's file after its id.
    pub fn file_stem(&self) -> Option<Extracted<String>> {
        let name = self.path.file_name()?.to_str()?;
        let stem = name.split('.').next().filter(|s| !s.is_empty())?;
        Some(Extracted(stem.to_owned()))
    }

    /// A typed error at `locator` in this source.
    pub fn error(&self, locator: Locator, kind: ParseErrorKind) -> ParseError {
        ParseError {
            codec: self.codec,
            file: self.path.clone(),
            locator,
            kind,
        }
    }
}

/// One record of source data behind value accessors (adapter-transport-agnostic-seam).
///
/// Its members are held in order as a list, not as a `Map`: a reader takes most of a record's
/// members out one by one and leaves a few for `options`, and serde_json's `Map` (with
/// `preserve_order`, an `IndexMap`) hashes each key with SipHash on every insert and removal,
/// which cost more than the comparisons of a record's few short keys (see docs/benchmarks.md,
/// "a record's members held as a list"). Taking a member moves the last one into its place, as
/// `Map::remove` does, so the leftovers are in the order they were in before.
#[derive(Debug, Clone)]
pub struct Record<'o> {
    origin: &'o Origin,
    locator: Locator,
    /// Distinct keys, in the order a `Map` of the record would hold them.
    fields: Vec<(String, Value)>,
}

impl<'o> Record<'o> {
    /// Parses one line of a JSONL source. `line` is 1-based and excludes the line terminator.
    pub fn from_json_line(origin: &'o Origin, line: u64, bytes: &[u8]) -> Result<Self, ParseError> {
        Self::from_json_at(origin, Locator::Line(line), bytes)
    }

    /// [`Record::from_json_line`] for a record at any place of a line-oriented file (the second
    /// of two records on one line, say).
    pub fn from_json_at(origin: &'o Origin, at: Locator, bytes: &[u8]) -> Result<Self, ParseError> {
        // `from_slice` accepts only UTF-8 (it checks strings; any other non-ASCII byte is a syntax
        // error), so the separate UTF-8 pass is needed only to name a fault as invalid UTF-8.
        let value: Value = serde_json::from_slice(bytes).map_err(|e| {
            if let Err(u) = std::str::from_utf8(bytes) {
                return origin.error(
                    at.clone(),
                    ParseErrorKind::InvalidUtf8 {
                        valid_up_to: u.valid_up_to(),
                    },
                );
            }
            let kind = if e.is_eof() {
                ParseErrorKind::Truncated {
                    detail: e.to_string(),
                }
            } else {
                ParseErrorKind::InvalidJson {
                    detail: e.to_string(),
                }
            };
            origin.error(at.clone(), kind)
        })?;
        Self::from_value(origin, at, value)
    }

    /// A record from an already-decoded JSON value (a database row's JSON column, a document member).
    pub fn from_value(
        origin: &'o Origin,
        locator: Locator,
        value: Value,
    ) -> Result<Self, ParseError> {
        match value {
            Value::Object(fields) => Ok(Self {
                origin,
                locator,
                fields: fields.into_iter().collect(),
            }),
            other => Err(origin.error(
                locator,
                ParseErrorKind::NotAnObject {
                    found: json_kind(&other),
                },
            )),
        }
    }

    /// A record from its members in order, as a JSON object's parse gives them: for a fast
    /// path that builds the members itself. A key named twice keeps its first place and its
    /// last value, as in a parsed object.
    pub fn from_members(
        origin: &'o Origin,
        locator: Locator,
        members: Vec<(String, Value)>,
    ) -> Self {
        // A key named twice (rare) is settled by a `Map`, which keeps the first place and the
        // last value; past a few members, which no harness's record has, too (comparing each
        // key with every other would be quadratic in a hostile line's length).
        const SMALL: usize = 32;
        let repeats = |members: &[(String, Value)]| {
            (1..members.len()).any(|i| members[..i].iter().any(|(k, _)| *k == members[i].0))
        };
        let fields = if members.len() > SMALL || repeats(&members) {
            members
                .into_iter()
                .collect::<Map<_, _>>()
                .into_iter()
                .collect()
        } else {
            members
        };
        Self {
            origin,
            locator,
            fields,
        }
    }

    /// Where the record sits in its source.
    pub fn locator(&self) -> &Locator {
        &self.locator
    }

    /// The source this record came from.
    pub fn origin(&self) -> &'o Origin {
        self.origin
    }

    /// The record's position as id material for records the source gives no id
    /// (lance-deterministic-pk): `L<line>` or the record locator.
    pub fn position(&self) -> Extracted<String> {
        Extracted(match &self.locator {
            Locator::Line(n) => {
                let mut id = String::with_capacity(8);
                id.push('L');
                crate::ids::push_decimal(&mut id, *n);
                id
            }
            Locator::LineRecord { line, record } => format!("L{line}.{record}"),
            Locator::Record(r) => r.clone(),
            Locator::File => String::new(),
        })
    }

    /// Where the member `key` is in `fields`.
    fn place(&self, key: &str) -> Option<usize> {
        self.fields.iter().position(|(k, _)| k == key)
    }

    /// The field `key`.
    pub fn get(&self, key: &str) -> Option<Extracted<&Value>> {
        self.member(key).map(Extracted)
    }

    fn member(&self, key: &str) -> Option<&Value> {
        self.fields
            .iter()
            .find_map(|(k, v)| (k == key).then_some(v))
    }

    /// The value at a JSON pointer into the record (`/message/content`).
    pub fn pointer(&self, pointer: &str) -> Option<Extracted<&Value>> {
        members_pointer(|key| self.member(key), pointer).map(Extracted)
    }

    /// The field `key` if it is a string.
    pub fn str(&self, key: &str) -> Option<Extracted<&str>> {
        self.member(key).and_then(Value::as_str).map(Extracted)
    }

    /// Removes the field `key` (so it does not land in the record's leftovers twice).
    pub fn take(&mut self, key: &str) -> Option<Extracted<Value>> {
        let at = self.place(key)?;
        Some(Extracted(self.fields.swap_remove(at).1))
    }

    /// Removes the field `key` if it is a string; a field of another type stays in place.
    pub fn take_str(&mut self, key: &str) -> Option<Extracted<String>> {
        let at = self.place(key)?;
        if !self.fields[at].1.is_string() {
            return None;
        }
        match self.fields.swap_remove(at).1 {
            Value::String(s) => Some(Extracted(s)),
            _ => None,
        }
    }

    /// The fields not taken yet: what rule 2 of the placement procedure puts into `options`.
    pub fn into_rest(self) -> Extracted<Map<String, Value>> {
        Extracted(self.fields.into_iter().collect())
    }

    /// The record whole, copied, for a placement-rule-3 carrier or a check of its shape.
    pub fn whole(&self) -> Extracted<Map<String, Value>> {
        Extracted(self.fields.iter().cloned().collect())
    }

    /// The members of the record in order, each as its name and value.
    pub fn members(&self) -> impl Iterator<Item = (&str, Extracted<&Value>)> {
        self.fields.iter().map(|(k, v)| (k.as_str(), Extracted(v)))
    }

    /// The record with its source let go of, to be [attached](Detached::attach) again.
    pub fn detach(self) -> Detached {
        Detached {
            locator: self.locator,
            fields: self.fields,
        }
    }

    /// A typed error at this record.
    pub fn error(&self, kind: ParseErrorKind) -> ParseError {
        self.origin.error(self.locator.clone(), kind)
    }
}

/// A [`Record`] away from the source it came from: for a message made from it later, on
/// whichever thread takes it, where the source is at hand again ([`Detached::attach`]).
#[derive(Debug, Clone)]
pub struct Detached {
    locator: Locator,
    fields: Vec<(String, Value)>,
}

impl Detached {
    /// The record again, from `origin` (the source it was read from).
    pub fn attach(self, origin: &Origin) -> Record<'_> {
        Record {
            origin,
            locator: self.locator,
            fields: self.fields,
        }
    }
}

/// A few top-level fields of one JSONL line, read without building the rest of the line: for a
/// survey pass that needs only envelope fields (which session a line belongs to, its `cwd`).
/// Values of other members are skipped unbuilt; a wanted member that is neither a string nor a
/// boolean reads as absent, like [`Record::str`] on it. A repeated key keeps its last value,
/// as in a [`Record`].
#[derive(Debug)]
pub struct LineFields<'b> {
    line: u64,
    fields: Vec<(&'static str, Scalar<'b>)>,
}

#[derive(Debug)]
enum Scalar<'b> {
    Str(std::borrow::Cow<'b, str>),
    Bool(bool),
    Other,
}

impl<'b> LineFields<'b> {
    /// Reads the members named in `wanted` from one line, or `None` where
    /// [`Record::from_json_line`] would fail (not UTF-8, not JSON, not an object).
    pub fn parse(line: u64, bytes: &'b [u8], wanted: &[&'static str]) -> Option<Self> {
        let text = std::str::from_utf8(bytes).ok()?;
        let mut de = serde_json::Deserializer::from_str(text);
        let fields = serde::de::DeserializeSeed::deserialize(Wanted(wanted), &mut de).ok()?;
        de.end().ok()?;
        Some(Self { line, fields })
    }

    fn scalar(&self, key: &str) -> Option<&Scalar<'b>> {
        self.fields.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// The member `key` if it is a string.
    pub fn str(&self, key: &str) -> Option<Extracted<&str>> {
        match self.scalar(key)? {
            Scalar::Str(s) => Some(Extracted(s)),
            _ => None,
        }
    }

    /// The member `key` if it is a boolean.
    pub fn bool(&self, key: &str) -> Option<Extracted<bool>> {
        match self.scalar(key)? {
            Scalar::Bool(b) => Some(Extracted(*b)),
            _ => None,
        }
    }

    /// The line's position as id material, as [`Record::position`] gives it.
    pub fn position(&self) -> Extracted<String> {
        Extracted(format!("L{}", self.line))
    }
}

struct Wanted<'w>(&'w [&'static str]);

impl<'de> serde::de::DeserializeSeed<'de> for Wanted<'_> {
    type Value = Vec<(&'static str, Scalar<'de>)>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Wanted<'_> {
    type Value = Vec<(&'static str, Scalar<'de>)>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out: Vec<(&'static str, Scalar<'de>)> = Vec::new();
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match self.0.iter().find(|w| **w == key) {
                Some(&name) => {
                    let value = map.next_value::<ScalarOf<'de>>()?.0;
                    match out.iter_mut().find(|(k, _)| *k == name) {
                        Some(slot) => slot.1 = value,
                        None => out.push((name, value)),
                    }
                }
                None => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(out)
    }
}

struct ScalarOf<'b>(Scalar<'b>);

impl<'de> serde::Deserialize<'de> for ScalarOf<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

struct ScalarVisitor;

impl<'de> serde::de::Visitor<'de> for ScalarVisitor {
    type Value = ScalarOf<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(ScalarOf(Scalar::Str(std::borrow::Cow::Borrowed(v))))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(ScalarOf(Scalar::Str(std::borrow::Cow::Owned(v.to_owned()))))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(ScalarOf(Scalar::Str(std::borrow::Cow::Owned(v))))
    }
    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(ScalarOf(Scalar::Bool(v)))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(ScalarOf(Scalar::Other))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(ScalarOf(Scalar::Other))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(ScalarOf(Scalar::Other))
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(ScalarOf(Scalar::Other))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(ScalarOf(Scalar::Other))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map
            .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
            .is_some()
        {}
        Ok(ScalarOf(Scalar::Other))
    }
}

/// `map.get(key)`, found by comparing `key` with each member's while the map is small, as a
/// record's objects are: serde_json's `Map` (with `preserve_order`, an `IndexMap`) hashes the
/// key with SipHash first, which costs more than a few comparisons of short keys. Keys are
/// unique, so the member found is the one `get` finds.
pub fn member<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    const SMALL: usize = 8;
    if map.len() <= SMALL {
        map.iter().find_map(|(k, v)| (k == key).then_some(v))
    } else {
        map.get(key)
    }
}

/// RFC 6901 lookup that starts at an object rather than a `Value`, so a record need not be
/// wrapped: `first` finds a member of the object the pointer starts at.
fn members_pointer<'a>(
    first: impl FnOnce(&str) -> Option<&'a Value>,
    pointer: &str,
) -> Option<&'a Value> {
    // What `Value::pointer` does, without allocating for a token that has no `~` escape (every
    // reader asks for a few pointers per record).
    fn token(t: &str) -> std::borrow::Cow<'_, str> {
        if t.as_bytes().contains(&b'~') {
            t.replace("~1", "/").replace("~0", "~").into()
        } else {
            t.into()
        }
    }
    // The tokens are cut by hand: `str::split`'s searcher was a fifth of a pi conversion's
    // pointer lookups (a few per record).
    fn cut(rest: &str) -> (&str, Option<&str>) {
        match rest.bytes().position(|b| b == b'/') {
            Some(i) => (&rest[..i], Some(&rest[i + 1..])),
            None => (rest, None),
        }
    }
    let (head, mut rest) = cut(pointer.strip_prefix('/')?);
    let mut at = first(&token(head))?;
    while let Some(more) = rest {
        let (t, next) = cut(more);
        rest = next;
        at = match at {
            Value::Object(map) => member(map, &token(t))?,
            Value::Array(items) => {
                // As serde_json reads an index: no sign, no leading zero.
                if t.starts_with('+') || (t.starts_with('0') && t.len() != 1) {
                    return None;
                }
                items.get(t.parse::<usize>().ok()?)?
            }
            _ => return None,
        };
    }
    Some(at)
}

/// The JSON kind of a value, for error messages.
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A fault in source data, located (adapter-integrity-no-silent-drops).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ParseError {
    /// The codec that found it.
    pub codec: &'static str,
    /// The file (or database, or stream) it is in.
    pub file: PathBuf,
    /// Where in that file.
    pub locator: Locator,
    /// What is wrong.
    pub kind: ParseErrorKind,
}

/// What is wrong with a piece of source data.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ParseErrorKind {
    /// The source could not be read.
    Io { detail: String },
    /// Bytes that are not UTF-8.
    InvalidUtf8 { valid_up_to: usize },
    /// Text that is not JSON.
    InvalidJson { detail: String },
    /// JSON that ends early: typically the last line of a file a harness was still writing.
    Truncated { detail: String },
    /// A JSON value where an object was expected.
    NotAnObject { found: &'static str },
    /// A line longer than the codec reads (the reader skips it without holding it in memory).
    LineTooLong { bytes: u64, limit: u64 },
    /// A field the format requires is absent.
    MissingField { field: String },
    /// A field holds a value the format does not allow.
    InvalidField { field: String, reason: String },
    /// No project could be resolved from the session's data (model-project-non-empty).
    NoProject,
    /// The source is not in a layout or version this codec knows.
    Unrecognized { detail: String },
    /// A warning, not a loss: a line holds several JSON records written with no newline between
    /// them (`{...}{...}`, a write that lost its line break); each complete one is read as a
    /// record of its own, in order, right after this.
    SeveralRecordsOnOneLine { records: u64 },
}

impl ParseErrorKind {
    /// Whether this is a warning: the source is malformed, but nothing of it was lost.
    pub fn is_warning(&self) -> bool {
        matches!(self, Self::SeveralRecordsOnOneLine { .. })
    }
}

impl fmt::Display for ParseErrorKind {
    /// What is wrong, with every control character quoted from the input escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::untrusted::write_escaped(f, |f| self.describe(f))
    }
}

impl ParseErrorKind {
    /// What is wrong, as it is made, before its control characters are escaped.
    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { detail } => write!(f, "cannot read: {detail}"),
            Self::InvalidUtf8 { valid_up_to } => {
                write!(f, "invalid UTF-8 after byte {valid_up_to} of the line")
            }
            Self::InvalidJson { detail } => write!(f, "invalid JSON: {detail}"),
            Self::Truncated { detail } => write!(
                f,
                "truncated JSON (was the file still being written?): {detail}"
            ),
            Self::NotAnObject { found } => {
                write!(f, "expected a JSON object, found {found}")
            }
            Self::LineTooLong { bytes, limit } => {
                write!(
                    f,
                    "line of {bytes} bytes is over the {limit}-byte limit; skipped"
                )
            }
            Self::MissingField { field } => write!(f, "missing required field `{field}`"),
            Self::InvalidField { field, reason } => {
                write!(f, "field `{field}`: {reason}")
            }
            Self::NoProject => write!(
                f,
                "no project can be resolved from the session's records (no `cwd`); session not converted (name one with --project)"
            ),
            Self::Unrecognized { detail } => write!(f, "not recognised: {detail}"),
            Self::SeveralRecordsOnOneLine { records } => write!(
                f,
                "warning: {records} JSON records on one line with no newline between them; each is read as a record of its own"
            ),
        }
    }
}

impl fmt::Display for ParseError {
    /// `codec: file:line: what`, with every control character of the path and of the text
    /// quoted from the input escaped (a damaged file must not drive the terminal).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = format!(
            "{}: {}{}: {}",
            self.codec,
            self.file.display(),
            self.locator,
            self.kind
        );
        f.write_str(&crate::untrusted::escape_controls(&text))
    }
}

impl std::error::Error for ParseError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin() -> Origin {
        Origin::new("test", "/tmp/s.jsonl", "s.jsonl")
    }

    #[test]
    fn malformed_lines_get_typed_located_errors() {
        let o = origin();
        let cases: [(&[u8], &str); 4] = [
            (b"{\"a\":1", "truncated"),
            (b"{\"a\":}", "invalid JSON"),
            (b"[1,2]", "expected a JSON object, found an array"),
            (b"{\"a\":\"\xff\"}", "invalid UTF-8"),
        ];
        for (line, want) in cases {
            let err = Record::from_json_line(&o, 7, line).unwrap_err();
            let msg = err.to_string();
            assert!(msg.starts_with("test: /tmp/s.jsonl:7: "), "{msg}");
            assert!(msg.contains(want), "{msg} lacks {want}");
        }
    }

    #[test]
    fn a_record_of_members_reads_as_the_map_of_its_parsed_object() {
        // The members of a fast-path build, repeated keys and takes included, give what
        // serde_json's `Map` of the line gives: the same lookups, the same leftovers in the same
        // order (a take moves the last member into its place, as `Map::remove` does), on both
        // sides of the count past which repeated keys are found with a `Map`.
        let o = origin();
        for n in [3usize, 31, 40] {
            let mut keys: Vec<String> = (0..n).map(|i| format!("k{i}")).collect();
            keys.push("k1".to_owned()); // named twice: first place, last value
            let text = format!(
                "{{{}}}",
                keys.iter()
                    .enumerate()
                    .map(|(i, k)| format!("\"{k}\":{i}"))
                    .collect::<Vec<_>>()
                    .join(",")
            );
            let members: Vec<(String, Value)> = keys
                .iter()
                .enumerate()
                .map(|(i, k)| (k.clone(), Value::from(i)))
                .collect();
            let mut map: Map<String, Value> = serde_json::from_str(&text).unwrap();
            let mut built = Record::from_members(&o, Locator::Line(1), members);
            assert_eq!(built.get("k1").unwrap().get(), &&Value::from(n));
            assert_eq!(built.get("k1").map(Extracted::into_inner), map.get("k1"));
            for key in ["k0", "k2", "missing"] {
                assert_eq!(
                    built.take(key).map(Extracted::into_inner),
                    map.remove(key),
                    "{n} members, take {key}"
                );
            }
            let rest = built.into_rest().into_inner();
            assert_eq!(
                rest.iter().collect::<Vec<_>>(),
                map.iter().collect::<Vec<_>>(),
                "{n} members: the leftovers and their order"
            );
            assert_eq!(rest.len(), n - 2);
        }
    }

    #[test]
    fn a_detached_record_attached_again_is_the_record_it_was() {
        let o = origin();
        let mut r = Record::from_json_line(&o, 4, br#"{"a":"x","b":{"c":1},"d":[2]}"#).unwrap();
        r.take("a");
        let again = r.clone().detach().attach(&o);
        assert_eq!(again.locator(), r.locator());
        assert_eq!(again.whole().into_inner(), r.whole().into_inner());
        assert_eq!(again.pointer("/b/c").unwrap().get(), &&Value::from(1));
        assert_eq!(
            again.into_rest().into_inner().keys().collect::<Vec<_>>(),
            ["d", "b"],
            "the order a take left"
        );
    }

    #[test]
    fn taking_fields_leaves_the_rest() {
        let o = origin();
        let mut r = Record::from_json_line(&o, 1, br#"{"type":"user","cwd":"/p","n":1}"#).unwrap();
        assert_eq!(r.take_str("cwd").unwrap().get(), "/p");
        assert!(r.take_str("n").is_none(), "a non-string stays");
        let rest = r.into_rest().into_inner();
        assert_eq!(rest.keys().collect::<Vec<_>>(), ["type", "n"]);
    }

    #[test]
    fn line_fields_read_like_a_record() {
        let o = origin();
        let line = br#"{"a":"x","b":{"c":[1,"y"]},"d":true,"e":3,"a":"z\u00e9","f":"\"q"}"#;
        let f = LineFields::parse(4, line, &["a", "b", "d", "e", "f", "g"]).unwrap();
        let r = Record::from_json_line(&o, 4, line).unwrap();
        for key in ["a", "b", "d", "e", "f", "g"] {
            assert_eq!(
                f.str(key).map(|s| *s.get()),
                r.str(key).map(|s| *s.get()),
                "{key}"
            );
            assert_eq!(
                f.bool(key).map(|b| *b.get()),
                r.get(key).and_then(|v| v.as_bool()).map(|b| *b.get()),
                "{key}"
            );
        }
        assert_eq!(f.position().get(), r.position().get());
        for bad in [
            &b"{\"a\":1"[..],
            b"{\"a\":}",
            b"[1,2]",
            b"{\"a\":\"\xff\"}",
            b"{} x",
        ] {
            assert!(LineFields::parse(1, bad, &["a"]).is_none());
            assert!(Record::from_json_line(&o, 1, bad).is_err());
        }
    }

    #[test]
    fn member_finds_what_get_finds() {
        // Small maps are scanned, larger ones hashed: both sides of the bound, keys present,
        // absent, empty, and one that is a prefix of another.
        for n in [0, 1, 7, 8, 9, 40] {
            let mut map = Map::new();
            for i in 0..n {
                map.insert(format!("k{i}"), Value::from(i));
            }
            map.insert(String::new(), Value::from("empty"));
            for key in ["k0", "k7", "k8", "k39", "k", "k00", "", "missing"] {
                assert_eq!(member(&map, key), map.get(key), "{n} members, key {key:?}");
            }
        }
    }

    #[test]
    fn pointer_reaches_nested_values() {
        let o = origin();
        let r = Record::from_json_line(&o, 1, br#"{"message":{"content":[{"a/b":2}]}}"#).unwrap();
        assert_eq!(
            r.pointer("/message/content/0/a~1b").unwrap().get(),
            &&Value::from(2)
        );
        assert!(r.pointer("/nope").is_none());
    }

    #[test]
    fn a_record_pointer_finds_what_value_pointer_finds() {
        let o = origin();
        let line = br#"{"m":{"c":[{"a/b":2,"t~":3},[4,5]],"":{"":6},"0":7},"x":[1],"~1":8}"#;
        let r = Record::from_json_line(&o, 1, line).unwrap();
        let whole: Value = serde_json::from_slice(line).unwrap();
        for pointer in [
            "",
            "/",
            "/m",
            "/m/c",
            "/m/c/0",
            "/m/c/0/a~1b",
            "/m/c/0/t~0",
            "/m/c/1/1",
            "/m/c/01",
            "/m/c/+1",
            "/m/c/-1",
            "/m/c/2",
            "/m//",
            "/m/0",
            "/x/0",
            "/x/0/y",
            "/~01",
            "/~1",
            "m",
            "/m/c/0/a/b",
            "/m/c/1/1/",
        ] {
            assert_eq!(
                r.pointer(pointer).map(|v| *v.get()),
                if pointer.is_empty() {
                    None
                } else {
                    whole.pointer(pointer)
                },
                "{pointer:?}"
            );
        }
    }
}
