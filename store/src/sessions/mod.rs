//! The sessions consumer (spec section 5): the canonical model persisted on the substrate as
//! `sessions`, `messages` and `parts`, and the operations pond runs on them.

pub mod jsonb;
pub mod rows;
pub mod schema;
pub mod search_text;

use crate::substrate::{IndexAction, IndexStatus, Location, MergeOutcome, StoreError, Substrate};
use pond_canonical::{Message, Session, SessionLog};
use rows::RowBuffer;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The session datasets of one pond.
pub struct SessionStore {
    substrate: Substrate,
    vector: VectorSettings,
    /// Messages embedded under a model, at a version of `messages`: whether a search is hybrid
    /// (spec 8) is asked on every search, and answered by a count only when the table changed.
    embedded: std::sync::Mutex<Option<(String, u64, u64)>>,
    /// Sessions read by id ([`Self::sessions_by_id`]): every search reads the sessions of its
    /// candidates to group them by root.
    sessions: std::sync::Mutex<SessionMemo>,
}

/// The sessions read by id at one version of `sessions`, and the ids found in none. A version's
/// rows never change, so what was read at the version a read names is what another read at
/// it would find; a read at another version starts the memo over. It holds at most
/// [`SessionMemo::ROWS`] ids, then starts over. One per store handle, so one per namespace a
/// server has opened (`Pond::namespace` keeps each handle for the server's life).
#[derive(Debug, Default)]
pub(crate) struct SessionMemo {
    version: Option<u64>,
    by_id: std::collections::HashMap<String, Option<Arc<Session>>>,
}

impl SessionMemo {
    /// Ids held at most (a session row is a few hundred bytes to a few KiB).
    const ROWS: usize = 100_000;

    /// What a read of `id` at `version` found: `Some(None)` when it found no such session,
    /// `None` when no read at `version` asked for it.
    pub(crate) fn get(&self, version: u64, id: &str) -> Option<Option<&Arc<Session>>> {
        if self.version != Some(version) {
            return None;
        }
        self.by_id.get(id).map(Option::as_ref)
    }

    /// Remembers what a read at `version` found for `asked`: the sessions in `found`, and no
    /// session for the other ids.
    pub(crate) fn remember<'a>(
        &mut self,
        version: u64,
        asked: impl IntoIterator<Item = &'a String>,
        found: &BTreeMap<String, Arc<Session>>,
    ) {
        if self.version != Some(version) {
            self.by_id.clear();
            self.version = Some(version);
        }
        for id in asked {
            if self.by_id.len() >= Self::ROWS {
                self.by_id.clear();
            }
            self.by_id.insert(id.clone(), found.get(id).cloned());
        }
    }
}

/// How the vector arm searches and when its index is trained (`[search]` in config.toml).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VectorSettings {
    /// IVF partitions probed per query.
    pub nprobes: usize,
    /// IVF_PQ candidates re-ranked by exact distance, as a multiple of those asked for.
    pub refine_factor: u32,
    /// Non-null vectors at which the IVF_PQ is trained ([`schema::VECTOR_INDEX_THRESHOLD`]).
    pub index_threshold: u64,
    /// Search as if no vector index existed: every admitted vector compared (not a config.toml
    /// key; the benchmarks measure the IVF_PQ's recall against it).
    pub exact: bool,
}

impl Default for VectorSettings {
    fn default() -> Self {
        Self {
            nprobes: 20,
            refine_factor: 4,
            index_threshold: schema::VECTOR_INDEX_THRESHOLD,
            exact: false,
        }
    }
}

/// Rows a write inserted and found already present, per table (also `pond_ingest`'s `rows`).
#[derive(
    Debug, Default, Clone, Copy, Serialize, serde::Deserialize, schemars::JsonSchema, PartialEq, Eq,
)]
pub struct Written {
    pub sessions_inserted: u64,
    pub sessions_present: u64,
    pub messages_inserted: u64,
    pub messages_present: u64,
    pub parts_inserted: u64,
    pub parts_present: u64,
}

