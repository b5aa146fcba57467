//! The request envelope (spec 7.2, 7.3): `protocol_version`, the optional `namespace`, and the
//! one place that decides which namespaces exist and which stored tables each maps to
//! (wire-namespace-resolution). Decoding a request from JSON lives here too, so every transport
//! turns a bad body into the same `validation_failed`.

use crate::embedding::EmbeddingModel;
use crate::error::{ErrorCode, PondError};
use pond_store::sessions::{SessionStore, VectorSettings};
use pond_store::substrate::{Catalog, DEFAULT_NAMESPACE, Location};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The protocol version this pond speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// The name of the personal pond's single namespace (spec 2.2): what an omitted `namespace`
/// selects unless the pond was opened with another default.
pub const PERSONAL_NAMESPACE: &str = DEFAULT_NAMESPACE;

/// What the handlers serve: the namespaces under one root, each its own store. The personal
/// pond uses only the default one; a hosted pond serves every namespace provisioned under its
/// root (`pond namespace create`).
pub struct Pond {
    catalog: Catalog,
    /// The namespace an omitted `namespace` selects.
    default: String,
    /// The store of every namespace resolved so far (namespaces are never removed).
    stores: Mutex<HashMap<String, Arc<SessionStore>>>,
    /// The configured embedding model (`[embedding]`), when there is one.
    embedding: Option<Arc<EmbeddingModel>>,
    /// How every namespace's vector arm searches (`[search]`).
    vector: VectorSettings,
}

impl Pond {
    /// A personal pond over the local store at `uri`.
    pub fn personal(uri: &str) -> Self {
        Self::open(Location::local(uri))
    }

    /// The pond under `root` (a directory or an object-store URI, with its storage options).
    pub fn open(root: Location) -> Self {
        Self {
            catalog: Catalog::open(root),
            default: DEFAULT_NAMESPACE.to_owned(),
            stores: Mutex::new(HashMap::new()),
            embedding: None,
            vector: VectorSettings::default(),
        }
    }

    /// The same pond with an embedding model configured: searches are hybrid wherever messages
    /// are embedded under it (spec 8).
    pub fn with_embedding(mut self, model: EmbeddingModel) -> Self {
        self.embedding = Some(Arc::new(model));
        self
    }

    /// The same pond, its vector arm searching with `settings`.
    pub fn with_vector_settings(mut self, settings: VectorSettings) -> Self {
        self.vector = settings;
        self
    }

    /// The configured embedding model.
    pub fn embedding(&self) -> Option<&EmbeddingModel> {
        self.embedding.as_deref()
    }

    /// The same pond, where an omitted `namespace` selects `name` (`pond mcp --namespace`, the
    /// CLI verbs' `--namespace`); it is resolved like any namespace, when a request comes.
    pub fn with_default_namespace(mut self, name: &str) -> Self {
        self.default = name.to_owned();
        self
    }

    /// The catalog of namespaces under the root.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// wire-namespace-resolution: the store a request's `namespace` selects, the one place this
    /// is decided. Omitted, the pond's default namespace ([`PERSONAL_NAMESPACE`] unless opened
    /// otherwise); a namespace not provisioned under the root is `namespace_unknown`. Each
    /// namespace's store is rooted at its own prefix by the catalog
    /// (lance-chokepoints-catalog), so nothing read or written through it reaches another's.
    pub async fn namespace(&self, namespace: Option<&str>) -> Result<Arc<SessionStore>, PondError> {
        let name = namespace.unwrap_or(&self.default);
        if let Some(store) = self.stores.lock().expect("not poisoned").get(name) {
            return Ok(store.clone());
        }
        match self.catalog.substrate(name).await? {
            Some(substrate) => {
                let mut stores = self.stores.lock().expect("not poisoned");
                let store = stores
                    .entry(name.to_owned())
                    .or_insert_with(|| {
                        Arc::new(SessionStore::on(substrate).with_vector_settings(self.vector))
                    });
                Ok(store.clone())
            }
            None => Err(PondError::new(
                ErrorCode::NamespaceUnknown,
                format!(
                    "namespace {name:?} is not provisioned in this pond (an operator provisions one with `pond namespace create NAME`; leave namespace out for {:?})",
                    self.default
                ),
            )
            .with("namespace", name)),
        }
    }
}

/// Checks `protocol_version` (spec 7.2): `version_unsupported` for a version pond does not speak.
pub fn check_version(version: u32) -> Result<(), PondError> {
    if version == PROTOCOL_VERSION {
        Ok(())
    } else {
        Err(PondError::new(
            ErrorCode::VersionUnsupported,
            format!(
                "protocol_version {version} is not supported; this pond speaks {PROTOCOL_VERSION}"
            ),
        )
        .with("supported", vec![PROTOCOL_VERSION]))
    }
}

