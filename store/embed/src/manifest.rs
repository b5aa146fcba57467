//! An installed model's marker, `pond-model.json`: what the folder holds (format, dimension,
//! token limit, prefixes) and every file with its size and SHA-256. It is the last file an
//! install writes, inside the staging folder, so a folder that has it was renamed into place
//! whole; the files are checked against it (or, for a catalogue model, against pond's source) at
//! every load.

use crate::EmbedError;
use crate::catalog::{self, Format, ModelSpec};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::Path;

/// The marker's file name inside a model's folder.
pub const MANIFEST_FILE: &str = "pond-model.json";

/// The marker's contents.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub name: String,
    pub format: String,
    pub dimension: usize,
    pub max_tokens: usize,
    #[serde(default)]
    pub query_prefix: String,
    #[serde(default)]
    pub passage_prefix: String,
    pub files: Vec<FileEntry>,
}

/// One file of an installed model.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileEntry {
    pub file: String,
    pub size: u64,
    pub sha256: String,
}

impl Manifest {
    /// The marker a catalogue model's install writes.
    pub fn for_spec(spec: &ModelSpec) -> Self {
        Self {
            name: spec.name.to_owned(),
            format: spec.format.as_str().to_owned(),
            dimension: spec.dimension,
            max_tokens: spec.max_tokens,
            query_prefix: spec.query_prefix.to_owned(),
            passage_prefix: spec.passage_prefix.to_owned(),
            files: spec
                .members()
                .map(|m| FileEntry {
                    file: m.file.to_owned(),
                    size: m.size,
                    sha256: m.sha256.to_owned(),
                })
                .collect(),
        }
    }

    /// Writes it to `dir` (flushed to disk before returning).
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        let path = dir.join(MANIFEST_FILE);
        let text = serde_json::to_string_pretty(self).expect("a manifest is JSON");
        let mut f = std::fs::File::create(&path)?;
        std::io::Write::write_all(&mut f, text.as_bytes())?;
        f.sync_all()
    }

    /// The format it names.
    pub fn format(&self, path: &Path) -> Result<Format, EmbedError> {
        Format::parse(&self.format).ok_or_else(|| EmbedError::Corrupt {
            path: path.display().to_string(),
            detail: format!("format: unknown model format `{}`", self.format),
        })
    }
}

/// Reads the marker of `<models_dir>/<name>/` and checks every file it lists (size, then
/// SHA-256). For a model of the catalogue, the marker must agree with pond's source, and the
/// files are checked against the source's sizes and hashes, so an edited marker cannot make a
/// changed file pass.
pub fn read_and_check(name: &str, dir: &Path) -> Result<Manifest, EmbedError> {
    let expected = read_expected(name, dir)?;
    for entry in &expected.files {
        check_file(&dir.join(&entry.file), entry.size, &entry.sha256)?;
    }
    Ok(expected)
}

/// As [`read_and_check`], but checking only each file's size: cheap, for listing.
pub fn read_and_check_sizes(name: &str, dir: &Path) -> Result<(), EmbedError> {
    for entry in &read_expected(name, dir)?.files {
        let path = dir.join(&entry.file);
        let size = std::fs::metadata(&path)
            .map_err(|e| corrupt(&path, e.to_string()))?
            .len();
        if size != entry.size {
            return Err(corrupt(
                &path,
                format!("{size} bytes, expected {}", entry.size),
            ));
        }
    }
    Ok(())
}

/// The marker, checked against the folder's name and, for a catalogue model, pond's pin.
fn read_expected(name: &str, dir: &Path) -> Result<Manifest, EmbedError> {
    let path = dir.join(MANIFEST_FILE);
    if !dir.is_dir() {
        return Err(EmbedError::NotInstalled {
            model: name.to_owned(),
            detail: format!("{} does not exist", dir.display()),
        });
    }
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(EmbedError::NotInstalled {
                model: name.to_owned(),
                detail: format!(
                    "{} has no {MANIFEST_FILE}: the install did not finish",
                    dir.display()
                ),
            });
        }
        Err(e) => return Err(corrupt(&path, e.to_string())),
    };
    let manifest: Manifest =
        serde_json::from_str(&text).map_err(|e| corrupt(&path, e.to_string()))?;
    if manifest.name != name {
        return Err(corrupt(
            &path,
            format!("name: `{}`, but the folder is `{name}`", manifest.name),
        ));
    }
    let expected = match catalog::find(name) {
        Some(spec) => {
            let pinned = Manifest::for_spec(spec);
            if serde_json::to_value(&pinned).ok() != serde_json::to_value(&manifest).ok() {
                return Err(corrupt(
                    &path,
                    "does not match pond's catalogue entry for this model; reinstall it".to_owned(),
                ));
            }
            pinned
        }
        None => manifest,
    };
    Ok(expected)
}

/// Checks one file's size and SHA-256, naming it when either differs.
pub fn check_file(path: &Path, size: u64, sha256: &str) -> Result<(), EmbedError> {
    let meta = std::fs::metadata(path).map_err(|e| corrupt(path, e.to_string()))?;
    if meta.len() != size {
        return Err(corrupt(
            path,
            format!("{} bytes, expected {size}", meta.len()),
        ));
    }
    let got = sha256_file(path).map_err(|e| corrupt(path, e.to_string()))?;
    if got != sha256 {
        return Err(corrupt(path, format!("SHA-256 {got}, expected {sha256}")));
    }
    Ok(())
}

/// The SHA-256 of a file, lower-case hex.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex(&h.finalize()))
}

/// Lower-case hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(crate) fn corrupt(path: &Path, detail: String) -> EmbedError {
    EmbedError::Corrupt {
        path: path.display().to_string(),
        detail,
    }
}
