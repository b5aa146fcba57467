//! The store's read paths over a real store: `pond get` pages stay within their budget, never
//! cut a message, and together give back every message in order; message mode pages a message's
//! parts and shows its neighbours; bad ids are typed errors. And the update-indexes stage: it
//! builds every declared index, leaves a current one alone, and folds in rows written since.

use pond_store::get::{GetError, GetRequest, GetResponse, ResponseMode, get};
use pond_store::sessions::SessionStore;
use std::path::Path;

const FIXTURE: &str = "../../shared/fixtures/claude-code/marot-spotter";

async fn store_with_fixture(dir: &Path) -> SessionStore {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE);
    assert!(src.is_dir(), "shared fixture missing: {}", src.display());
    let store = SessionStore::open(dir.to_str().unwrap());
    let codec = pond_codecs::registry::find("claude-code").unwrap();
    let summary = pond_store::sync::import(&store, codec, &[src], &mut |_, _| {})
        .await
        .unwrap();
    assert!(summary.written.messages_inserted > 100, "{summary:?}");
    store
}

/// Every page of a session in `mode` with `budget`, checking each against the budget.
async fn all_pages(
    store: &SessionStore,
    id: &str,
    mode: ResponseMode,
    budget: usize,
) -> Vec<String> {
    let mut ids = Vec::new();
    let mut after = None;
    loop {
        let request = GetRequest {
            response_mode: mode,
            after_id: after.clone(),
            budget_bytes: budget,
            ..GetRequest::session(id)
        };
        let GetResponse::Session(page) = get(store, &request).await.unwrap() else {
            panic!("session mode answered with a message page");
        };
        let sizes: usize = page
            .messages
            .iter()
            .map(|m| serde_json::to_vec(m).unwrap().len())
            .sum();
        assert!(
            sizes <= budget || page.messages.len() == 1,
            "a page of {} messages carries {sizes} bytes over a {budget}-byte budget",
            page.messages.len()
        );
        assert!(!page.messages.is_empty() || page.messages_remaining == 0);
        ids.extend(page.messages.iter().map(|m| m.id.clone()));
        if page.messages_remaining == 0 {
            assert!(page.next_after_id.is_none());
            return ids;
        }
        after = page.next_after_id.clone();
        assert_eq!(after.as_ref(), ids.last(), "next_after_id is the last id");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_cover_the_session_and_message_mode_pages_parts() {
    let scratch = tempfile::tempdir().unwrap();
    let store = store_with_fixture(scratch.path()).await;
    store.update_indexes().await.unwrap();
    let sessions = store.list(None, None, None).await.unwrap();
    let biggest = sessions.iter().max_by_key(|s| s.messages).unwrap();
    let messages: Vec<_> = store
        .load_messages(&biggest.id)
        .await
        .unwrap()
        .into_iter()
        .map(|(_, m)| m)
        .collect();

    // Verbatim and complete pages, however small the budget, give back every message in order.
    let stored: Vec<String> = messages.iter().map(|m| m.id().to_string()).collect();
    for mode in [ResponseMode::Verbatim, ResponseMode::Complete] {
        let paged = all_pages(&store, &biggest.id, mode, 32 * 1024).await;
        assert_eq!(paged, stored, "{mode:?} pages");
    }
    // A verbatim page carries whole canonical messages that read back as such.
    let first = get(
        &store,
        &GetRequest {
            response_mode: ResponseMode::Verbatim,
            ..GetRequest::session(&biggest.id)
        },
    )
    .await
    .unwrap();
    let GetResponse::Session(first) = first else {
        panic!()
    };
    let back: pond_canonical::Message =
        serde_json::from_value(first.messages[0].message.clone().unwrap()).unwrap();
    assert_eq!(back, messages[0]);

    // Conversational: only user and assistant messages with text said by a person or model.
    let conv = all_pages(&store, &biggest.id, ResponseMode::Conversational, 32 * 1024).await;
    let expected: Vec<String> = messages
        .iter()
        .filter(|m| pond_store::get::conversational_text(m).is_some())
        .map(|m| m.id().to_string())
        .collect();
    assert_eq!(conv, expected);
    assert!(!conv.is_empty() && conv.len() < stored.len());
    for m in &messages {
        if conv.contains(&m.id().to_string()) {
            assert!(matches!(m.role(), "user" | "assistant"), "{}", m.role());
        }
    }

    // Message mode: a budget of one byte gives one part per page; the pages give back every part.
    let (at, target) = messages
        .iter()
        .enumerate()
        .filter(|(i, _)| *i >= 2 && *i + 2 < messages.len())
        .max_by_key(|(_, m)| m.part_count())
        .unwrap();
    assert!(target.part_count() >= 2, "a message with several parts");
    let mut parts = Vec::new();
    let mut after = None;
    loop {
        let request = GetRequest {
            message_id: Some(target.id().to_string()),
            context_depth: 2,
            after_id: after,
            budget_bytes: 1,
            ..GetRequest::session(&biggest.id)
        };
        let GetResponse::Message(page) = get(&store, &request).await.unwrap() else {
            panic!("message mode answered with a session page");
        };
        assert_eq!(page.target.id, target.id().as_str());
        assert_eq!(page.target_parts.len(), 1);
        let ids = |v: &[pond_store::get::MessageView]| -> Vec<String> {
            v.iter().map(|m| m.id.clone()).collect()
        };
        let around = |r: std::ops::Range<usize>| -> Vec<String> {
            messages[r].iter().map(|m| m.id().to_string()).collect()
        };
        assert_eq!(ids(&page.before), around(at - 2..at));
        assert_eq!(ids(&page.after), around(at + 1..at + 3));
        parts.extend(page.target_parts);
        if page.target_parts_remaining == 0 {
            break;
        }
        after = page.next_after_id;
    }
    let expected: Vec<serde_json::Value> = target
        .parts()
        .iter()
        .map(|p| serde_json::to_value(p).unwrap())
        .collect();
    assert_eq!(parts, expected);

    // Typed errors.
    let missing = get(&store, &GetRequest::session("no-such-session")).await;
    assert!(
        matches!(missing, Err(GetError::SessionNotFound { .. })),
        "{missing:?}"
    );
    // A session is named by the start of its id too (at least 4 characters); its children,
    // whose ids begin with its whole id, do not make that ambiguous.
    let root = "258c7280-ae70-4798-800f-63464d01a85d";
    let named = |given: String| {
        let store = &store;
        async move {
            match get(store, &GetRequest::session(given)).await {
                Ok(GetResponse::Session(page)) => Ok(page.session.id),
                Ok(GetResponse::Message(_)) => panic!("session mode answered with a message page"),
                Err(e) => Err(e),
            }
        }
    };
    for given in ["258c", "258c7280-ae70", root, "shor"] {
        let want = if given == "shor" { "short" } else { root };
        assert_eq!(named(given.into()).await.unwrap(), want, "{given}");
    }
    let child = format!("{root}/agent-a881341");
    assert_eq!(named(format!("{root}/agent-a8")).await.unwrap(), child);
    // Too short a start, and a start two children share: typed errors naming the candidates.
    let Err(GetError::SessionNotFound { id, candidates }) = named("258".into()).await else {
        panic!("a 3-character start named a session");
    };
    assert_eq!((id.as_str(), candidates.total), ("258", 3));
    assert_eq!(candidates.ids[0], root);
    let message = candidates.message(&id);
    assert!(message.contains("at least 4 characters"), "{message}");
    let Err(GetError::SessionNotFound { id, candidates }) = named(format!("{root}/agent-a")).await
    else {
        panic!("a start two sessions share named one");
    };
    assert_eq!(
        candidates.ids,
        [child.clone(), format!("{root}/agent-acompact-fffbd0")]
    );
    let message = candidates.message(&id);
    assert!(message.ends_with("give more of the id"), "{message}");
    let Err(GetError::SessionNotFound { candidates, .. }) = named("zzzz".into()).await else {
        panic!("an id nothing begins with named a session");
    };
    assert_eq!(candidates.total, 0);

    let bad_after = get(
        &store,
        &GetRequest {
            after_id: Some("no-such-message".into()),
            ..GetRequest::session(&biggest.id)
        },
    )
    .await;
    assert!(
        matches!(bad_after, Err(GetError::AfterIdNotFound { .. })),
        "{bad_after:?}"
    );
    let bad_message = get(
        &store,
        &GetRequest {
            message_id: Some("no-such-message".into()),
            ..GetRequest::session(&biggest.id)
        },
    )
    .await;
    assert!(
        matches!(bad_message, Err(GetError::MessageNotFound { .. })),
        "{bad_message:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_indexes_builds_then_folds_only_what_changed() {
    use pond_store::substrate::IndexAction;
    let scratch = tempfile::tempdir().unwrap();
    let store = SessionStore::open(scratch.path().to_str().unwrap());
    // An empty store has nothing to index.
    let empty = store.update_indexes().await.unwrap();
    assert!(
        empty.iter().all(|u| u.action == IndexAction::NoTable),
        "{empty:?}"
    );

    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/codex");
    let codex = pond_codecs::registry::find("codex").unwrap();
    let first = fixtures.join("localpush-2026-02-23");
    pond_store::sync::import(&store, codex, &[first], &mut |_, _| {})
        .await
        .unwrap();
    let built = store.update_indexes().await.unwrap();
    assert!(
        built.iter().all(|u| u.action == IndexAction::Created),
        "{built:?}"
    );
    let status = store.index_status().await.unwrap();
    assert_eq!(status.len(), pond_store::sessions::schema::indexes().len());
    assert!(
        status
            .iter()
            .all(|s| s.exists && s.unindexed_rows == 0 && s.indexed_rows > 0),
        "{status:?}"
    );
    let again = store.update_indexes().await.unwrap();
    assert!(
        again.iter().all(|u| u.action == IndexAction::Current),
        "{again:?}"
    );

    // New rows: the full-text and bitmap indexes fold them in, the BTrees (and the bitmap of
    // a column patched in place) are rebuilt.
    pond_store::sync::import(&store, codex, &[fixtures], &mut |_, _| {})
        .await
        .unwrap();
    let stale = store.index_status().await.unwrap();
    assert!(stale.iter().any(|s| s.unindexed_rows > 0), "{stale:?}");
    let folded = store.update_indexes().await.unwrap();
    for u in &folded {
        let kind = pond_store::sessions::schema::indexes()
            .into_iter()
            .find(|(_, i)| i.name == u.index)
            .map(|(_, i)| i.kind)
            .unwrap();
        let expected = match kind {
            pond_store::substrate::IndexKind::BTree
            | pond_store::substrate::IndexKind::BitmapRebuilt => IndexAction::Rebuilt,
            _ => IndexAction::Folded,
        };
        assert_eq!(u.action, expected, "{u:?}");
    }
    let (rows, _) = store.message_breakdown().await.unwrap();
    let messages: u64 = rows.values().sum();
    let fresh = store.index_status().await.unwrap();
    for s in &fresh {
        assert_eq!(s.unindexed_rows, 0, "{s:?}");
        if s.table == "messages" {
            assert_eq!(s.indexed_rows, messages, "{s:?}");
        }
    }
}
