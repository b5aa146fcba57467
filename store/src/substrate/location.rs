//! Where a store is and how to reach it (lance-chokepoints-storage): a URI and the storage
//! options Lance's object-store layer gets with every open and every create (endpoint, region,
//! credentials). pond always hands them to Lance explicitly, never through the environment, and
//! never prints a secret: `Debug` and [`Location::describe`] leave secret values out.

use super::Backend;
use std::collections::{BTreeMap, HashMap};
use std::fmt;

/// Lance storage options (object_store's keys: `aws_endpoint`, `aws_region`, ...), as given to
/// every dataset open and create. Secret values never appear in `Debug`.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct StorageOptions(BTreeMap<String, String>);

impl StorageOptions {
    /// No options.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `key` to `value`.
    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.0.insert(key.into(), value.into());
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The keys set, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// Whether the value of `key` is a secret (a key, a token, a password): never printed, never
    /// logged. Errs on the side of secrecy: any key naming a secret, a token, a password, a SAS
    /// or an account key counts.
    pub fn is_secret(key: &str) -> bool {
        let k = key.to_ascii_lowercase();
        [
            "secret",
            "token",
            "password",
            "sas",
            "account_key",
            "service_account_key",
        ]
        .iter()
        .any(|s| k.contains(s))
    }

    /// The endpoint these options send requests to, when they name one (for messages).
    pub fn endpoint(&self) -> Option<&str> {
        [
            "aws_endpoint_url_s3",
            "aws_endpoint",
            "aws_endpoint_url",
            "endpoint",
            "azure_storage_endpoint",
            "google_storage_endpoint",
        ]
        .iter()
        .find_map(|k| self.get(k))
    }

    /// The map Lance takes.
    pub(crate) fn to_lance(&self) -> HashMap<String, String> {
        self.0.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }
}

impl fmt::Debug for StorageOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.iter().map(|(k, v)| {
                let shown = if Self::is_secret(k) {
                    "<secret>"
                } else {
                    v.as_str()
                };
                (k, shown)
            }))
            .finish()
    }
}

/// The settings a person gives for an object store (`[storage]` in config.toml, or the standard
/// AWS variables), before they become Lance's options for one URI. `Debug` never shows a secret.
#[derive(Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageSettings {
    /// Where requests go (an S3-compatible server's URL); the provider's own when absent.
    pub endpoint: Option<String>,
    /// The region requests are signed for.
    pub region: Option<String>,
    /// A static credential's key id.
    pub access_key_id: Option<String>,
    /// Its secret.
    pub secret_access_key: Option<String>,
    /// A temporary credential's session token.
    pub session_token: Option<String>,
    /// Whether plain `http://` is allowed. Absent: allowed exactly when the endpoint says `http://`.
    pub allow_http: Option<bool>,
    /// Any other Lance storage option, passed as written (`gs://` and `az://` settings, ...).
    #[serde(default)]
    pub options: BTreeMap<String, String>,
}

impl fmt::Debug for StorageSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secret = |v: &Option<String>| v.as_ref().map(|_| "<secret>");
        f.debug_struct("StorageSettings")
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &secret(&self.secret_access_key))
            .field("session_token", &secret(&self.session_token))
            .field("allow_http", &self.allow_http)
            .field("options", &StorageOptions(self.options.clone()))
            .finish()
    }
}

impl StorageSettings {
    /// Lance's options for a store at `uri`: none for a local one; for `s3://`, the settings
    /// under object_store's own key names; for any object store, `allow_http` and `options` as
    /// written. The S3 settings reach only `s3://` stores (a region in the environment does
    /// not stop a local store from opening). Half a key pair is an error.
    pub fn options_for(&self, uri: &str) -> Result<StorageOptions, String> {
        let mut out = StorageOptions::new();
        if Backend::of(uri) == Backend::Local {
            return Ok(out);
        }
        let s3 = uri.starts_with("s3://");
        if s3 {
            if self.access_key_id.is_some() != self.secret_access_key.is_some() {
                return Err(
                    "an access key id and its secret access key come together; one is missing"
                        .to_owned(),
                );
            }
            let pairs = [
                ("aws_endpoint", &self.endpoint),
                ("aws_region", &self.region),
                ("aws_access_key_id", &self.access_key_id),
                ("aws_secret_access_key", &self.secret_access_key),
                ("aws_session_token", &self.session_token),
            ];
            for (key, value) in pairs {
                if let Some(v) = value {
                    out.insert(key, v.clone());
                }
            }
        }
        let http_endpoint = s3
            && self
                .endpoint
                .as_deref()
                .is_some_and(|e| e.starts_with("http://"));
        if let Some(allow) = self.allow_http.or(http_endpoint.then_some(true)) {
            out.insert("allow_http", allow.to_string());
        }
        for (k, v) in &self.options {
            out.insert(k.clone(), v.clone());
        }
        Ok(out)
    }
}

