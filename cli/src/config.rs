//! `$XDG_CONFIG_HOME/pond/config.toml` (else `~/.config/pond/config.toml`): where `pond sync`
//! imports from, and where the store lives. Flags and environment win over the file.
//!
//! ```toml
//! # The store (overridden by --data and POND_DATA): a directory, or an object store.
//! data = "/srv/pond"
//!
//! # How to reach an s3:// store (each overridden by its standard AWS variable: AWS_ENDPOINT_URL,
//! # AWS_REGION, AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_ALLOW_HTTP).
//! # Without credentials here or there, the AWS default chain applies (profile, SSO, IMDS).
//! [storage]
//! endpoint = "http://127.0.0.1:8333"   # an S3-compatible server; AWS's own when left out
//! region = "us-east-1"
//! access_key_id = "..."
//! secret_access_key = "..."
//! allow_http = true                     # the default when the endpoint is http://
//! # Any other Lance storage option, as written (gs:// and az:// settings, timeouts, ...).
//! [storage.options]
//! client_max_retries = "3"
//!
//! # Embeddings (off when absent): the model `pond sync` embeds messages with and hybrid search
//! # embeds queries with (`pond models list`; install with `pond models install NAME`).
//! [embedding]
//! model = "all-minilm-l6-v2"
//! models = "~/.local/share/pond/models"  # where models are installed (POND_MODELS wins)
//!
//! # The vector arm's IVF_PQ probes (used once 100,000 messages have vectors).
//! [search]
//! nprobes = 20
//! refine_factor = 4
//!
//! # Sources per codec. A codec listed here reads exactly these paths (`~` is the home folder);
//! # an empty list turns it off; a codec not listed keeps its harness's standard locations.
//! [sources]
//! claude-code = ["~/.claude/projects", "/mnt/old-laptop/.claude/projects"]
//! codex = ["~/.codex/sessions", "~/.codex/archived_sessions"]
//! opencode = []
//! ```

use pond_codecs::registry;
use pond_store::substrate::StorageSettings;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The file's contents.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The store's location.
    pub data: Option<String>,
    /// Source paths per codec name.
    #[serde(default)]
    pub sources: BTreeMap<String, Vec<String>>,
    /// How to reach an object store.
    #[serde(default)]
    pub storage: StorageSettings,
    /// The embedding model, when embeddings are on.
    #[serde(default)]
    pub embedding: EmbeddingConfig,
    /// How the vector arm searches.
    #[serde(default)]
    pub search: SearchConfig,
    /// Where the file was read from (not part of the file).
    #[serde(skip)]
    pub path: Option<PathBuf>,
}

/// `[embedding]`: off unless `model` is set.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbeddingConfig {
    /// The model's name (`pond models list`).
    pub model: Option<String>,
    /// Where models are installed; `POND_MODELS` wins, the default is
    /// `$XDG_DATA_HOME/pond/models`.
    pub models: Option<String>,
}

/// `[search]`: the vector arm's IVF_PQ probes.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchConfig {
    pub nprobes: Option<usize>,
    pub refine_factor: Option<u32>,
}

impl Config {
    /// The configured embedding model and the folder it is installed in, when embeddings are on.
    pub fn embedding_model(&self) -> Result<Option<(String, PathBuf)>, String> {
        let Some(model) = self.embedding.model.as_ref().filter(|m| !m.is_empty()) else {
            return Ok(None);
        };
        let from_env = std::env::var_os("POND_MODELS")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        let dir = from_env
            .or_else(|| self.embedding.models.as_deref().map(expand_home))
            .or_else(pond_embed::default_models_dir)
            .ok_or_else(|| {
                "[embedding]: no models folder: set models, POND_MODELS or XDG_DATA_HOME".to_owned()
            })?;
        Ok(Some((model.clone(), dir)))
    }

    /// The vector arm's settings, `[search]` over the defaults.
    pub fn vector_settings(&self) -> pond_store::sessions::VectorSettings {
        let mut v = pond_store::sessions::VectorSettings::default();
        if let Some(n) = self.search.nprobes {
            v.nprobes = n.max(1);
        }
        if let Some(r) = self.search.refine_factor {
            v.refine_factor = r.max(1);
        }
        v
    }
}

