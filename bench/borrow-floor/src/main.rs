//! Floor prototype: Codex rollout JSONL -> Claude Code JSONL without owned `Value` trees.
//!
//! Variant A (default): every string the output carries is the raw escaped slice of the input
//! (`&RawValue`), copied whole. Variant B (`--features decode`): every string is deserialized as
//! `Cow<str>` (decoded; borrowed when it has no escapes) and re-escaped on output.
//!
//! Both: one serde pass per line into a borrowing struct (unknown fields skipped, but still
//! validated by serde_json's ignore scanner), the line checked as UTF-8 first, trailing bytes
//! rejected (serde_json::from_str). `arguments` is always decoded (it is JSON in a string) and
//! then validated as JSON and emitted compact (A: minified raw; B: transcoded, strings re-escaped).
//! Ids: uuid v5 of "response:{sid}:L{n}" via SHA-1 (as pond), msg id = 24 hex of SHA-1.
//!
//!     borrow-floor ROLLOUT.jsonl > out.jsonl

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
#[cfg(not(feature = "decode"))]
use serde_json::value::RawValue;
use sha1::{Digest, Sha1};
use std::borrow::Cow;
use std::io::Write;

#[cfg(not(feature = "decode"))]
type S<'a> = &'a RawValue;
#[cfg(feature = "decode")]
type S<'a> = Cow<'a, str>;

/// A string the output carries, as it is held: raw escaped JSON (A) or decoded text (B).
trait OutStr {
    /// Writes it as a JSON string (quotes included).
    fn put(&self, out: &mut Vec<u8>);
    /// Writes the inside of the JSON string (no quotes).
    fn put_inner(&self, out: &mut Vec<u8>);
    /// The inside bytes as held (raw escaped for A, decoded for B), for prefix tests / hashing.
    fn inner(&self) -> &[u8];
}

#[cfg(not(feature = "decode"))]
impl OutStr for &RawValue {
    #[inline]
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.get().as_bytes());
    }
    #[inline]
    fn put_inner(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.inner());
    }
    #[inline]
    fn inner(&self) -> &[u8] {
        let b = self.get().as_bytes();
        if b.len() >= 2 && b[0] == b'"' {
            &b[1..b.len() - 1]
        } else {
            b
        }
    }
}

#[cfg(feature = "decode")]
impl OutStr for Cow<'_, str> {
    #[inline]
    fn put(&self, out: &mut Vec<u8>) {
        out.push(b'"');
        escape_into(out, self.as_bytes());
        out.push(b'"');
    }
    #[inline]
    fn put_inner(&self, out: &mut Vec<u8>) {
        escape_into(out, self.as_bytes());
    }
    #[inline]
    fn inner(&self) -> &[u8] {
        self.as_bytes()
    }
}

/// A held string kept across lines (session id, cwd, model).
#[derive(Default)]
struct Stored(Vec<u8>);
impl Stored {
    fn set(&mut self, s: &impl OutStr) {
        self.0.clear();
        self.0.extend_from_slice(s.inner());
    }
    #[inline]
    fn put(&self, out: &mut Vec<u8>) {
        out.push(b'"');
        #[cfg(not(feature = "decode"))]
        out.extend_from_slice(&self.0);
        #[cfg(feature = "decode")]
        escape_into(out, &self.0);
        out.push(b'"');
    }
}

// serde_json's escape table: 0 = none, b'u' = \u00XX, else the char after the backslash.
const BB: u8 = b'b';
const TT: u8 = b't';
const NN: u8 = b'n';
const FF: u8 = b'f';
const RR: u8 = b'r';
const QU: u8 = b'"';
const BS: u8 = b'\\';
const UU: u8 = b'u';
const __: u8 = 0;
static ESCAPE: [u8; 256] = [
    UU, UU, UU, UU, UU, UU, UU, UU, BB, TT, NN, UU, FF, RR, UU, UU, // 0
    UU, UU, UU, UU, UU, UU, UU, UU, UU, UU, UU, UU, UU, UU, UU, UU, // 1
    __, __, QU, __, __, __, __, __, __, __, __, __, __, __, __, __, // 2
    __, __, __, __, __, __, __, __, __, __, __, __, __, __, __, __, // 3
    __, __, __, __, __, __, __, __, __, __, __, __, __, __, __, __, // 4
    __, __, __, __, __, __, __, __, __, __, __, __, BS, __, __, __, // 5
    __, __, __, __, __, __, __, __, __, __, __, __, __, __, __, __, // 6
    __, __, __, __, __, __, __, __, __, __, __, __, __, __, __, __, // 7
    __, __, __, __, __, __, __, __, __, __, __, __, __, __, __, __, // 8
    __, __, __, __, __, __, __, __, __, __, __, __, __, __, __, __, // 9
    __, __, __, __, __, __, __, __, __, __, __, __, __, __, __, __, // A
    __, __, __, __, __, __, __, __, __, __, __, __, __, __, __, __, // B
    __, __, __, __, __, __, __, __, __, __, __, __, __, __, __, __, // C
    __, __, __, __, __, __, __, __, __, __, __, __, __, __, __, __, // D
    __, __, __, __, __, __, __, __, __, __, __, __, __, __, __, __, // E
    __, __, __, __, __, __, __, __, __, __, __, __, __, __, __, __, // F
];