/// Where a store is: its URI (a directory, `file://...`, `s3://bucket/prefix`, `gs://...`,
/// `az://...`) and the storage options that reach it.
#[derive(Clone, PartialEq, Eq)]
pub struct Location {
    uri: String,
    options: StorageOptions,
}

impl fmt::Debug for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Location")
            .field("uri", &self.uri)
            .field("options", &self.options)
            .finish()
    }
}

impl Location {
    /// The store at `uri`, reached with `options`.
    pub fn new(uri: &str, options: StorageOptions) -> Self {
        let trimmed = uri.trim_end_matches('/');
        Self {
            uri: if trimmed.is_empty() { uri } else { trimmed }.to_owned(),
            options,
        }
    }

    /// A store at `uri` with no storage options (a local directory).
    pub fn local(uri: &str) -> Self {
        Self::new(uri, StorageOptions::new())
    }

    /// The URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The storage options.
    pub fn options(&self) -> &StorageOptions {
        &self.options
    }

    /// Local files or an object store.
    pub fn backend(&self) -> Backend {
        Backend::of(&self.uri)
    }

    /// The directory of a local store (a path, or a `file://` URI); `None` for an object store.
    pub fn local_path(&self) -> Option<std::path::PathBuf> {
        (self.backend() == Backend::Local).then(|| {
            std::path::PathBuf::from(self.uri.strip_prefix("file://").unwrap_or(&self.uri))
        })
    }

    /// The location `segments` below this one, reached with the same options.
    pub(crate) fn join(&self, segments: &[&str]) -> Self {
        let mut uri = self.uri.clone();
        for s in segments {
            uri.push('/');
            uri.push_str(s);
        }
        Self {
            uri,
            options: self.options.clone(),
        }
    }

    /// The URI for messages, with the endpoint of an object store when one is configured;
    /// never a secret (a URI's user information and query are left out).
    pub fn describe(&self) -> String {
        let uri = redact_uri(&self.uri);
        match self.options.endpoint() {
            Some(e) => format!("{uri} at {}", redact_uri(e)),
            None => uri,
        }
    }
}

/// `uri` without user information (`user:password@`) or a query (`?sig=...`).
fn redact_uri(uri: &str) -> String {
    let Some((scheme, rest)) = uri.split_once("://") else {
        return uri.to_owned();
    };
    let rest = rest.split(['?', '#']).next().unwrap_or("");
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let host = authority.rsplit('@').next().unwrap_or(authority);
    format!("{scheme}://{host}{path}")
}

/// Removes, from this process's environment, the variables Lance would read as storage settings
/// without pond meaning them: the bare names object_store accepts as aliases (`ENDPOINT`,
/// `REGION`, `TOKEN`, `BUCKET`, `TIMEOUT`, `PROXY_URL`, ...). Lance merges every environment
/// variable whose lower-cased name parses as an S3, GCS or Azure key into a store's options, so
/// a stray `ENDPOINT` would send requests elsewhere and a stray `TOKEN` would be signed in as a
/// session token. The providers' own variables (`AWS_*`, `GOOGLE_*`, `AZURE_*`) are kept: they
/// are the standard ways to configure each. Returns the names removed.
///
/// # Safety
/// Changes the process environment: call it while no other thread runs (first thing in `main`).
pub unsafe fn remove_stray_storage_variables() -> Vec<String> {
    let stray: Vec<String> = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| is_stray_storage_variable(k))
        .collect();
    for k in &stray {
        // SAFETY: the caller guarantees no other thread reads or writes the environment.
        unsafe { std::env::remove_var(k) };
    }
    stray
}

