//! Restore's read side (spec 6.2): a stored session with every child session that names it,
//! in canonical form, ready for any codec's write face.

use crate::sessions::SessionStore;
use crate::substrate::StoreError;
use pond_canonical::{Event, Message};
use std::fmt;

/// Why a session cannot be restored.
#[derive(Debug)]
pub enum RestoreError {
    /// No stored session has this id.
    NotFound(String),
    /// A child session has children of its own: the v1 graph is one level deep, and a deeper one
    /// is refused rather than restored in part (adapter-lineage-complete-restore).
    TooDeep { session: String, child: String },
    /// The store failed.
    Store(StoreError),
}

impl fmt::Display for RestoreError {
    /// The message, with every control character quoted from the input escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        pond_canonical::untrusted::write_escaped(f, |f| self.describe(f))
    }
}

impl RestoreError {
    /// The message as it is made, before its control characters are escaped.
    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotFound(id) => write!(f, "no stored session {id}"),
            Self::TooDeep { session, child } => write!(
                f,
                "session {session}'s child {child} has children of its own; lineage deeper than one level is not restorable in v1"
            ),
            Self::Store(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for RestoreError {}

impl From<StoreError> for RestoreError {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

/// `id` and its child sessions as one canonical event stream (adapter-lineage-complete-restore):
/// every `Session` first, then every message in the order the source emitted them (`seq`), so a
/// native write puts a child's lines back where they were when parent and child shared a file.
pub async fn lineage(store: &SessionStore, id: &str) -> Result<Vec<Event>, RestoreError> {
    let mut sessions = store.session_and_children(id).await?;
    let Some(pos) = sessions.iter().position(|s| s.id.as_str() == id) else {
        return Err(RestoreError::NotFound(id.to_owned()));
    };
    let root = sessions.remove(pos);
    sessions.sort_by(|a, b| {
        a.created_at
            .cmp(&b.created_at)
            .then_with(|| a.id.cmp(&b.id))
    });
    for child in &sessions {
        if store.has_children(child.id.as_str()).await? {
            return Err(RestoreError::TooDeep {
                session: id.to_owned(),
                child: child.id.to_string(),
            });
        }
    }
    let mut events = Vec::new();
    let mut messages: Vec<(i64, usize, Message)> = Vec::new();
    for (rank, session) in std::iter::once(root).chain(sessions).enumerate() {
        messages.extend(
            store
                .load_messages(session.id.as_str())
                .await?
                .into_iter()
                .map(|(seq, m)| (seq, rank, m)),
        );
        events.push(Event::Session(session));
    }
    messages.sort_by_key(|(seq, rank, _)| (*seq, *rank));
    events.extend(messages.into_iter().map(|(_, _, m)| Event::Message(m)));
    Ok(events)
}
