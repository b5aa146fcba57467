//! The request envelope (spec 7.2, 7.3): `protocol_version`, the optional `namespace`, and the
//! one place that decides which namespaces exist and which stored tables each maps to
//! (wire-namespace-resolution). Decoding a request from JSON lives here too, so every transport
//! turns a bad body into the same `validation_failed`.

use crate::error::{ErrorCode, PondError};
use pond_store::sessions::SessionStore;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The protocol version this pond speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// The name of the personal pond's single namespace (spec 2.2): what an omitted `namespace`
/// selects.
pub const PERSONAL_NAMESPACE: &str = "default";

/// What the handlers serve: the stores of every namespace. The personal deployment has one.
pub struct Pond {
    personal: SessionStore,
}

impl Pond {
    /// A personal pond over the store at `uri`.
    pub fn personal(uri: &str) -> Self {
        Self {
            personal: SessionStore::open(uri),
        }
    }

    /// wire-namespace-resolution: the store a request's `namespace` selects. Omitted or
    /// [`PERSONAL_NAMESPACE`], the personal store; anything else is not provisioned here.
    pub fn namespace(&self, namespace: Option<&str>) -> Result<&SessionStore, PondError> {
        match namespace {
            None | Some(PERSONAL_NAMESPACE) => Ok(&self.personal),
            Some(other) => Err(PondError::new(
                ErrorCode::NamespaceUnknown,
                format!(
                    "namespace {other:?} is not provisioned; this pond has one namespace, {PERSONAL_NAMESPACE:?} (or leave namespace out)"
                ),
            )
            .with("namespace", other)),
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

    #[test]
    fn only_the_personal_namespace_exists_here() {
        let dir = tempfile::tempdir().unwrap();
        let pond = Pond::personal(dir.path().to_str().unwrap());
        assert!(pond.namespace(None).is_ok());
        assert!(pond.namespace(Some(PERSONAL_NAMESPACE)).is_ok());
        let e = pond.namespace(Some("tenant-a")).err().unwrap();
        assert_eq!(e.code, ErrorCode::NamespaceUnknown);
    }
}