/// JSON-escapes `s` (no quotes), as serde_json does; 8 bytes at a time while no byte needs it.
fn escape_into(out: &mut Vec<u8>, s: &[u8]) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut start = 0;
    let mut i = 0;
    while i < s.len() {
        if i + 8 <= s.len() {
            let w = u64::from_le_bytes(s[i..i + 8].try_into().unwrap());
            let ctrl = w.wrapping_sub(ONES * 0x20) & !w;
            let q = w ^ (ONES * b'"' as u64);
            let q = q.wrapping_sub(ONES) & !q;
            let b = w ^ (ONES * b'\\' as u64);
            let b = b.wrapping_sub(ONES) & !b;
            if (ctrl | q | b) & HIGH == 0 {
                i += 8;
                continue;
            }
        }
        let end = (i + 8).min(s.len());
        while i < end {
            let c = s[i];
            let e = ESCAPE[c as usize];
            if e != 0 {
                out.extend_from_slice(&s[start..i]);
                if e == UU {
                    const HEX: &[u8; 16] = b"0123456789abcdef";
                    out.extend_from_slice(&[
                        b'\\',
                        b'u',
                        b'0',
                        b'0',
                        HEX[(c >> 4) as usize],
                        HEX[(c & 15) as usize],
                    ]);
                } else {
                    out.extend_from_slice(&[b'\\', e]);
                }
                start = i + 1;
            }
            i += 1;
        }
    }
    out.extend_from_slice(&s[start..]);
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow, default)]
    timestamp: Option<S<'a>>,
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    payload: Payload<'a>,
}

/// The union of the payload fields the conversion reads; everything else is skipped (validated).
#[derive(Deserialize, Default)]
#[serde(default)]
struct Payload<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow)]
    content: Option<Vec<Part<'a>>>,
    #[serde(borrow)]
    name: Option<S<'a>>,
    #[serde(borrow)]
    call_id: Option<S<'a>>,
    #[serde(borrow)]
    arguments: Option<Cow<'a, str>>,
    #[serde(borrow)]
    output: Option<S<'a>>,
    #[serde(borrow)]
    input: Option<S<'a>>,
    #[serde(borrow)]
    id: Option<S<'a>>,
    #[serde(borrow)]
    cwd: Option<S<'a>>,
    #[serde(borrow)]
    model: Option<S<'a>>,
}

#[derive(Deserialize)]
struct Part<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    text: Option<S<'a>>,
}

const NAMESPACE: [u8; 16] = [
    0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8,
];
const HEX: &[u8; 16] = b"0123456789abcdef";

fn sha1_of(pieces: &[&[u8]]) -> [u8; 20] {
    let mut h = Sha1::new();
    h.update(NAMESPACE);
    for p in pieces {
        h.update(p);
    }
    h.finalize().into()
}

fn uuid_text(hash: [u8; 20]) -> [u8; 36] {
    let mut b = [0u8; 16];
    b.copy_from_slice(&hash[..16]);
    b[6] = (b[6] & 0x0f) | 0x50;
    b[8] = (b[8] & 0x3f) | 0x80;
    let mut t = [0u8; 36];
    let mut j = 0;
    for (i, byte) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            t[j] = b'-';
            j += 1;
        }
        t[j] = HEX[(byte >> 4) as usize];
        t[j + 1] = HEX[(byte & 15) as usize];
        j += 2;
    }
    t
}

