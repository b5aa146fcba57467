//! Restore's read side (spec 6.2): a stored session with every child session that names it,
//! in canonical form, ready for any codec's write face.

use crate::sessions::{IdCandidates, SessionStore};
use crate::substrate::StoreError;
use pond_canonical::{Event, Message};
use std::collections::{HashMap, HashSet};
use std::fmt;

/// Why a session cannot be restored.
#[derive(Debug)]
pub enum RestoreError {
    /// No stored session has this id, nor is it the start of exactly one stored id; the ids that
    /// begin with it are named.
    NotFound {
        id: String,
        candidates: IdCandidates,
    },
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
            Self::NotFound { id, candidates } => write!(f, "{}", candidates.message(id)),
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
/// every `Session` first (the one `id` names the very first: `id` may be the start of its id,
/// [`SessionStore::resolve_session_id`]), then every message in the order the source emitted them (`seq`), so a
/// native write puts a child's lines back where they were when parent and child shared a file.
///
/// `replay_into_forks`: for a write into another harness (the target codec's brand, so that
/// sessions of that harness are left as they are), a fork with a cut-point (`parent_message_id`)
/// also gets its parent's messages up to and including the cut-point, replayed in it: a pi
/// branch is stored as the entries after the point it branched at, and written into another
/// harness as a session of its own it began mid-conversation (issue 22's user trial: the
/// user's first prompt missing, the history sent to the model starting with an answer).
pub async fn lineage(
    store: &SessionStore,
    id: &str,
    replay_into_forks: Option<&str>,
) -> Result<Vec<Event>, RestoreError> {
    let given = id;
    let id = &store
        .resolve_session_id(given)
        .await?
        .map_err(|candidates| RestoreError::NotFound {
            id: given.to_owned(),
            candidates,
        })?;
    let mut sessions = store.session_and_children(id).await?;
    let Some(pos) = sessions.iter().position(|s| s.id.as_str() == id) else {
        return Err(RestoreError::NotFound {
            id: given.to_owned(),
            candidates: IdCandidates::default(),
        });
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
    let mut loaded: HashMap<String, Vec<(i64, Message)>> = HashMap::new();
    for (rank, session) in std::iter::once(root).chain(sessions).enumerate() {
        let own = store.load_messages(session.id.as_str()).await?;
        if let (Some(parent), Some(cut)) = (&session.parent_session_id, &session.parent_message_id)
            && replay_into_forks.is_some_and(|native| session.source_agent != native)
        {
            // The parent's history up to the cut-point, replayed in the fork (spec 4.5: a fork
            // holds its parent's history under the same ids) where the fork does not already.
            if !loaded.contains_key(parent.as_str()) {
                let history = store.load_messages(parent.as_str()).await?;
                loaded.insert(parent.to_string(), history);
            }
            let history = &loaded[parent.as_str()];
            let held: HashSet<&str> = own.iter().map(|(_, m)| m.id().as_str()).collect();
            if let Some(cut_seq) = history
                .iter()
                .find(|(_, m)| m.id() == cut)
                .map(|(seq, _)| *seq)
            {
                messages.extend(
                    history
                        .iter()
                        .filter(|(seq, m)| *seq <= cut_seq && !held.contains(m.id().as_str()))
                        .map(|(seq, m)| (*seq, rank, m.replayed_in(&session.id))),
                );
            }
        }
        if replay_into_forks.is_some() {
            loaded.insert(session.id.to_string(), own.clone());
        }
        messages.extend(own.into_iter().map(|(seq, m)| (seq, rank, m)));
        events.push(Event::Session(session));
    }
    messages.sort_by_key(|(seq, rank, _)| (*seq, *rank));
    events.extend(messages.into_iter().map(|(_, _, m)| Event::Message(m)));
    Ok(events)
}