/// Decodes a request from JSON: the version first (a newer client's unknown fields are a
/// version problem, not a shape problem), then the whole request, where an unknown field, a
/// missing one or a wrong type is `validation_failed` naming the field.
pub fn decode<T: DeserializeOwned>(value: Value) -> Result<T, PondError> {
    let Value::Object(fields) = &value else {
        return Err(PondError::invalid(
            "",
            format!(
                "the request must be a JSON object, not {}",
                pond_canonical::seam::json_kind(&value)
            ),
        ));
    };
    match fields.get("protocol_version") {
        None => {
            return Err(PondError::invalid(
                "protocol_version",
                format!(
                    "protocol_version is missing; send \"protocol_version\": {PROTOCOL_VERSION}"
                ),
            ));
        }
        Some(Value::Number(n)) if n.as_u64().is_some_and(|v| v >= 1) => {
            let v = n.as_u64().unwrap_or(0);
            check_version(u32::try_from(v).unwrap_or(u32::MAX))?;
        }
        Some(other) => {
            return Err(PondError::invalid(
                "protocol_version",
                format!("protocol_version must be a positive integer, not {other}"),
            ));
        }
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let field = e.path().to_string();
        let field = if field == "." { String::new() } else { field };
        let inner = e.into_inner().to_string();
        let message = if field.is_empty() {
            format!("bad request: {inner}")
        } else {
            format!("bad request field {field}: {inner}")
        };
        PondError::invalid(&field, message)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::SearchRequest;
    use serde_json::json;

    fn code(v: Value) -> (ErrorCode, String, String) {
        let e = decode::<SearchRequest>(v).unwrap_err();
        let field = e
            .details
            .get("field")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        (e.code, field, e.message)
    }

    #[test]
    fn the_version_is_checked_before_the_shape() {
        let (c, ..) = code(json!({"protocol_version": 2, "query": "x", "brand_new": 1}));
        assert_eq!(c, ErrorCode::VersionUnsupported);
        let (c, f, _) = code(json!({"query": "abc"}));
        assert_eq!(
            (c, f.as_str()),
            (ErrorCode::ValidationFailed, "protocol_version")
        );
        let (c, f, _) = code(json!({"protocol_version": "1", "query": "abc"}));
        assert_eq!(
            (c, f.as_str()),
            (ErrorCode::ValidationFailed, "protocol_version")
        );
    }

    #[test]
    fn unknown_and_mistyped_fields_name_the_field() {
        let (c, _, m) = code(json!({"protocol_version": 1, "query": "abc", "limt": 3}));
        assert_eq!(c, ErrorCode::ValidationFailed);
        assert!(m.contains("limt"), "{m}");
        let (c, f, m) = code(json!({"protocol_version": 1, "query": "abc", "limit": "ten"}));
        assert_eq!((c, f.as_str()), (ErrorCode::ValidationFailed, "limit"));
        assert!(m.contains("limit"), "{m}");
        let (c, f, _) = code(json!([1, 2]));
        assert_eq!((c, f.as_str()), (ErrorCode::ValidationFailed, ""));
    }

    #[tokio::test]
    async fn a_namespace_exists_once_provisioned() {
        let dir = tempfile::tempdir().unwrap();
        let pond = Pond::personal(dir.path().to_str().unwrap());
        assert!(pond.namespace(None).await.is_ok());
        assert!(pond.namespace(Some(PERSONAL_NAMESPACE)).await.is_ok());
        for unknown in ["tenant-a", "../etc", "Tenant-A", ""] {
            let e = pond.namespace(Some(unknown)).await.err().unwrap();
            assert_eq!(e.code, ErrorCode::NamespaceUnknown, "{unknown:?}");
        }
        pond.catalog().create("tenant-a").await.unwrap();
        let a = pond.namespace(Some("tenant-a")).await.unwrap();
        let default = pond.namespace(None).await.unwrap();
        assert_ne!(a.substrate().root(), default.substrate().root());
        // A pond whose default is a tenant resolves an omitted namespace to it.
        let tenant =
            Pond::personal(dir.path().to_str().unwrap()).with_default_namespace("tenant-a");
        let t = tenant.namespace(None).await.unwrap();
        assert_eq!(t.substrate().root(), a.substrate().root());
        let missing = Pond::personal(dir.path().to_str().unwrap()).with_default_namespace("nope");
        assert_eq!(
            missing.namespace(None).await.err().unwrap().code,
            ErrorCode::NamespaceUnknown
        );
    }
}