#[derive(Default)]
struct State {
    sid: Stored,
    cwd: Stored,
    model: Stored,
    parent: Option<[u8; 36]>,
    n: usize,
    lines_out: usize,
    dropped: usize,
    fallback: usize,
    nonobject_input: usize,
}

impl State {
    fn ids(&self, what: &[u8]) -> [u8; 20] {
        let mut nb = itoa::Buffer::new();
        let n = nb.format(self.n);
        sha1_of(&[what, b":", &self.sid.0, b":L", n.as_bytes()])
    }

    fn head(&self, out: &mut Vec<u8>, kind: &str) {
        out.extend_from_slice(b"{\"parentUuid\":");
        match &self.parent {
            None => out.extend_from_slice(b"null"),
            Some(p) => {
                out.push(b'"');
                out.extend_from_slice(p);
                out.push(b'"');
            }
        }
        out.extend_from_slice(b",\"isSidechain\":false,\"userType\":\"external\",\"cwd\":");
        self.cwd.put(out);
        out.extend_from_slice(b",\"sessionId\":");
        self.sid.put(out);
        out.extend_from_slice(b",\"version\":\"2.1.197\",\"type\":\"");
        out.extend_from_slice(kind.as_bytes());
        out.extend_from_slice(b"\",\"message\":");
    }

    fn assistant_head(&self, out: &mut Vec<u8>) {
        self.head(out, "assistant");
        out.extend_from_slice(b"{\"model\":");
        self.model.put(out);
        out.extend_from_slice(b",\"id\":\"msg_");
        let h = self.ids(b"message");
        for byte in &h[..12] {
            out.push(HEX[(byte >> 4) as usize]);
            out.push(HEX[(byte & 15) as usize]);
        }
        out.extend_from_slice(b"\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[");
    }

    fn assistant_tail(&mut self, out: &mut Vec<u8>, ts: &Option<S<'_>>) {
        out.extend_from_slice(
            b"],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":0,\"output_tokens\":0}}",
        );
        self.tail(out, ts, false);
    }

    fn tail(&mut self, out: &mut Vec<u8>, ts: &Option<S<'_>>, meta: bool) {
        if meta {
            out.extend_from_slice(b",\"isMeta\":true");
        }
        let u = uuid_text(self.ids(b"response"));
        out.extend_from_slice(b",\"uuid\":\"");
        out.extend_from_slice(&u);
        out.extend_from_slice(b"\",\"timestamp\":");
        match ts {
            Some(t) => t.put(out),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b"}\n");
        self.parent = Some(u);
        self.lines_out += 1;
    }
}

/// An injected (harness-written) user text: wrapped as a system reminder, isMeta.
fn injected(text: &[u8]) -> bool {
    for (open, close) in [
        (
            &b"<environment_context>"[..],
            &b"</environment_context>"[..],
        ),
        (b"<user_instructions>", b"</user_instructions>"),
        (b"# AGENTS.md instructions", b"</INSTRUCTIONS>"),
    ] {
        if text.starts_with(open) && memchr::memmem::find(text, close).is_some() {
            return true;
        }
    }
    false
}

