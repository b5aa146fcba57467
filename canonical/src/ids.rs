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
        let mut id = String::with_capacity(message.0.len() + 4);
        id.push_str(&message.0);
        id.push('.');
        push_decimal(&mut id, ordinal as u64);
        Self(id)
    }
}

/// Appends `n` in decimal: what `format!` writes for it, without its machinery (ids are derived
/// for every line and part a reader maps).
pub(crate) fn push_decimal(text: &mut String, mut n: u64) {
    let (mut digits, mut at) = ([0u8; 20], 20);
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    text.extend(digits[at..].iter().map(|d| char::from(*d)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_are_what_format_writes() {
        for n in [0u64, 7, 10, 99, 100, 12_345, u64::MAX] {
            let mut text = String::from("L");
            push_decimal(&mut text, n);
            assert_eq!(text, format!("L{n}"));
        }
        let message = MessageId::from(crate::seam::Extracted::new("L42".to_owned()));
        assert_eq!(PartId::derived(&message, 0).as_str(), "L42.0");
        assert_eq!(PartId::derived(&message, 31).as_str(), "L42.31");
    }
}
