//! The loader and the encoder on the tiny random model (`pond_embed::tiny`): no download.

use pond_embed::catalog::Format;
use pond_embed::tiny::{TinyModel, write_tiny_model};
use pond_embed::{EmbedError, Embedder, MANIFEST_FILE, TextKind, load};
use std::path::Path;

fn tiny(dir: &Path) -> Box<dyn Embedder> {
    write_tiny_model(dir, "tiny").unwrap();
    load("tiny", dir).unwrap()
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

const TEXTS: &[&str] = &[
    "how do i run the test of one crate",
    "the build fails with error e0432",
    "ok",
    "",
    "search the session for the message about the model file and its line",
    "Wie kann ich die Tests ausführen? 日本語も",
];

#[test]
fn vectors_have_the_models_dimension_and_unit_length() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(dir.path());
    assert_eq!(m.model_id(), "tiny");
    assert_eq!(m.dimension(), 32);
    assert_eq!(m.max_tokens(), 64);
    let v = m.embed(TEXTS, TextKind::Passage).unwrap();
    assert_eq!(v.len(), TEXTS.len());
    for (t, x) in TEXTS.iter().zip(&v) {
        assert_eq!(x.len(), 32, "{t:?}");
        let norm: f32 = x.iter().map(|a| a * a).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "{t:?}: norm {norm}");
        assert!(x.iter().all(|a| a.is_finite()), "{t:?}");
    }
    // Different texts, different vectors.
    assert!(cosine(&v[0], &v[1]) < 0.999, "{}", cosine(&v[0], &v[1]));
    assert!(m.embed(&[], TextKind::Query).unwrap().is_empty());
}

#[test]
fn the_same_files_give_the_same_vectors() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let va = tiny(a.path()).embed(TEXTS, TextKind::Passage).unwrap();
    let m = tiny(b.path());
    let vb = m.embed(TEXTS, TextKind::Passage).unwrap();
    assert_eq!(va, vb, "two writes of the tiny model embed alike");
    assert_eq!(vb, m.embed(TEXTS, TextKind::Passage).unwrap());
}

#[test]
fn a_texts_vector_does_not_depend_on_its_batch() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(dir.path());
    let all = m.embed(TEXTS, TextKind::Passage).unwrap();
    let mut reversed: Vec<&str> = TEXTS.to_vec();
    reversed.reverse();
    let back = m.embed(&reversed, TextKind::Passage).unwrap();
    // Many texts: several batches of mixed lengths.
    let many: Vec<&str> = TEXTS.iter().cycle().take(300).copied().collect();
    let in_many = m.embed(&many, TextKind::Passage).unwrap();
    for (i, t) in TEXTS.iter().enumerate() {
        let alone = &m.embed(&[t], TextKind::Passage).unwrap()[0];
        for other in [
            &back[TEXTS.len() - 1 - i],
            &in_many[i],
            &in_many[i + 6 * 40],
        ] {
            let c = cosine(alone, other);
            assert!(c > 0.99999, "{t:?}: cosine {c}");
        }
        assert!(cosine(alone, &all[i]) > 0.99999, "{t:?}");
    }
}

#[test]
fn text_past_the_token_limit_is_not_seen() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(dir.path());
    // Each of these words is one token; 64 tokens hold [CLS], 62 words, [SEP].
    let head: Vec<&str> = ["the", "session", "search", "pond"]
        .iter()
        .cycle()
        .take(70)
        .copied()
        .collect();
    let a = format!("{} model test rust", head.join(" "));
    let b = format!("{} error file line code build", head.join(" "));
    let v = m
        .embed(&[&a, &b, &head[..40].join(" ")], TextKind::Passage)
        .unwrap();
    assert!(cosine(&v[0], &v[1]) > 0.99999, "past the limit is cut");
    assert!(cosine(&v[0], &v[2]) < 0.99999, "within the limit is seen");
}

