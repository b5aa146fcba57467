//! `pond_search` (spec 7.5, 8): its request and response, and the handler. The handler checks a
//! request, runs the store's search, and shapes each hit's payload: the message's text in full
//! when small, else a bounded prefix and a snippet around the match; a user hit's parts
//! summary; each result's session.

use crate::envelope::{PROTOCOL_VERSION, Pond, check_version};
use crate::error::PondError;
use pond_store::search::{
    Filters, MessageHit, QueryVector, SearchQuery, SearchTrace, SessionGroup,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The longest query, in bytes. A search query is words and identifiers; a pasted document is
/// not one, and every gram of it would be ranked.
pub const MAX_QUERY_BYTES: usize = 4096;
/// The default and the largest `limit`.
pub const DEFAULT_LIMIT: u32 = 10;
pub const MAX_LIMIT: u32 = 100;
/// A hit's text is carried whole up to this many characters; a longer one is cut to
/// [`PREFIX_CHARS`] and a snippet of [`SNIPPET_CHARS`] around the match is added.
pub const FULL_TEXT_CHARS: usize = 1000;
pub const PREFIX_CHARS: usize = 400;
pub const SNIPPET_CHARS: usize = 300;

/// A role a search can be limited to. System and tool messages have no indexed text (spec 8:
/// their content is harness and tool output), so only these two can match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SearchRole {
    User,
    Assistant,
}

impl SearchRole {
    fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Assistant => "assistant",
        }
    }
}

/// A `pond_search` request. Filters narrow the messages searched before ranking; all that are
/// given apply together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchRequest {
    /// The protocol version; this pond speaks 1.
    pub protocol_version: u32,
    /// The tenant namespace; omit it for the personal pond.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// What to find: words, identifiers, paths, in any language. Matching is by character
    /// 3- to 5-grams, so a part of a word or identifier matches too; at least 3 characters,
    /// with a letter or digit, at most 4096 bytes.
    pub query: String,
    /// How many sessions to return (1 to 100; default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Only sessions of exactly this project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// Only sessions whose project starts with this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_prefix: Option<String>,
    /// Only this session and the sub-agent sessions it spawned; the session named by its id or
    /// by the start of it (at least 4 characters) when no other stored id begins with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Only sessions from this harness: claude-code, codex, opencode or pi.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_agent: Option<String>,
    /// Only messages of this role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<SearchRole>,
    /// Only messages at or after this time: RFC 3339, or a date (YYYY-MM-DD, from its start, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// Only messages before this time: RFC 3339, or a date (YYYY-MM-DD, up to its end, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    /// Only matches scoring at least this: BM25 in a full-text search, the fused score (0 to 1)
    /// in a hybrid one (see `mode`); a score is comparable within one query.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_score: Option<f32>,
}

impl SearchRequest {
    /// A request for `query` with no filters.
    pub fn new(query: impl Into<String>) -> Self {
        Self {
            protocol_version: PROTOCOL_VERSION,
            namespace: None,
            query: query.into(),
            limit: None,
            project: None,
            project_prefix: None,
            session_id: None,
            source_agent: None,
            role: None,
            since: None,
            until: None,
            min_score: None,
        }
    }
}

/// How the search ran: full-text only, or hybrid once messages have embeddings (spec 8: the
/// server decides from embedding availability).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SearchMode {
    /// BM25 over character n-grams alone: no message is embedded under the configured model,
    /// or no model is configured.
    FullText,
    /// BM25 and the vector arm, each normalized to [0, 1] and summed with fixed weights.
    Hybrid,
}

/// What `pond_search` answers: sessions, best first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SearchResponse {
    pub protocol_version: u32,
    pub mode: SearchMode,
    /// One result per session (a sub-agent's matches are under the session that spawned it),
    /// ordered by their best match's score.
    pub results: Vec<SessionResult>,
}

/// One session and its best matches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionResult {
    pub session_id: String,
    pub project: String,
    pub source_agent: String,
    /// When the session began (RFC 3339, as the source recorded it).
    pub created_at: String,
    /// The session this one was spawned or forked from, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session_id: Option<String>,
    /// The best match's score.
    pub score: f32,
    /// Its best matches, best first (at most 3).
    pub matches: Vec<MessageMatch>,
}

