//! Identifier newtypes: distinct types in Rust, plain strings on the wire (spec 4.3).
//!
//! Each id can only be built from an [`Extracted`](crate::seam::Extracted) value or derived from
//! another id, so a codec cannot mint one from a literal (model-no-synthesis). Deserialization is
//! the other way in: JSON that arrives on the wire or from the store is input, not synthesis.

use crate::seam::Extracted;
use serde::{Deserialize, Serialize};
use std::fmt;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// The id as the opaque string it is on the wire (adapter-integrity-opaque-ids).
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl From<Extracted<String>> for $name {
            fn from(value: Extracted<String>) -> Self {
                Self(value.into_inner())
            }
        }

        impl From<Extracted<&str>> for $name {
            fn from(value: Extracted<&str>) -> Self {
                Self(value.into_inner().to_owned())
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:?})", stringify!($name), self.0)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}

id_type!(
    /// Identifies a session. Source-supplied where the source has a stable id.
    SessionId
);
id_type!(
    /// Identifies a message within its session. Unique only together with the session id (spec 5.2).
    MessageId
);
id_type!(
    /// Identifies a part within its message.
    PartId
);

impl PartId {
    /// The deterministic id of the part at `ordinal` in `message` when the source gives parts no
    /// id of their own (lance-deterministic-pk): `<message id>.<ordinal>`.
    pub fn derived(message: &MessageId, ordinal: usize) -> Self {
        Self(format!("{}.{}", message.0, ordinal))
    }
}