/// Whether Lance would read the variable `name` as a storage option though it is not one of
/// the providers' own (`AWS_*`, `GOOGLE_*`, `AZURE_*`).
pub fn is_stray_storage_variable(name: &str) -> bool {
    use object_store::aws::AmazonS3ConfigKey;
    use object_store::azure::AzureConfigKey;
    use object_store::gcp::GoogleConfigKey;
    use std::str::FromStr;
    let lower = name.to_ascii_lowercase();
    if ["aws_", "google_", "azure_"]
        .iter()
        .any(|p| lower.starts_with(p))
    {
        return false;
    }
    AmazonS3ConfigKey::from_str(&lower).is_ok()
        || GoogleConfigKey::from_str(&lower).is_ok()
        || AzureConfigKey::from_str(&lower).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s3(endpoint: &str) -> StorageSettings {
        StorageSettings {
            endpoint: Some(endpoint.into()),
            region: Some("us-east-1".into()),
            access_key_id: Some("AKID".into()),
            secret_access_key: Some("very-secret".into()),
            ..Default::default()
        }
    }

    #[test]
    fn s3_settings_become_object_store_keys() {
        let o = s3("http://127.0.0.1:9000").options_for("s3://b/p").unwrap();
        assert_eq!(o.get("aws_endpoint"), Some("http://127.0.0.1:9000"));
        assert_eq!(o.get("aws_region"), Some("us-east-1"));
        assert_eq!(o.get("aws_access_key_id"), Some("AKID"));
        assert_eq!(o.get("aws_secret_access_key"), Some("very-secret"));
        // An http:// endpoint allows http unless told otherwise.
        assert_eq!(o.get("allow_http"), Some("true"));
        let mut no = s3("http://127.0.0.1:9000");
        no.allow_http = Some(false);
        assert_eq!(
            no.options_for("s3://b").unwrap().get("allow_http"),
            Some("false")
        );
        let o = s3("https://s3.example").options_for("s3://b").unwrap();
        assert_eq!(o.get("allow_http"), None);
    }

    #[test]
    fn s3_settings_reach_s3_only_and_half_a_key_is_named() {
        let gs = s3("http://x").options_for("gs://b/p").unwrap();
        assert_eq!(gs.get("aws_endpoint"), None);
        assert_eq!(gs.get("allow_http"), None);
        assert!(s3("http://x").options_for("/srv/pond").unwrap().is_empty());
        let mut half = s3("http://x");
        half.secret_access_key = None;
        let e = half.options_for("s3://b").unwrap_err();
        assert!(e.contains("secret access key"), "{e}");
        // Only raw options: any scheme.
        let raw = StorageSettings {
            options: [("google_service_account".to_owned(), "/k.json".to_owned())].into(),
            ..Default::default()
        };
        assert_eq!(
            raw.options_for("gs://b")
                .unwrap()
                .get("google_service_account"),
            Some("/k.json")
        );
    }

    #[test]
    fn secrets_never_show() {
        let settings = s3("http://127.0.0.1:9000");
        let shown = format!("{settings:?}");
        assert!(!shown.contains("very-secret"), "{shown}");
        let location = Location::new("s3://b/p/", settings.options_for("s3://b/p").unwrap());
        for shown in [format!("{location:?}"), location.describe()] {
            assert!(!shown.contains("very-secret"), "{shown}");
        }
        assert_eq!(location.uri(), "s3://b/p");
        assert_eq!(location.describe(), "s3://b/p at http://127.0.0.1:9000");
        assert_eq!(
            redact_uri("az://user:pw@acct/c?sig=abc"),
            "az://acct/c".to_owned()
        );
        assert!(StorageOptions::is_secret("azure_storage_sas_key"));
        assert!(!StorageOptions::is_secret("aws_access_key_id"));
    }

    #[test]
    fn stray_variables_are_the_bare_aliases() {
        for stray in [
            "ENDPOINT",
            "REGION",
            "TOKEN",
            "BUCKET",
            "TIMEOUT",
            "PROXY_URL",
        ] {
            assert!(is_stray_storage_variable(stray), "{stray}");
        }
        for kept in [
            "AWS_ENDPOINT_URL",
            "AWS_SECRET_ACCESS_KEY",
            "GOOGLE_SERVICE_ACCOUNT",
            "AZURE_STORAGE_ACCOUNT_NAME",
            "HOME",
            "POND_DATA",
            "PATH",
        ] {
            assert!(!is_stray_storage_variable(kept), "{kept}");
        }
    }

    #[test]
    fn joined_locations_keep_their_options() {
        let root = Location::new("s3://b/p", s3("http://e").options_for("s3://b").unwrap());
        let child = root.join(&["ns", "acme"]);
        assert_eq!(child.uri(), "s3://b/p/ns/acme");
        assert_eq!(child.options(), root.options());
        assert_eq!(Location::local("/").uri(), "/");
    }
}
