//! The error model of spec 7.4: one closed set of codes, one body shape. Every handler fails
//! with a [`PondError`]; the transports only encode it (HTTP maps [`ErrorCode::http_status`]).

use pond_store::substrate::StoreError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// The closed set of error codes (spec 7.4). Retryability is a property of the code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// Bad request shape, missing field, type mismatch, a value out of range, a batch over a cap.
    ValidationFailed,
    /// A `protocol_version` pond does not understand.
    VersionUnsupported,
    /// A `pond_get` target that does not exist.
    NotFound,
    /// A namespace that is not provisioned.
    NamespaceUnknown,
    /// Lance or the object store failed after retry was exhausted.
    StorageUnavailable,
    /// Optimistic-concurrency retry exhausted on a write.
    Conflict,
    /// An unhandled fault.
    Internal,
}

impl ErrorCode {
    /// The HTTP status the HTTP transport answers with (spec 7.4).
    pub fn http_status(self) -> u16 {
        match self {
            Self::ValidationFailed | Self::VersionUnsupported => 400,
            Self::NotFound => 404,
            Self::NamespaceUnknown => 403,
            Self::StorageUnavailable => 503,
            Self::Conflict => 409,
            Self::Internal => 500,
        }
    }

    /// Whether the same request may succeed if sent again.
    pub fn retryable(self) -> bool {
        matches!(self, Self::StorageUnavailable | Self::Conflict)
    }

    /// The code as it appears on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ValidationFailed => "validation_failed",
            Self::VersionUnsupported => "version_unsupported",
            Self::NotFound => "not_found",
            Self::NamespaceUnknown => "namespace_unknown",
            Self::StorageUnavailable => "storage_unavailable",
            Self::Conflict => "conflict",
            Self::Internal => "internal",
        }
    }
}

/// An error: a code, a message a person can act on, and details a program can (for
/// `validation_failed`, `details.field` names the request field at fault).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PondError {
    pub code: ErrorCode,
    pub message: String,
    /// Structured context: always an object, empty when there is none.
    #[serde(default)]
    pub details: serde_json::Map<String, Value>,
}

/// The error body every transport sends (spec 7.4): `{"error": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ErrorBody {
    pub error: PondError,
}

impl PondError {
    /// An error with no details.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            details: serde_json::Map::new(),
        }
    }

    /// `validation_failed` about one request field.
    pub fn invalid(field: &str, message: impl Into<String>) -> Self {
        let mut e = Self::new(ErrorCode::ValidationFailed, message);
        e.details
            .insert("field".into(), Value::String(field.to_owned()));
        e
    }

    /// Adds a detail.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.details.insert(key.to_owned(), value.into());
        self
    }

    /// The body to send.
    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            error: self.clone(),
        }
    }
}

impl fmt::Display for PondError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for PondError {}

/// The store's faults on the wire (spec 3.6: the wire layer knows the substrate's conflict
/// signal; the substrate knows nothing of the wire).
impl From<StoreError> for PondError {
    fn from(e: StoreError) -> Self {
        let message = e.to_string();
        match e {
            StoreError::Conflict {
                table, attempts, ..
            } => Self::new(ErrorCode::Conflict, message)
                .with("table", table)
                .with("attempts", attempts),
            StoreError::Unavailable {
                table, attempts, ..
            } => Self::new(ErrorCode::StorageUnavailable, message)
                .with("table", table)
                .with("attempts", attempts),
            StoreError::SchemaVersion { table, .. } => {
                Self::new(ErrorCode::StorageUnavailable, message).with("table", table)
            }
            StoreError::Invalid { table, .. } => {
                Self::new(ErrorCode::Internal, message).with("table", table)
            }
            // Not retryable: the same files read the same way again.
            StoreError::Damaged { table, .. } => {
                Self::new(ErrorCode::Internal, message).with("table", table)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_its_status_and_wire_name() {
        let all = [
            (ErrorCode::ValidationFailed, 400, false),
            (ErrorCode::VersionUnsupported, 400, false),
            (ErrorCode::NotFound, 404, false),
            (ErrorCode::NamespaceUnknown, 403, false),
            (ErrorCode::StorageUnavailable, 503, true),
            (ErrorCode::Conflict, 409, true),
            (ErrorCode::Internal, 500, false),
        ];
        for (code, status, retry) in all {
            assert_eq!(code.http_status(), status);
            assert_eq!(code.retryable(), retry);
            let wire = serde_json::to_value(code).unwrap();
            assert_eq!(wire, Value::String(code.as_str().to_owned()));
        }
    }

    #[test]
    fn the_body_is_the_one_shape_of_spec_7_4() {
        let body = serde_json::to_value(PondError::invalid("limit", "too big").body()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"error": {"code": "validation_failed", "message": "too big",
                "details": {"field": "limit"}}})
        );
    }

    #[test]
    fn a_lost_write_race_is_a_retryable_conflict() {
        let e: PondError = StoreError::Conflict {
            table: "messages",
            attempts: 8,
            detail: "x".into(),
        }
        .into();
        assert_eq!(e.code, ErrorCode::Conflict);
        assert_eq!(e.details["attempts"], 8);
    }
}