/// One matching message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MessageMatch {
    pub message_id: String,
    /// The message's own session: the result's, or one of its sub-agents'.
    pub session_id: String,
    pub role: String,
    /// RFC 3339, as the source recorded it.
    pub timestamp: String,
    pub score: f32,
    /// The message's indexed text: whole when `text_complete`, else its first characters.
    pub text: String,
    pub text_complete: bool,
    /// The whole text's length in characters.
    pub text_chars: u64,
    /// Where the query matched in `text`: [start, end) in characters (Unicode scalar values).
    pub highlights: Vec<[u64; 2]>,
    /// For a long text, a window around the first match; absent when the text is complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snippet: Option<Snippet>,
    /// For a user message, its parts counted by type (as `pond_get` gives them), so a prompt
    /// that attached files shows without a second fetch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parts_summary: Option<PartsSummary>,
}

/// A window of a long text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Snippet {
    /// Where the window starts in the whole text, in characters.
    pub start: u64,
    pub text: String,
    /// Where the query matched in the window, as in [`MessageMatch::highlights`].
    pub highlights: Vec<[u64; 2]>,
}

/// A message's parts counted by type (the descriptor `pond_get` returns).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PartsSummary {
    /// How many parts of each type (`text`, `file`, ...).
    pub kinds: BTreeMap<String, u64>,
    /// How many were injected by the harness rather than written by the user.
    #[serde(default)]
    pub injected: u64,
    /// Tools called or answered, in order of first appearance.
    #[serde(default)]
    pub tools: Vec<String>,
}

impl From<pond_store::get::PartsSummary> for PartsSummary {
    fn from(s: pond_store::get::PartsSummary) -> Self {
        Self {
            kinds: s
                .kinds
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect(),
            injected: s.injected,
            tools: s.tools,
        }
    }
}

/// `pond_search`: the sessions best matching the request, best first.
pub async fn pond_search(pond: &Pond, request: SearchRequest) -> Result<SearchResponse, PondError> {
    run(pond, request, false).await.map(|(r, _)| r)
}

/// `pond_search` with what `pond search --explain` shows: the query's grams and their
/// frequencies, the recall step's grams, the prefilter, and Lance's plan. Operator-only
/// (spec 8): no transport exposes it.
pub async fn pond_search_explained(
    pond: &Pond,
    request: SearchRequest,
) -> Result<(SearchResponse, SearchTrace), PondError> {
    run(pond, request, true).await
}

async fn run(
    pond: &Pond,
    request: SearchRequest,
    explain: bool,
) -> Result<(SearchResponse, SearchTrace), PondError> {
    check_version(request.protocol_version)?;
    let store = pond.namespace(request.namespace.as_deref()).await?;
    let checked = Checked::new(&request)?;
    // Hybrid when messages are embedded under the configured model (spec 8): only then is the
    // query embedded, and the model loaded.
    let vector = match pond.embedding() {
        Some(model) if store.embedded_under(model.name()).await? > 0 => Some(QueryVector {
            model: model.name().to_owned(),
            values: model.embed_query(&checked.query).await?,
        }),
        _ => None,
    };
    let mut query = SearchQuery {
        text: &checked.query,
        filters: checked.filters,
        limit: checked.limit,
        min_score: request.min_score,
        explain,
        vector,
    };
    let mut outcome = store.search(&query).await?;
    // A session named by the start of its id, as `pond_get` takes one: looked up only when the
    // id as given matched nothing, so an exact id costs no more than before.
    if outcome.groups.is_empty()
        && let Some(given) = query.filters.session_id.clone()
    {
        match store.resolve_session_id(&given).await? {
            Ok(id) if id != given => {
                query.filters.session_id = Some(id);
                outcome = store.search(&query).await?;
            }
            Ok(_) => {}
            Err(candidates) if candidates.total > 0 => {
                return Err(PondError::invalid("session_id", candidates.message(&given))
                    .with("candidates", candidates.ids));
            }
            // No stored session: a filter that matches nothing answers nothing.
            Err(_) => {}
        }
    }
    let mode = match outcome.mode {
        pond_store::search::SearchMode::FullText => SearchMode::FullText,
        pond_store::search::SearchMode::Hybrid => SearchMode::Hybrid,
    };
    let words = highlight_words(&checked.query);
    let user_hits: Vec<(String, String)> = outcome
        .groups
        .iter()
        .flat_map(|g| &g.hits)
        .filter(|h| h.role == "user")
        .map(|h| (h.session_id.clone(), h.message_id.clone()))
        .collect();
    let mut parts = store.parts_of(&user_hits).await?;
    let results = outcome
        .groups
        .into_iter()
        .map(|g| result(g, &words, &mut parts))
        .collect();
    Ok((
        SearchResponse {
            protocol_version: PROTOCOL_VERSION,
            mode,
            results,
        },
        outcome.trace,
    ))
}