#[test]
fn prefixes_follow_the_text_kind() {
    let dir = tempfile::tempdir().unwrap();
    let plain = tiny(dir.path());
    let q = plain.embed(&["run the test"], TextKind::Query).unwrap();
    let p = plain.embed(&["run the test"], TextKind::Passage).unwrap();
    assert_eq!(q, p, "no prefixes: a query embeds as a passage");
    TinyModel {
        query_prefix: "query: ".into(),
        passage_prefix: "passage: ".into(),
        ..TinyModel::default()
    }
    .write(dir.path(), "prefixed")
    .unwrap();
    let m = load("prefixed", dir.path()).unwrap();
    let q = m.embed(&["run the test"], TextKind::Query).unwrap();
    let p = m.embed(&["run the test"], TextKind::Passage).unwrap();
    assert!(cosine(&q[0], &p[0]) < 0.9999, "prefixes change the vector");
    let written = plain
        .embed(&["query: run the test"], TextKind::Passage)
        .unwrap();
    assert!(
        cosine(&q[0], &written[0]) > 0.99999,
        "the prefix is the text's start"
    );
}

fn corrupt_path(e: EmbedError) -> String {
    match e {
        EmbedError::Corrupt { path, detail } => {
            assert!(!detail.is_empty());
            path
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[test]
fn a_changed_file_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_tiny_model(dir.path(), "tiny").unwrap();
    for file in ["model.safetensors", "tokenizer.json", "config.json"] {
        let path = model.join(file);
        let good = std::fs::read(&path).unwrap();
        // One byte changed: the size holds, the SHA-256 does not.
        let mut bad = good.clone();
        let at = bad.len() / 2;
        bad[at] ^= 0x20;
        std::fs::write(&path, &bad).unwrap();
        let e = load("tiny", dir.path()).err().expect("refused");
        assert!(e.to_string().contains("SHA-256"), "{e}");
        assert!(corrupt_path(e).ends_with(file));
        // Cut short.
        std::fs::write(&path, &good[..good.len() - 1]).unwrap();
        let e = load("tiny", dir.path()).err().expect("refused");
        assert!(e.to_string().contains("bytes, expected"), "{e}");
        assert!(corrupt_path(e).ends_with(file));
        std::fs::remove_file(&path).unwrap();
        assert!(corrupt_path(load("tiny", dir.path()).err().expect("refused")).ends_with(file));
        std::fs::write(&path, &good).unwrap();
        load("tiny", dir.path()).unwrap();
    }
}

/// Files that pass their hashes (the marker names their new ones) but do not hold a model.
#[test]
fn a_file_that_is_not_a_model_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_tiny_model(dir.path(), "tiny").unwrap();
    let cases: &[(&str, &[u8], &str)] = &[
        ("config.json", b"{\"hidden_size\": 32", "config.json"),
        (
            "config.json",
            br#"{"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128, "max_position_embeddings": 64, "hidden_act": "relu"}"#,
            "config.json",
        ),
        ("model.safetensors", b"not safetensors at all", "model.safetensors"),
        ("tokenizer.json", b"{\"model\": 1}", "tokenizer.json"),
    ];
    for &(file, bytes, named) in cases {
        let path = model.join(file);
        let good = std::fs::read(&path).unwrap();
        std::fs::write(&path, bytes).unwrap();
        rewrite_marker(&model);
        let e = load("tiny", dir.path()).err().expect("refused");
        let msg = e.to_string();
        assert!(corrupt_path(e).ends_with(named), "{file}: {msg}");
        std::fs::write(&path, &good).unwrap();
        rewrite_marker(&model);
    }
    load("tiny", dir.path()).unwrap();
}

/// Updates the marker's sizes and hashes to the files as they are now.
fn rewrite_marker(model: &Path) {
    let path = model.join(MANIFEST_FILE);
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    for f in m["files"].as_array_mut().unwrap() {
        let file = model.join(f["file"].as_str().unwrap());
        f["size"] = std::fs::metadata(&file).unwrap().len().into();
        f["sha256"] = pond_embed::install::sha256_of(&file).unwrap().into();
    }
    std::fs::write(&path, serde_json::to_vec(&m).unwrap()).unwrap();
}

#[test]
fn a_folder_without_its_marker_is_not_installed() {
    let dir = tempfile::tempdir().unwrap();
    let e = load("tiny", dir.path()).err().expect("refused");
    assert!(matches!(e, EmbedError::NotInstalled { .. }), "{e:?}");
    let model = write_tiny_model(dir.path(), "tiny").unwrap();
    std::fs::remove_file(model.join(MANIFEST_FILE)).unwrap();
    let e = load("tiny", dir.path()).err().expect("refused");
    assert!(matches!(e, EmbedError::NotInstalled { .. }), "{e:?}");
    assert!(e.to_string().contains("did not finish"), "{e}");
    assert!(!pond_embed::is_installed("tiny", dir.path()));
}

#[test]
fn a_marker_naming_another_model_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    write_tiny_model(dir.path(), "tiny").unwrap();
    std::fs::rename(dir.path().join("tiny"), dir.path().join("other")).unwrap();
    let e = load("other", dir.path()).err().expect("refused");
    assert!(corrupt_path(e).ends_with(MANIFEST_FILE));
    // A catalogue name with a marker that is not pond's pin for it.
    std::fs::rename(
        dir.path().join("other"),
        dir.path().join("all-minilm-l6-v2"),
    )
    .unwrap();
    let p = dir.path().join("all-minilm-l6-v2").join(MANIFEST_FILE);
    let text = std::fs::read_to_string(&p).unwrap();
    std::fs::write(&p, text.replace("\"tiny\"", "\"all-minilm-l6-v2\"")).unwrap();
    let e = load("all-minilm-l6-v2", dir.path()).err().expect("refused");
    assert!(e.to_string().contains("catalogue"), "{e}");
}

