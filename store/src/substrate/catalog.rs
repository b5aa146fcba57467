//! The catalog of namespaces under one root (lance-chokepoints-catalog, spec 3.2 and 9 "Hosted
//! multi-tenant"): which namespaces are provisioned, and where each one's tables live.
//!
//! Layout under a root URI (a directory or `s3://bucket/prefix`):
//! - `<root>/<table>.lance`: the tables of the default namespace, the personal pond's one;
//! - `<root>/ns/<name>/<table>.lance`: the tables of namespace `name`;
//! - `<root>/_namespaces.lance`: the provisioned names, one row each, written through the
//!   substrate's merge-insert like any table.
//!
//! Every namespace's objects are under prefixes no other namespace's are under (`ns/` is not a
//! table), so an object store's prefix policy can confine one tenant, and a namespace's tables
//! are reached only through the [`Substrate`] this catalog roots at them: no read or write crosses
//! namespaces. Names are restricted when provisioned (lower-case letters, digits, `.`, `_`, `-`)
//! so that a name is a path segment on every backend, case-insensitive file systems included.

use super::{Location, PK_KEY, PK_POSITION_KEY, RetryPolicy, StoreError, Substrate, TableSpec};
use arrow_array::{Array, RecordBatch, StringArray, TimestampMicrosecondArray};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use lance::session::Session;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, LazyLock};
use std::time::Instant;
use tokio::sync::Mutex;

/// The namespace an omitted wire `namespace` selects, whose tables are the root's own.
pub const DEFAULT_NAMESPACE: &str = "default";

/// The longest namespace name.
const MAX_NAME: usize = 128;

/// The folder under a root that holds the provisioned namespaces.
const NAMESPACES_DIR: &str = "ns";

/// `_namespaces`: one row per provisioned namespace.
static NAMESPACES: LazyLock<TableSpec> = LazyLock::new(|| TableSpec {
    name: "_namespaces",
    schema: Arc::new(Schema::new(vec![
        Field::new("name", DataType::Utf8, false).with_metadata(HashMap::from([
            (PK_KEY.to_owned(), "true".to_owned()),
            (PK_POSITION_KEY.to_owned(), "1".to_owned()),
        ])),
        Field::new(
            "created_at",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            false,
        ),
    ])),
    schema_version: 1,
});

/// A provisioned namespace, as `pond namespace list` shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NamespaceInfo {
    /// Its name.
    pub name: String,
    /// Where its tables live (no secret: the URI only).
    pub uri: String,
    /// When it was provisioned (RFC 3339, UTC), absent for the default namespace.
    pub created_at: Option<String>,
}

/// Why a namespace cannot be provisioned.
#[derive(Debug)]
pub enum NamespaceError {
    /// The name is not one a namespace can have.
    Name { name: String, reason: String },
    /// The catalog could not be read or written.
    Store(StoreError),
}

impl fmt::Display for NamespaceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Name { name, reason } => write!(
                f,
                "namespace name {}: {reason}",
                pond_canonical::escape_controls(&format!("{name:?}"))
            ),
            Self::Store(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for NamespaceError {}

impl From<StoreError> for NamespaceError {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

/// Why `name` cannot name a provisioned namespace, if it cannot.
pub fn name_fault(name: &str) -> Option<String> {
    if name == DEFAULT_NAMESPACE {
        return Some(format!(
            "{DEFAULT_NAMESPACE:?} is the root's own namespace and always exists"
        ));
    }
    if name.is_empty() || name.len() > MAX_NAME {
        return Some(format!("a name is 1 to {MAX_NAME} characters"));
    }
    let first_ok = name
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    let all_ok = name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b));
    if !first_ok || !all_ok {
        return Some(
            "a name is lower-case letters, digits, '.', '_' and '-', and starts with a letter or digit"
                .to_owned(),
        );
    }
    None
}

/// What the catalog last read of `_namespaces`.
#[derive(Default)]
struct Known {
    names: BTreeMap<String, i64>,
    version: Option<u64>,
    checked: Option<Instant>,
}

/// The namespaces under one root, and the substrate of each. Every substrate it makes shares one
/// Lance session, so all namespaces of a process share one cache and one object-store client.
pub struct Catalog {
    root: Location,
    session: Arc<Session>,
    retry: RetryPolicy,
    /// The root's substrate, where `_namespaces` lives.
    registry: Substrate,
    known: Mutex<Known>,
}

impl Catalog {
    /// The catalog under `root`, with a Lance session of its own.
    pub fn open(root: Location) -> Self {
        let session = super::lance_session();
        let retry = RetryPolicy::default();
        Self {
            registry: Substrate::open(root.clone(), session.clone(), retry),
            root,
            session,
            retry,
            known: Mutex::new(Known::default()),
        }
    }

    /// The root.
    pub fn root(&self) -> &Location {
        &self.root
    }

    /// lance-chokepoints-catalog: where namespace `name`'s tables live. The default namespace's
    /// are the root's own. Only for names [`name_fault`] accepts.
    fn namespace_location(&self, name: &str) -> Location {
        if name == DEFAULT_NAMESPACE {
            self.root.clone()
        } else {
            self.root.join(&[NAMESPACES_DIR, name])
        }
    }

    /// The substrate of namespace `name`, sharing this catalog's Lance session, or `None` when
    /// `name` is not provisioned here.
    pub async fn substrate(&self, name: &str) -> Result<Option<Substrate>, StoreError> {
        if !self.exists(name).await? {
            return Ok(None);
        }
        Ok(Some(Substrate::open(
            self.namespace_location(name),
            self.session.clone(),
            self.retry,
        )))
    }