/// Where the configuration file is looked for.
pub fn config_path() -> Option<PathBuf> {
    let nonempty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(p) = nonempty("POND_CONFIG") {
        return Some(PathBuf::from(p));
    }
    nonempty("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| nonempty("HOME").map(|h| PathBuf::from(h).join(".config")))
        .map(|d| d.join("pond/config.toml"))
}

/// Reads the configuration: the default when there is no file, an error naming the file, line
/// and column when it does not parse, or names a codec pond does not have.
pub fn load() -> Result<Config, String> {
    match config_path() {
        Some(p) if p.is_file() => load_from(&p),
        _ => Ok(Config::default()),
    }
}

/// Reads the configuration at `path`.
pub fn load_from(path: &Path) -> Result<Config, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut config: Config = toml::from_str(&text).map_err(|e| {
        let at = e
            .span()
            .map(|s| {
                let before = &text[..s.start.min(text.len())];
                let line = before.matches('\n').count() + 1;
                let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
                format!(":{line}:{column}")
            })
            .unwrap_or_default();
        format!("{}{at}: {}", path.display(), e.message())
    })?;
    for name in config.sources.keys() {
        if registry::find(name).is_none() {
            return Err(format!(
                "{}: [sources] names unknown codec `{name}`; known: {}",
                path.display(),
                registry::names().join(", ")
            ));
        }
    }
    config.path = Some(path.to_owned());
    Ok(config)
}

/// `~` and `~/...` as the home folder; anything else as written.
pub fn expand_home(path: &str) -> PathBuf {
    let home = || std::env::var_os("HOME").filter(|h| !h.is_empty());
    match (path.strip_prefix('~'), home()) {
        (Some(""), Some(h)) => PathBuf::from(h),
        (Some(rest), Some(h)) if rest.starts_with('/') => {
            PathBuf::from(h).join(rest.trim_start_matches('/'))
        }
        _ => PathBuf::from(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, String> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("config.toml");
        std::fs::write(&p, text).unwrap();
        load_from(&p).map_err(|e| e.replace(&p.display().to_string(), "FILE"))
    }

    #[test]
    fn sources_and_data_parse() {
        let c = parse("data = \"/srv/pond\"\n[sources]\ncodex = [\"/a\", \"/b\"]\nopencode = []\n")
            .unwrap();
        assert_eq!(c.data.as_deref(), Some("/srv/pond"));
        assert_eq!(c.sources["codex"], ["/a", "/b"]);
        assert!(c.sources["opencode"].is_empty());
    }

    #[test]
    fn errors_name_file_line_and_column() {
        let e = parse("[sources]\ncodex = [\"/a\"\n").unwrap_err();
        assert!(e.starts_with("FILE:"), "{e}");
        assert!(e.contains(":2:") || e.contains(":3:"), "{e}");
        let e = parse("[sources]\nclaude-cod = [\"/a\"]\n").unwrap_err();
        assert!(e.contains("unknown codec `claude-cod`"), "{e}");
        let e = parse("dat = \"/x\"\n").unwrap_err();
        assert!(e.starts_with("FILE:1:1"), "{e}");
    }

    #[test]
    fn storage_parses_and_never_shows_its_secret() {
        let c = parse(
            "data = \"s3://pond/team\"\n[storage]\nendpoint = \"http://127.0.0.1:8333\"\nregion = \"us-east-1\"\naccess_key_id = \"AK\"\nsecret_access_key = \"hush\"\n[storage.options]\nclient_max_retries = \"2\"\n",
        )
        .unwrap();
        assert_eq!(c.storage.endpoint.as_deref(), Some("http://127.0.0.1:8333"));
        assert_eq!(c.storage.secret_access_key.as_deref(), Some("hush"));
        assert_eq!(c.storage.options["client_max_retries"], "2");
        let shown = format!("{c:?}");
        assert!(!shown.contains("hush"), "{shown}");
        let e = parse("[storage]\nsecret = \"x\"\n").unwrap_err();
        assert!(e.contains("secret"), "{e}");
    }

    #[test]
    fn embedding_and_search_parse() {
        let c = parse(
            "[embedding]\nmodel = \"all-minilm-l6-v2\"\nmodels = \"/m\"\n[search]\nnprobes = 7\n",
        )
        .unwrap();
        if std::env::var_os("POND_MODELS").is_none() {
            assert_eq!(
                c.embedding_model().unwrap(),
                Some(("all-minilm-l6-v2".to_owned(), PathBuf::from("/m")))
            );
        }
        assert_eq!(c.vector_settings().nprobes, 7);
        assert_eq!(c.vector_settings().refine_factor, 4);
        assert_eq!(parse("").unwrap().embedding_model().unwrap(), None);
        let e = parse("[embedding]\nmodle = \"x\"\n").unwrap_err();
        assert!(e.contains("modle"), "{e}");
    }

    #[test]
    fn home_expands() {
        let home = std::env::var("HOME").unwrap();
        assert_eq!(expand_home("~/x"), PathBuf::from(&home).join("x"));
        assert_eq!(expand_home("/abs"), PathBuf::from("/abs"));
        assert_eq!(expand_home("~user/x"), PathBuf::from("~user/x"));
    }
}