impl Written {
    pub(crate) fn add(&mut self, table: &str, o: MergeOutcome) {
        let (ins, pre) = match table {
            "sessions" => (&mut self.sessions_inserted, &mut self.sessions_present),
            "messages" => (&mut self.messages_inserted, &mut self.messages_present),
            _ => (&mut self.parts_inserted, &mut self.parts_present),
        };
        *ins += o.inserted;
        *pre += o.present;
    }

    /// Adds another tally to this one.
    pub fn merge(&mut self, o: Written) {
        self.sessions_inserted += o.sessions_inserted;
        self.sessions_present += o.sessions_present;
        self.messages_inserted += o.messages_inserted;
        self.messages_present += o.messages_present;
        self.parts_inserted += o.parts_inserted;
        self.parts_present += o.parts_present;
    }
}

/// A stored session, as `pond sessions` lists it.
#[derive(Debug, Clone, Serialize)]
pub struct SessionSummary {
    pub id: String,
    pub source_agent: String,
    pub project: String,
    pub created_at: String,
    pub parent_session_id: Option<String>,
    pub messages: u64,
}

/// Row counts and versions, as `pond status` shows them.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct TableStatus {
    pub table: &'static str,
    pub rows: u64,
    pub version: Option<u64>,
}

/// What the update-indexes stage did to one index.
#[derive(Debug, Clone, Serialize)]
pub struct IndexUpdate {
    pub table: &'static str,
    pub index: &'static str,
    pub action: IndexAction,
    pub seconds: f64,
}

/// `s` as a SQL string literal.
/// The fewest characters of a session id that name a session by its start
/// ([`SessionStore::resolve_session_id`]).
pub const MIN_ID_PREFIX: usize = 4;

/// How many ids beginning with a given prefix an error names.
pub const ID_CANDIDATES: usize = 5;

/// The stored ids that begin with an id no session has: none, several, or one too short a
/// start to be taken for it ([`SessionStore::resolve_session_id`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IdCandidates {
    /// The first [`ID_CANDIDATES`] of them, sorted.
    pub ids: Vec<String>,
    /// How many there are.
    pub total: usize,
}

impl IdCandidates {
    /// The message of an error about `given`, which names no stored session.
    pub fn message(&self, given: &str) -> String {
        let mut s = format!("no stored session {given}");
        if self.total == 0 {
            return s;
        }
        let ids = self.ids.join(", ");
        match self.total {
            1 => s.push_str(&format!("; one id begins with it: {ids}")),
            n => s.push_str(&format!("; {n} ids begin with it: {ids}")),
        }
        if self.total > self.ids.len() {
            s.push_str(&format!(" and {} more", self.total - self.ids.len()));
        }
        if given.chars().count() < MIN_ID_PREFIX {
            s.push_str(&format!(
                "; a session is named by its id or at least {MIN_ID_PREFIX} characters of its start"
            ));
        } else {
            s.push_str("; give more of the id");
        }
        s
    }
}

pub(crate) fn sql_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

impl SessionStore {
    /// The session datasets under `uri` (a local directory: no storage options).
    pub fn open(uri: &str) -> Self {
        Self::at(Location::local(uri))
    }

    /// The session datasets at `location`, reached with its storage options.
    pub fn at(location: Location) -> Self {
        Self::on(Substrate::open(
            location,
            crate::substrate::lance_session(),
            Default::default(),
        ))
    }

    /// The session datasets on `substrate` (a namespace's, from the catalog).
    pub fn on(substrate: Substrate) -> Self {
        Self {
            substrate,
            vector: VectorSettings::default(),
            embedded: std::sync::Mutex::new(None),
            sessions: std::sync::Mutex::new(SessionMemo::default()),
        }
    }