    /// Whether namespace `name` exists: the default always does; another once provisioned. The
    /// catalog is read at most once per the backend's staleness window (lance-handle-freshness),
    /// so a namespace provisioned by another process is seen within that window.
    pub async fn exists(&self, name: &str) -> Result<bool, StoreError> {
        if name == DEFAULT_NAMESPACE {
            return Ok(true);
        }
        if name_fault(name).is_some() {
            return Ok(false);
        }
        let mut known = self.known.lock().await;
        if known.names.contains_key(name) {
            return Ok(true);
        }
        self.refresh(&mut known).await?;
        Ok(known.names.contains_key(name))
    }

    /// Re-reads `_namespaces` if the staleness window has passed and its version moved.
    async fn refresh(&self, known: &mut Known) -> Result<(), StoreError> {
        let window = self.root.backend().staleness_window();
        if known.checked.is_some_and(|t| t.elapsed() < window) {
            return Ok(());
        }
        let version = self
            .registry
            .dataset(&NAMESPACES)
            .await?
            .map(|ds| ds.version().version);
        if version != known.version {
            let batches = self.registry.scan(&NAMESPACES, |_| Ok(())).await?;
            known.names = names_of(&batches);
            known.version = version;
        }
        known.checked = Some(Instant::now());
        Ok(())
    }

    /// Provisions namespace `name`: true when this call created it, false when it existed.
    /// Concurrent provisioning of one name by several processes creates it once (the write is a
    /// merge on the name).
    pub async fn create(&self, name: &str) -> Result<bool, NamespaceError> {
        if let Some(reason) = name_fault(name) {
            return Err(NamespaceError::Name {
                name: name.to_owned(),
                reason,
            });
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros() as i64)
            .unwrap_or(0);
        let batch = RecordBatch::try_new(
            NAMESPACES.schema.clone(),
            vec![
                Arc::new(StringArray::from(vec![name])),
                Arc::new(TimestampMicrosecondArray::from(vec![now]).with_timezone("UTC")),
            ],
        )
        .map_err(|e| StoreError::Invalid {
            table: NAMESPACES.name,
            detail: e.to_string(),
        })?;
        let outcome = self.registry.merge_insert(&NAMESPACES, vec![batch]).await?;
        let mut known = self.known.lock().await;
        known.names.insert(name.to_owned(), now);
        Ok(outcome.inserted == 1)
    }

    /// Every namespace: the default first, then the provisioned ones by name.
    pub async fn list(&self) -> Result<Vec<NamespaceInfo>, StoreError> {
        let batches = self.registry.scan(&NAMESPACES, |_| Ok(())).await?;
        let mut out = vec![NamespaceInfo {
            name: DEFAULT_NAMESPACE.to_owned(),
            uri: self.root.uri().to_owned(),
            created_at: None,
        }];
        for (name, micros) in names_of(&batches) {
            out.push(NamespaceInfo {
                uri: self.namespace_location(&name).uri().to_owned(),
                created_at: chrono::DateTime::from_timestamp_micros(micros)
                    .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
                name,
            });
        }
        Ok(out)
    }
}

/// The names (and creation times) in batches of `_namespaces`.
fn names_of(batches: &[RecordBatch]) -> BTreeMap<String, i64> {
    let mut out = BTreeMap::new();
    for b in batches {
        let names = b
            .column_by_name("name")
            .and_then(|c| c.as_any().downcast_ref::<StringArray>());
        let times = b
            .column_by_name("created_at")
            .and_then(|c| c.as_any().downcast_ref::<TimestampMicrosecondArray>());
        let (Some(names), Some(times)) = (names, times) else {
            continue;
        };
        for i in 0..b.num_rows() {
            if names.is_valid(i) {
                out.insert(names.value(i).to_owned(), times.value(i));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_path_segments_on_every_backend() {
        for ok in [
            "acme",
            "tenant-a",
            "org_42",
            "a.b",
            "0",
            &"x".repeat(MAX_NAME),
        ] {
            assert_eq!(name_fault(ok), None, "{ok}");
        }
        for bad in [
            "",
            "default",
            "Acme",
            "a/b",
            "..",
            ".hidden",
            "-x",
            "a b",
            "é",
            &"x".repeat(MAX_NAME + 1),
        ] {
            assert!(name_fault(bad).is_some(), "{bad:?}");
        }
    }

    #[tokio::test]
    async fn namespaces_exist_once_provisioned_and_live_apart() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().display().to_string();
        let catalog = Catalog::open(Location::local(&root));
        assert!(catalog.exists(DEFAULT_NAMESPACE).await.unwrap());
        assert!(!catalog.exists("acme").await.unwrap());
        assert!(catalog.substrate("acme").await.unwrap().is_none());
        assert!(catalog.create("acme").await.unwrap());
        assert!(!catalog.create("acme").await.unwrap(), "created twice");
        let acme = catalog.substrate("acme").await.unwrap().unwrap();
        assert_eq!(acme.root(), format!("{root}/ns/acme"));
        let default = catalog.substrate(DEFAULT_NAMESPACE).await.unwrap().unwrap();
        assert_eq!(default.root(), root);
        // Another process's catalog sees it (a local root's window is zero).
        let other = Catalog::open(Location::local(&root));
        assert!(other.exists("acme").await.unwrap());
        assert!(!other.exists("acme2").await.unwrap());
        let names: Vec<String> = other
            .list()
            .await
            .unwrap()
            .into_iter()
            .map(|n| n.name)
            .collect();
        assert_eq!(names, ["default", "acme"]);
        assert!(matches!(
            catalog.create("Bad/Name").await,
            Err(NamespaceError::Name { .. })
        ));
    }
}