/// A request's values, checked.
struct Checked {
    query: String,
    limit: usize,
    filters: Filters,
}

impl Checked {
    fn new(r: &SearchRequest) -> Result<Self, PondError> {
        if r.query.len() > MAX_QUERY_BYTES {
            return Err(PondError::invalid(
                "query",
                format!(
                    "query is {} bytes; the most is {MAX_QUERY_BYTES}: search for the words or identifiers that matter, not a whole document",
                    r.query.len()
                ),
            ));
        }
        let query = r.query.trim().to_owned();
        if query.is_empty() {
            return Err(PondError::invalid(
                "query",
                "query is empty: give the words, identifiers or path to search for",
            ));
        }
        if !query.chars().any(char::is_alphanumeric) {
            return Err(PondError::invalid(
                "query",
                format!(
                    "query {query:?} has no letter or digit: pond searches text, not punctuation alone"
                ),
            ));
        }
        if query.chars().count() < 3 {
            return Err(PondError::invalid(
                "query",
                format!(
                    "query {query:?} is shorter than 3 characters: pond matches sequences of 3 to 5 characters, so give at least 3 (a longer word, or two words)"
                ),
            ));
        }
        let limit = r.limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(PondError::invalid(
                "limit",
                format!("limit {limit} is out of range: give 1 to {MAX_LIMIT}"),
            ));
        }
        if let Some(s) = r.min_score
            && !(s.is_finite() && s >= 0.0)
        {
            return Err(PondError::invalid(
                "min_score",
                format!("min_score {s} must be a number of 0 or more"),
            ));
        }
        let non_empty = |field: &str, v: &Option<String>| -> Result<Option<String>, PondError> {
            match v {
                Some(s) if s.is_empty() => Err(PondError::invalid(
                    field,
                    format!("{field} is empty: leave it out to search everything"),
                )),
                other => Ok(other.clone()),
            }
        };
        let source_agent = match &r.source_agent {
            None => None,
            Some(a) => Some(source_agent(a)?),
        };
        let since = r
            .since
            .as_deref()
            .map(|t| instant("since", t, false))
            .transpose()?;
        let until = r
            .until
            .as_deref()
            .map(|t| instant("until", t, true))
            .transpose()?;
        if let (Some(s), Some(u)) = (since, until)
            && s >= u
        {
            return Err(PondError::invalid(
                "until",
                "until is not after since: no message can match",
            ));
        }
        Ok(Self {
            query,
            limit: limit as usize,
            filters: Filters {
                project: non_empty("project", &r.project)?,
                project_prefix: non_empty("project_prefix", &r.project_prefix)?,
                session_id: non_empty("session_id", &r.session_id)?,
                source_agent,
                role: r.role.map(|x| x.as_str().to_owned()),
                since_micros: since,
                until_micros: until,
            },
        })
    }
}

/// The brand a `source_agent` filter names: a codec's brand, or one of its names or aliases
/// (`claude` is `claude-code`).
fn source_agent(given: &str) -> Result<String, PondError> {
    if let Some(brand) = pond_codecs::registry::source_agent_named(given) {
        return Ok(brand.to_owned());
    }
    let known: Vec<&str> = pond_codecs::CODECS.iter().map(|c| c.source_agent).collect();
    Err(PondError::invalid(
        "source_agent",
        format!(
            "source_agent {given:?} is not a harness pond stores sessions from; known: {}",
            known.join(", ")
        ),
    ))
}