    /// The same store, searching vectors and training their index with `settings`.
    pub fn with_vector_settings(mut self, settings: VectorSettings) -> Self {
        self.vector = settings;
        self
    }

    /// How the vector arm searches.
    pub fn vector_settings(&self) -> VectorSettings {
        self.vector
    }

    /// Messages whose vector was made by `model`. Counted once per version of `messages`.
    pub async fn embedded_under(&self, model: &str) -> Result<u64, StoreError> {
        let Some(version) = self.substrate.version(&schema::MESSAGES).await? else {
            return Ok(0);
        };
        if let Some((m, v, n)) = &*self.embedded.lock().expect("not poisoned")
            && m == model
            && *v == version
        {
            return Ok(*n);
        }
        let filter = format!("embedding_model = {}", sql_quote(model));
        let n = self
            .substrate
            .count(&schema::MESSAGES, Some(&filter))
            .await?;
        *self.embedded.lock().expect("not poisoned") = Some((model.to_owned(), version, n));
        Ok(n)
    }

    /// Messages with a vector, per model that made it. Read from the column itself, not
    /// through the bitmap on `embedding_model`: this count decides whether the vector index is
    /// trained, and a bitmap folded over patched fragments (by a pond before the bitmap was
    /// rebuilt instead, `IndexKind::BitmapRebuilt`) answered `IS NOT NULL` with no row.
    pub async fn embedding_models(&self) -> Result<BTreeMap<String, u64>, StoreError> {
        self.substrate
            .scan_fold(
                &schema::MESSAGES,
                |s| {
                    s.use_scalar_index(false);
                    s.filter("embedding_model IS NOT NULL")?;
                    s.project(&["embedding_model"])?;
                    Ok(())
                },
                BTreeMap::new,
                |counts: &mut BTreeMap<String, u64>, b| {
                    let models = b.column(0);
                    for i in 0..b.num_rows() {
                        if let Some(m) = rows::string_at(models.as_ref(), i) {
                            *counts.entry(m).or_insert(0) += 1;
                        }
                    }
                },
            )
            .await
    }

    /// The substrate underneath (status, maintenance).
    pub fn substrate(&self) -> &Substrate {
        &self.substrate
    }