/// The 4-bit `E5S1` loader (multilingual-e5-small's) on the tiny model: the same weights as the
/// safetensors model, quantized, give nearly the same vectors, each nearest its own text.
#[test]
fn the_4_bit_format_embeds_as_the_dense_one() {
    let dir = tempfile::tempdir().unwrap();
    let dense = tiny(dir.path());
    TinyModel {
        format: Format::E5s1Q4,
        ..TinyModel::default()
    }
    .write(dir.path(), "tiny-q4")
    .unwrap();
    let q4 = load("tiny-q4", dir.path()).unwrap();
    assert_eq!(q4.dimension(), 32);
    let a = dense.embed(TEXTS, TextKind::Passage).unwrap();
    let b = q4.embed(TEXTS, TextKind::Passage).unwrap();
    for (i, t) in TEXTS.iter().enumerate() {
        let own = cosine(&a[i], &b[i]);
        assert!(own > 0.9, "{t:?}: {own}");
        for j in (0..TEXTS.len()).filter(|&j| j != i && TEXTS[j] != TEXTS[i]) {
            assert!(own > cosine(&a[j], &b[i]), "{t:?} is nearer {:?}", TEXTS[j]);
        }
        let norm: f32 = b[i].iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5);
    }
}

#[test]
fn a_cut_or_damaged_4_bit_file_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let model = TinyModel {
        format: Format::E5s1Q4,
        ..TinyModel::default()
    }
    .write(dir.path(), "tiny-q4")
    .unwrap();
    let path = model.join("e5-small-q4.bin");
    let good = std::fs::read(&path).unwrap();
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (good[..good.len() / 2].to_vec(), "do not fit the file"),
        (good[..40].to_vec(), "run past the end"),
        ([b"E5S2", &good[4..]].concat(), "magic"),
    ];
    for (bytes, says) in cases {
        std::fs::write(&path, &bytes).unwrap();
        rewrite_marker(&model);
        let e = load("tiny-q4", dir.path()).err().expect("refused");
        let msg = e.to_string();
        assert!(msg.contains(says), "{msg}");
        assert!(corrupt_path(e).ends_with("e5-small-q4.bin"), "{msg}");
    }
}