/// An instant from RFC 3339 text or a date; a date's start, or with `end_of_day` its end
/// (the start of the next day, which the filter excludes).
fn instant(field: &str, text: &str, end_of_day: bool) -> Result<i64, PondError> {
    let bad = |why: String| {
        PondError::invalid(
            field,
            format!(
                "{field} {text:?} is not a time: {why}; give RFC 3339 (2026-03-01T09:30:00Z) or a date (2026-03-01)"
            ),
        )
    };
    let is_date = text.len() == 10 && text.as_bytes().get(4) == Some(&b'-');
    let rfc = if is_date {
        format!("{text}T00:00:00Z")
    } else {
        text.to_owned()
    };
    let t = serde_json::from_value::<pond_canonical::Timestamp>(serde_json::Value::String(rfc))
        .map_err(|e| bad(e.to_string()))?;
    let micros = t.unix_micros();
    Ok(if is_date && end_of_day {
        micros + 86_400_000_000
    } else {
        micros
    })
}

fn result(
    g: SessionGroup,
    words: &[Vec<char>],
    parts: &mut std::collections::HashMap<(String, String), Vec<pond_canonical::Part>>,
) -> SessionResult {
    SessionResult {
        session_id: g.session.id.to_string(),
        project: g.session.project.as_str().to_owned(),
        source_agent: g.session.source_agent.clone(),
        created_at: g.session.created_at.to_string(),
        parent_session_id: g
            .session
            .parent_session_id
            .as_ref()
            .map(ToString::to_string),
        score: g.score,
        matches: g
            .hits
            .into_iter()
            .map(|h| {
                let summary = (h.role == "user").then(|| {
                    let ps = parts
                        .remove(&(h.session_id.clone(), h.message_id.clone()))
                        .unwrap_or_default();
                    pond_store::get::summary_of(ps.iter().map(|p| p.as_part_ref())).into()
                });
                message_match(h, words, summary)
            })
            .collect(),
    }
}

fn message_match(
    h: MessageHit,
    words: &[Vec<char>],
    parts_summary: Option<PartsSummary>,
) -> MessageMatch {
    let chars: Vec<char> = h.text.chars().collect();
    let found = find_matches(&chars, words);
    let complete = h.text_chars as usize <= FULL_TEXT_CHARS && chars.len() as u64 == h.text_chars;
    let (text, highlights, snippet) = if complete {
        (h.text, found, None)
    } else {
        let prefix: String = chars.iter().take(PREFIX_CHARS).collect();
        let in_prefix = found
            .iter()
            .filter(|m| m[1] as usize <= PREFIX_CHARS)
            .copied()
            .collect();
        // The window: centred on the first match, else the text's start.
        let first = found.first().map_or(0, |m| m[0] as usize);
        let start = first
            .saturating_sub(SNIPPET_CHARS / 3)
            .min(chars.len().saturating_sub(SNIPPET_CHARS));
        let end = (start + SNIPPET_CHARS).min(chars.len());
        let snippet = Snippet {
            start: start as u64,
            text: chars[start..end].iter().collect(),
            highlights: found
                .iter()
                .filter(|m| m[0] as usize >= start && m[1] as usize <= end)
                .map(|m| [m[0] - start as u64, m[1] - start as u64])
                .collect(),
        };
        (prefix, in_prefix, Some(snippet))
    };
    MessageMatch {
        message_id: h.message_id,
        session_id: h.session_id,
        role: h.role,
        timestamp: h.timestamp,
        score: h.score,
        text,
        text_complete: complete,
        text_chars: h.text_chars,
        highlights,
        snippet,
        parts_summary,
    }
}

/// What to mark in a hit's text: the query's words (letters, digits, `_`; 3 characters or
/// more), lower-cased; the whole query when it has none.
fn highlight_words(query: &str) -> Vec<Vec<char>> {
    let mut words: Vec<Vec<char>> = query
        .split(|c: char| !pond_store::search::query::is_word_char(c))
        .filter(|w| w.chars().count() >= 3)
        .map(|w| lower(w))
        .collect();
    if words.is_empty() {
        words.push(lower(query));
    }
    words.sort();
    words.dedup();
    words
}

fn lower(s: &str) -> Vec<char> {
    s.chars()
        .map(|c| c.to_lowercase().next().unwrap_or(c))
        .collect()
}