    /// The sessions remembered by [`Self::sessions_by_id`].
    pub(crate) fn session_memo(&self) -> std::sync::MutexGuard<'_, SessionMemo> {
        self.sessions.lock().expect("not poisoned")
    }

    /// Writes buffered rows to the three tables, each through the substrate's merge-insert
    /// (lance-chokepoints-write). Present rows are left alone. The three merges run
    /// concurrently: they touch different datasets, and no batch is atomic across tables anyway
    /// (lance-forward-compat-no-cross-shard-atomic-write); a re-run after a failure inserts
    /// exactly what is missing, since every row is keyed (lance-deterministic-pk).
    pub async fn write(&self, buffer: &mut RowBuffer) -> Result<Written, StoreError> {
        let [s, m, p] = buffer.take_batches();
        let merges = [
            (&*schema::SESSIONS, s),
            (&*schema::MESSAGES, m),
            (&*schema::PARTS, p),
        ]
        .into_iter()
        .filter_map(|(spec, batch)| batch.map(|b| (spec, b)))
        .map(|(spec, batch)| async move {
            let outcome = self.substrate.merge_insert(spec, vec![batch]).await;
            outcome.map(|o| (spec.name, o))
        });
        let mut written = Written::default();
        for (table, outcome) in futures::future::try_join_all(merges).await? {
            written.add(table, outcome);
        }
        Ok(written)
    }

    /// Writes whole sessions (as `pond_ingest` receives them): each session row and its
    /// messages, the `i`th message of a log with `seqs[i]` as its position in the source's event
    /// stream. Rows already present are left alone (adapter-integrity-additive-sync).
    pub async fn write_logs(&self, logs: &[(SessionLog, Vec<i64>)]) -> Result<Written, StoreError> {
        let ingested_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros() as i64)
            .unwrap_or(0);
        let mut buffer = RowBuffer::default();
        for (log, seqs) in logs {
            buffer.push_session(&log.session, ingested_at);
            for (m, seq) in log.messages.iter().zip(seqs) {
                buffer.push_message(&log.session, *seq, m);
            }
        }
        self.write(&mut buffer).await
    }

    /// The update-indexes stage: builds or folds every declared index (lance-index-maintenance).
    pub async fn update_indexes(&self) -> Result<Vec<IndexUpdate>, StoreError> {
        let mut out = Vec::new();
        for (spec, index) in schema::indexes() {
            let started = std::time::Instant::now();
            let action = self.substrate.update_index(spec, &index).await?;
            out.push(IndexUpdate {
                table: spec.name,
                index: index.name,
                action,
                seconds: started.elapsed().as_secs_f64(),
            });
        }
        out.extend(self.update_vector_index().await?);
        Ok(out)
    }

    /// The vector index (spec 8, "Index lifecycle"), maintained once any message has a vector:
    /// trained at [`VectorSettings::index_threshold`] vectors, folded after, never over vectors of
    /// two models; the model it was trained on is recorded beside it.
    async fn update_vector_index(&self) -> Result<Option<IndexUpdate>, StoreError> {
        let started = std::time::Instant::now();
        let models = self.embedding_models().await?;
        let mut index = schema::VECTOR_INDEX;
        index.kind = crate::substrate::IndexKind::IvfPq {
            min_rows: self.vector.index_threshold,
        };
        let action = match models.keys().collect::<Vec<_>>()[..] {
            [] => return Ok(None),
            [model] => {
                let recorded = self
                    .substrate
                    .config_value(&schema::MESSAGES, schema::VECTOR_INDEX_MODEL_KEY)
                    .await?;
                if recorded.as_deref().is_some_and(|r| r != model) {
                    self.substrate
                        .drop_index(
                            &schema::MESSAGES,
                            index.name,
                            &[schema::VECTOR_INDEX_MODEL_KEY],
                        )
                        .await?;
                }
                let action = self
                    .substrate
                    .update_index(&schema::MESSAGES, &index)
                    .await?;
                if action == IndexAction::Created {
                    self.substrate
                        .set_config(&schema::MESSAGES, schema::VECTOR_INDEX_MODEL_KEY, model)
                        .await?;
                }
                action
            }
            _ => IndexAction::MixedModels,
        };
        Ok(Some(IndexUpdate {
            table: schema::MESSAGES.name,
            index: index.name,
            action,
            seconds: started.elapsed().as_secs_f64(),
        }))
    }

    /// The health of every declared index (tables never written are left out).
    pub async fn index_status(&self) -> Result<Vec<IndexStatus>, StoreError> {
        let mut out = Vec::new();
        for (spec, index) in schema::indexes() {
            out.extend(self.substrate.index_status(spec, &index).await?);
        }
        // The vector index, once it exists.
        out.extend(
            self.substrate
                .index_status(&schema::MESSAGES, &schema::VECTOR_INDEX)
                .await?
                .filter(|s| s.exists),
        );
        Ok(out)
    }

    /// Row count and version per table.
    pub async fn table_status(&self) -> Result<Vec<TableStatus>, StoreError> {
        let mut out = Vec::new();
        for spec in schema::all() {
            let (rows, version) = self.substrate.stats(spec).await?;
            out.push(TableStatus {
                table: spec.name,
                rows,
                version,
            });
        }
        Ok(out)
    }

    /// Per table: rows and distinct primary keys (equal in a healthy store: the write path's dedup
    /// floor holds, adapter-integrity-dedup).
    pub async fn key_check(&self) -> Result<Vec<(&'static str, u64, u64)>, StoreError> {
        let mut out = Vec::new();
        for spec in schema::all() {
            let keys: Vec<String> = spec
                .schema
                .fields()
                .iter()
                .filter(|f| f.metadata().contains_key(crate::substrate::PK_KEY))
                .map(|f| f.name().clone())
                .collect();
            let cols: Vec<&str> = keys.iter().map(String::as_str).collect();
            let batches = self
                .substrate
                .scan(spec, |s| {
                    s.project(&cols)?;
                    Ok(())
                })
                .await?;
            let mut seen = std::collections::HashSet::new();
            let mut rows = 0u64;
            for b in &batches {
                for i in 0..b.num_rows() {
                    rows += 1;
                    let key: Vec<Option<String>> = cols
                        .iter()
                        .map(|c| {
                            b.column_by_name(c)
                                .and_then(|a| rows::string_at(a.as_ref(), i))
                        })
                        .collect();
                    seen.insert(key);
                }
            }
            out.push((spec.name, rows, seen.len() as u64));
        }
        Ok(out)
    }

    /// Message counts per source agent, and how many messages have an embedding.
    pub async fn message_breakdown(&self) -> Result<(BTreeMap<String, u64>, u64), StoreError> {
        let batches = self
            .substrate
            .scan(&schema::MESSAGES, |s| {
                s.project(&["source_agent", "embedding_model"])?;
                Ok(())
            })
            .await?;
        let mut per_agent = BTreeMap::new();
        let mut embedded = 0;
        for b in &batches {
            let agents = b.column_by_name("source_agent").cloned();
            let models = b.column_by_name("embedding_model").cloned();
            for i in 0..b.num_rows() {
                let agent = agents
                    .as_ref()
                    .and_then(|a| rows::string_at(a.as_ref(), i))
                    .unwrap_or_default();
                *per_agent.entry(agent).or_insert(0) += 1;
                if models
                    .as_ref()
                    .is_some_and(|m| !arrow_array::Array::is_null(m.as_ref(), i))
                {
                    embedded += 1;
                }
            }
        }
        Ok((per_agent, embedded))
    }

    /// Stored sessions matching the filters (equality on source agent, prefix on project,
    /// created at or after `since_micros`), pushed down to the scan.
    pub async fn list(
        &self,
        source_agent: Option<&str>,
        project_prefix: Option<&str>,
        since_micros: Option<i64>,
    ) -> Result<Vec<SessionSummary>, StoreError> {
        let mut filters = Vec::new();
        if let Some(a) = source_agent {
            filters.push(format!("source_agent = {}", sql_quote(a)));
        }
        if let Some(p) = project_prefix {
            filters.push(format!("starts_with(project, {})", sql_quote(p)));
        }
        if let Some(t) = since_micros {
            filters.push(format!(
                "created_at >= arrow_cast({t}, 'Timestamp(Microsecond, Some(\"UTC\"))')"
            ));
        }
        let filter = filters.join(" AND ");
        let batches = self
            .substrate
            .scan(&schema::SESSIONS, |s| {
                if !filter.is_empty() {
                    s.filter(&filter)?;
                }
                Ok(())
            })
            .await?;
        let counts = self.message_counts().await?;
        let mut out = Vec::new();
        for b in &batches {
            for s in rows::sessions_from(b).map_err(|detail| StoreError::Invalid {
                table: "sessions",
                detail,
            })? {
                out.push(SessionSummary {
                    messages: counts.get(s.id.as_str()).copied().unwrap_or(0),
                    id: s.id.to_string(),
                    source_agent: s.source_agent.clone(),
                    project: s.project.as_str().to_owned(),
                    created_at: s.created_at.to_string(),
                    parent_session_id: s.parent_session_id.as_ref().map(ToString::to_string),
                });
            }
        }
        out.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(out)
    }

    async fn message_counts(&self) -> Result<BTreeMap<String, u64>, StoreError> {
        let batches = self
            .substrate
            .scan(&schema::MESSAGES, |s| {
                s.project(&["session_id"])?;
                Ok(())
            })
            .await?;
        let mut counts = BTreeMap::new();
        for b in &batches {
            if let Some(col) = b.column_by_name("session_id") {
                for i in 0..b.num_rows() {
                    if let Some(id) = rows::string_at(col.as_ref(), i) {
                        *counts.entry(id).or_insert(0) += 1;
                    }
                }
            }
        }
        Ok(counts)
    }

    /// The stored sessions whose id is `id` or that name it as their parent.
    pub async fn session_and_children(&self, id: &str) -> Result<Vec<Session>, StoreError> {
        let q = sql_quote(id);
        let batches = self
            .substrate
            .scan(&schema::SESSIONS, |s| {
                s.filter(&format!("id = {q} OR parent_session_id = {q}"))?;
                Ok(())
            })
            .await?;
        let mut out = Vec::new();
        for b in &batches {
            out.extend(
                rows::sessions_from(b).map_err(|detail| StoreError::Invalid {
                    table: "sessions",
                    detail,
                })?,
            );
        }
        Ok(out)
    }

    /// The stored session a person's `given` id names: the session with exactly that id, else
    /// the one session whose id begins with it when `given` has at least [`MIN_ID_PREFIX`]
    /// characters (ids are long; a person copies the start of one, as with git's commits). The
    /// ids of that session's children, which begin with its whole id, do not make it ambiguous.
    /// Otherwise `Err` with the ids that begin with `given`, for the error to name.
    pub async fn resolve_session_id(
        &self,
        given: &str,
    ) -> Result<Result<String, IdCandidates>, StoreError> {
        let q = sql_quote(given);
        if self.any_session(&format!("id = {q}")).await? {
            return Ok(Ok(given.to_owned()));
        }
        if given.is_empty() {
            return Ok(Err(IdCandidates::default()));
        }
        let batches = self
            .substrate
            .scan(&schema::SESSIONS, |s| {
                s.filter(&format!("starts_with(id, {q})"))?;
                s.project(&["id"])?;
                Ok(())
            })
            .await?;
        let mut ids = Vec::new();
        for b in &batches {
            if let Some(col) = b.column_by_name("id") {
                ids.extend((0..b.num_rows()).filter_map(|i| rows::string_at(col.as_ref(), i)));
            }
        }
        ids.sort();
        ids.dedup();
        // A session's children are named under its id (`<id>/agent-...`): a start of the
        // parent's id that they share names the parent, as one that only it has would.
        let one = ids
            .first()
            .is_some_and(|first| ids.iter().all(|i| i.starts_with(first.as_str())));
        if one && given.chars().count() >= MIN_ID_PREFIX {
            return Ok(Ok(ids.remove(0)));
        }
        let total = ids.len();
        ids.truncate(ID_CANDIDATES);
        Ok(Err(IdCandidates { ids, total }))
    }

    /// Whether any stored session names `id` as its parent (for the depth-one check).
    pub async fn has_children(&self, id: &str) -> Result<bool, StoreError> {
        self.any_session(&format!("parent_session_id = {}", sql_quote(id)))
            .await
    }

    /// Whether any stored session matches `filter` (one id read at most).
    async fn any_session(&self, filter: &str) -> Result<bool, StoreError> {
        let batches = self
            .substrate
            .scan(&schema::SESSIONS, |s| {
                s.filter(filter)?;
                s.project(&["id"])?;
                s.limit(Some(1), None)?;
                Ok(())
            })
            .await?;
        Ok(batches.iter().any(|b| b.num_rows() > 0))
    }

    /// One stored session with its messages in log order and their parts in ordinal order.
    pub async fn load(&self, session: Session) -> Result<SessionLog, StoreError> {
        let messages = self.load_messages(session.id.as_str()).await?;
        Ok(SessionLog::new(
            session,
            messages.into_iter().map(|(_, m)| m).collect(),
        ))
    }

    /// A session's messages with their `seq` (the position in the source unit's event stream,
    /// shared by every session read from that unit), in that order.
    pub async fn load_messages(&self, session_id: &str) -> Result<Vec<(i64, Message)>, StoreError> {
        let session_id = session_id.to_owned();
        let q = sql_quote(&session_id);
        let invalid =
            |table: &'static str| move |detail: String| StoreError::Invalid { table, detail };
        let mut messages = Vec::new();
        for b in &self
            .substrate
            .scan(&schema::MESSAGES, |s| {
                s.filter(&format!("session_id = {q}"))?;
                Ok(())
            })
            .await?
        {
            messages.extend(rows::message_rows(b).map_err(invalid("messages"))?);
        }
        let mut parts: BTreeMap<String, Vec<rows::PartRow>> = BTreeMap::new();
        for b in &self
            .substrate
            .scan(&schema::PARTS, |s| {
                s.filter(&format!("session_id = {q}"))?;
                s.blob_handling(lance::datatypes::BlobHandling::AllBinary);
                Ok(())
            })
            .await?
        {
            for p in rows::part_rows(b).map_err(invalid("parts"))? {
                parts.entry(p.message_id.clone()).or_default().push(p);
            }
        }
        messages.sort_by_key(|m| (m.seq, m.timestamp_micros));
        let mut out = Vec::with_capacity(messages.len());
        for mut m in messages {
            let seq = m.seq;
            if let Some(mut ps) = parts.remove(&m.id) {
                ps.sort_by_key(|p| p.ordinal);
                if m.json.get("role").and_then(Value::as_str) != Some("system") {
                    m.json.insert(
                        "content".into(),
                        Value::Array(ps.into_iter().map(|p| Value::Object(p.json)).collect()),
                    );
                }
            }
            let message: Message =
                serde_json::from_value(Value::Object(m.json)).map_err(|e| StoreError::Invalid {
                    table: "messages",
                    detail: format!("stored message {}/{}: {e}", m.session_id, m.id),
                })?;
            out.push((seq, message));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(id: &str) -> Session {
        serde_json::from_value(serde_json::json!({
            "id": id, "source_agent": "claude-code", "created_at": "2026-01-01T00:00:00Z",
            "project": "/p", "options": {}
        }))
        .unwrap()
    }

    #[test]
    fn the_session_memo_answers_for_its_version_only_and_starts_over_when_full() {
        let mut memo = SessionMemo::default();
        let asked = ["s1".to_owned(), "gone".to_owned()];
        let found = BTreeMap::from([("s1".to_owned(), Arc::new(session("s1")))]);
        memo.remember(7, &asked, &found);
        assert_eq!(memo.get(7, "s1").unwrap().unwrap().id.to_string(), "s1");
        assert_eq!(memo.get(7, "gone"), Some(None), "found in no row at 7");
        assert_eq!(memo.get(7, "never asked"), None);
        assert_eq!(memo.get(8, "s1"), None, "another version is read again");
        // A read at another version starts over.
        memo.remember(8, &["s2".to_owned()], &BTreeMap::new());
        assert_eq!(memo.get(8, "s1"), None);
        assert_eq!(memo.get(8, "s2"), Some(None));
        // Full, it starts over before remembering more.
        let many: Vec<String> = (0..SessionMemo::ROWS).map(|i| format!("x{i}")).collect();
        memo.remember(9, &many, &BTreeMap::new());
        assert_eq!(memo.by_id.len(), SessionMemo::ROWS);
        memo.remember(9, &["last".to_owned()], &BTreeMap::new());
        assert_eq!(memo.by_id.len(), 1);
        assert_eq!(memo.get(9, "last"), Some(None));
        assert_eq!(memo.get(9, "x0"), None);
    }
}