fn convert(st: &mut State, line: Line<'_>, out: &mut Vec<u8>, scratch: &mut Vec<u8>) {
    let p = line.payload;
    match &*line.kind {
        "session_meta" => {
            if let Some(id) = &p.id {
                st.sid.set(id);
            }
            if let Some(c) = &p.cwd {
                st.cwd.set(c);
            }
            st.dropped += 1;
        }
        "turn_context" => {
            if let Some(m) = &p.model {
                st.model.set(m);
            }
            if let Some(c) = &p.cwd {
                st.cwd.set(c);
            }
            st.dropped += 1;
        }
        "response_item" => match p.kind.as_deref() {
            Some("message") => {
                let parts = p.content.unwrap_or_default();
                let texts: Vec<&S<'_>> = parts
                    .iter()
                    .filter(|q| matches!(&*q.kind, "input_text" | "output_text" | "text"))
                    .filter_map(|q| q.text.as_ref())
                    .collect();
                match p.role.as_deref() {
                    Some("user") => {
                        st.head(out, "user");
                        out.extend_from_slice(b"{\"role\":\"user\",\"content\":");
                        let mut meta = false;
                        if texts.len() == 1 {
                            let t = texts[0];
                            if injected(t.inner()) {
                                meta = true;
                                out.extend_from_slice(b"\"<system-reminder>\\n");
                                t.put_inner(out);
                                out.extend_from_slice(b"\\n</system-reminder>\"");
                            } else {
                                t.put(out);
                            }
                        } else {
                            out.push(b'[');
                            for (i, t) in texts.iter().enumerate() {
                                if i > 0 {
                                    out.push(b',');
                                }
                                out.extend_from_slice(b"{\"type\":\"text\",\"text\":");
                                t.put(out);
                                out.push(b'}');
                            }
                            out.push(b']');
                        }
                        out.push(b'}');
                        st.tail(out, &line.timestamp, meta);
                    }
                    Some("assistant") => {
                        st.assistant_head(out);
                        for (i, t) in texts.iter().enumerate() {
                            if i > 0 {
                                out.push(b',');
                            }
                            out.extend_from_slice(b"{\"type\":\"text\",\"text\":");
                            t.put(out);
                            out.push(b'}');
                        }
                        st.assistant_tail(out, &line.timestamp);
                    }
                    _ => st.dropped += 1,
                }
            }
            Some(kind @ ("function_call" | "custom_tool_call")) => {
                st.assistant_head(out);
                out.extend_from_slice(b"{\"type\":\"tool_use\",\"id\":");
                put_opt(out, &p.call_id);
                out.extend_from_slice(b",\"name\":");
                put_opt(out, &p.name);
                out.extend_from_slice(b",\"input\":");
                if kind == "function_call" {
                    let args = p.arguments.as_deref().unwrap_or("{}");
                    if !tool_input(out, args, scratch) {
                        st.nonobject_input += 1;
                    }
                } else {
                    // custom tool: the input is free text, wrapped as {"input": text}.
                    st.nonobject_input += 1;
                    out.extend_from_slice(b"{\"input\":");
                    put_opt(out, &p.input);
                    out.push(b'}');
                }
                out.push(b'}');
                st.assistant_tail(out, &line.timestamp);
            }
            Some("function_call_output" | "custom_tool_call_output") => {
                st.head(out, "user");
                out.extend_from_slice(b"{\"role\":\"user\",\"content\":[{\"tool_use_id\":");
                put_opt(out, &p.call_id);
                out.extend_from_slice(b",\"type\":\"tool_result\",\"content\":");
                put_opt(out, &p.output);
                out.extend_from_slice(b",\"is_error\":false}]}");
                st.tail(out, &line.timestamp, false);
            }
            _ => st.dropped += 1, // reasoning (encrypted / unsigned), others
        },
        _ => st.dropped += 1, // event_msg, compacted, ...
    }
}

fn put_opt(out: &mut Vec<u8>, s: &Option<S<'_>>) {
    match s {
        Some(s) => s.put(out),
        None => out.extend_from_slice(b"null"),
    }
}

/// Writes the tool input parsed from `args` (JSON text): an object as is (compact), any other
/// value as {"input": value}, text that is not JSON as {"input": "text"}. False if not an object.
fn tool_input(out: &mut Vec<u8>, args: &str, scratch: &mut Vec<u8>) -> bool {
    let object = args.trim_start().starts_with('{');
    scratch.clear();
    #[cfg(not(feature = "decode"))]
    let ok = serde_json::from_str::<IgnoredAny>(args).is_ok() && {
        minify_into(scratch, args.as_bytes());
        true
    };
    #[cfg(feature = "decode")]
    let ok = {
        let mut de = serde_json::Deserializer::from_str(args);
        Tx(scratch).deserialize(&mut de).is_ok() && de.end().is_ok()
    };
    if ok && object {
        out.extend_from_slice(scratch);
        return true;
    }
    out.extend_from_slice(b"{\"input\":");
    if ok {
        out.extend_from_slice(scratch);
    } else {
        out.push(b'"');
        escape_into(out, args.as_bytes());
        out.push(b'"');
    }
    out.push(b'}');
    false
}