/// Non-overlapping case-insensitive occurrences of any of `words` in `text`, in order.
fn find_matches(text: &[char], words: &[Vec<char>]) -> Vec<[u64; 2]> {
    let lowered: Vec<char> = text
        .iter()
        .map(|c| c.to_lowercase().next().unwrap_or(*c))
        .collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lowered.len() {
        let hit = words
            .iter()
            .filter(|w| !w.is_empty() && lowered[i..].starts_with(w))
            .map(Vec::len)
            .max();
        match hit {
            Some(len) => {
                out.push([i as u64, (i + len) as u64]);
                i += len;
            }
            None => i += 1,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    fn check(r: SearchRequest) -> Result<Checked, PondError> {
        Checked::new(&r)
    }

    fn field_of(e: PondError) -> String {
        assert_eq!(e.code, ErrorCode::ValidationFailed, "{e}");
        e.details["field"].as_str().unwrap().to_owned()
    }

    #[test]
    fn bad_queries_are_refused_with_the_reason() {
        for q in ["", "   ", "?!.,;", "ab", &"x".repeat(1 << 20)] {
            let e = check(SearchRequest::new(q)).err().expect(q);
            assert_eq!(field_of(e.clone()), "query");
            assert!(e.message.len() < 300, "{}", e.message);
        }
        assert!(check(SearchRequest::new("数据库")).is_ok());
        assert!(check(SearchRequest::new("  a_b  ")).is_ok());
    }

    #[test]
    fn filters_are_checked_and_named() {
        let mut r = SearchRequest::new("query");
        r.limit = Some(0);
        assert_eq!(field_of(check(r.clone()).err().unwrap()), "limit");
        r.limit = Some(101);
        assert_eq!(field_of(check(r.clone()).err().unwrap()), "limit");
        r.limit = None;
        r.source_agent = Some("emacs".into());
        let e = check(r.clone()).err().unwrap();
        assert!(e.message.contains("claude-code"), "{}", e.message);
        r.source_agent = Some("claude".into());
        assert_eq!(
            check(r.clone()).unwrap().filters.source_agent.as_deref(),
            Some("claude-code")
        );
        r.since = Some("last tuesday".into());
        assert_eq!(field_of(check(r.clone()).err().unwrap()), "since");
        r.since = Some("2026-03-01".into());
        r.until = Some("2026-03-01".into());
        let c = check(r.clone()).unwrap();
        // A date `until` runs to the end of that day.
        assert_eq!(
            c.filters.until_micros.unwrap() - c.filters.since_micros.unwrap(),
            86_400_000_000
        );
        r.until = Some("2026-02-01T00:00:00Z".into());
        assert_eq!(field_of(check(r.clone()).err().unwrap()), "until");
        r.until = None;
        r.min_score = Some(f32::NAN);
        assert_eq!(field_of(check(r.clone()).err().unwrap()), "min_score");
        r.min_score = None;
        r.project = Some(String::new());
        assert_eq!(field_of(check(r).err().unwrap()), "project");
    }

    #[test]
    fn matches_are_marked_case_insensitively_in_characters() {
        let words = highlight_words("Parse 数据库 go");
        let text: Vec<char> = "we PARSE the 数据库 and parse".chars().collect();
        assert_eq!(
            find_matches(&text, &words),
            vec![[3, 8], [13, 16], [21, 26]]
        );
    }

    #[test]
    fn a_long_text_gets_a_prefix_and_a_snippet_around_the_match() {
        let long = format!("{} needle {}", "a".repeat(2000), "b".repeat(2000));
        let hit = MessageHit {
            session_id: "s".into(),
            message_id: "m".into(),
            role: "assistant".into(),
            timestamp: "2026-01-01T00:00:00Z".into(),
            score: 1.0,
            recall_score: 1.0,
            text_chars: long.chars().count() as u64,
            text: long,
        };
        let m = message_match(hit, &highlight_words("needle"), None);
        assert!(!m.text_complete);
        assert_eq!(m.text.chars().count(), PREFIX_CHARS);
        assert!(m.highlights.is_empty());
        let s = m.snippet.unwrap();
        assert_eq!(s.highlights.len(), 1);
        let [a, b] = s.highlights[0];
        let marked: String = s
            .text
            .chars()
            .skip(a as usize)
            .take((b - a) as usize)
            .collect();
        assert_eq!(marked, "needle");
        assert_eq!(s.start + a, 2001);
    }
}