/// Copies valid JSON text without its insignificant whitespace; strings copied raw.
#[cfg(not(feature = "decode"))]
fn minify_into(out: &mut Vec<u8>, s: &[u8]) {
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b' ' | b'\n' | b'\t' | b'\r' => i += 1,
            b'"' => {
                let start = i;
                i += 1;
                loop {
                    match memchr::memchr2(b'"', b'\\', &s[i..]) {
                        Some(k) if s[i + k] == b'\\' => i += k + 2,
                        Some(k) => {
                            i += k + 1;
                            break;
                        }
                        None => {
                            i = s.len();
                            break;
                        }
                    }
                }
                out.extend_from_slice(&s[start..i]);
            }
            _ => {
                let start = i;
                while i < s.len() && !matches!(s[i], b' ' | b'\n' | b'\t' | b'\r' | b'"') {
                    i += 1;
                }
                out.extend_from_slice(&s[start..i]);
            }
        }
    }
}

/// Transcodes any JSON value to compact JSON, strings decoded and re-escaped (variant B).
#[cfg_attr(not(feature = "decode"), allow(dead_code))]
struct Tx<'o>(&'o mut Vec<u8>);

impl<'de> DeserializeSeed<'de> for Tx<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Tx<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("JSON")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.0.extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.0
            .extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.0
            .extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        serde_json::to_writer(&mut *self.0, &v).map_err(E::custom)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.0.push(b'"');
        escape_into(self.0, v.as_bytes());
        self.0.push(b'"');
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.0.extend_from_slice(b"null");
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        delimited(self.0, b'[', b']', |out| {
            Ok(seq.next_element_seed(Tx(out))?.is_some())
        })
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        delimited(self.0, b'{', b'}', |out| {
            if map.next_key_seed(Tx(&mut *out))?.is_none() {
                return Ok(false);
            }
            out.push(b':');
            map.next_value_seed(Tx(out))?;
            Ok(true)
        })
    }
}

/// Writes `open`, the items `item` writes (comma-separated; it returns false when there are no
/// more, having written nothing), then `close`. (Variant B's: `Tx` is used only there.)
#[cfg_attr(not(feature = "decode"), allow(dead_code))]
fn delimited<E>(
    out: &mut Vec<u8>,
    open: u8,
    close: u8,
    mut item: impl FnMut(&mut Vec<u8>) -> Result<bool, E>,
) -> Result<(), E> {
    out.push(open);
    let mut first = true;
    loop {
        if !first {
            out.push(b',');
        }
        if !item(out)? {
            if !first {
                out.pop();
            }
            break;
        }
        first = false;
    }
    out.push(close);
    Ok(())
}

/// Calls `f` on each line of `path` (without its newline), read in 4 MiB chunks, split with
/// the memchr crate.
fn for_each_line(
    path: &str,
    mut f: impl FnMut(&[u8]) -> std::io::Result<()>,
) -> std::io::Result<()> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 4 << 20];
    let mut have = 0;
    loop {
        if have == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        let n = file.read(&mut buf[have..])?;
        let eof = n == 0;
        have += n;
        let mut start = 0;
        for nl in memchr::memchr_iter(b'\n', &buf[..have]) {
            f(&buf[start..nl])?;
            start = nl + 1;
        }
        if eof {
            if start < have {
                f(&buf[start..have])?;
            }
            return Ok(());
        }
        buf.copy_within(start..have, 0);
        have -= start;
    }
}

fn main() -> std::io::Result<()> {
    let path = std::env::args()
        .nth(1)
        .expect("usage: borrow-floor ROLLOUT.jsonl");
    let stdout = std::io::stdout();
    let mut so = stdout.lock();
    let mut st = State::default();
    let mut out = Vec::with_capacity(2 << 20);
    let mut scratch = Vec::new();
    for_each_line(&path, |line| {
        st.n += 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        let text = std::str::from_utf8(line).map_err(std::io::Error::other)?;
        match serde_json::from_str::<Line>(text) {
            Ok(l) => convert(&mut st, l, &mut out, &mut scratch),
            Err(_) => {
                // A real converter falls back to its general path; here: validate and count.
                serde_json::from_str::<IgnoredAny>(text).map_err(std::io::Error::other)?;
                st.fallback += 1;
            }
        }
        if out.len() >= 1 << 20 {
            so.write_all(&out)?;
            out.clear();
        }
        Ok(())
    })?;
    so.write_all(&out)?;
    so.flush()?;
    eprintln!(
        "lines in {}, out {}, dropped {}, fallback {}, non-object tool input {}",
        st.n, st.lines_out, st.dropped, st.fallback, st.nonobject_input
    );
    Ok(())
}
