//! How pond reaches an object store: the standard AWS variables, else `[storage]` in
//! config.toml (the environment wins, as it does for every setting), made into the storage
//! options Lance gets explicitly with every open (lance-chokepoints-storage).

use pond_store::substrate::{Location, StorageSettings};

/// One setting's standard variables, first found wins.
const ENDPOINT: &[&str] = &["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"];
const REGION: &[&str] = &["AWS_REGION", "AWS_DEFAULT_REGION"];
const ALLOW_HTTP: &str = "AWS_ALLOW_HTTP";
/// The credential's variables: taken together from the environment, or together from the file.
const KEY_ID: &str = "AWS_ACCESS_KEY_ID";
const SECRET: &str = "AWS_SECRET_ACCESS_KEY";
const TOKEN: &str = "AWS_SESSION_TOKEN";

/// Every variable this module reads, with whether its value is a secret.
pub const VARIABLES: &[(&str, bool)] = &[
    ("AWS_ENDPOINT_URL_S3", false),
    ("AWS_ENDPOINT_URL", false),
    ("AWS_REGION", false),
    ("AWS_DEFAULT_REGION", false),
    (ALLOW_HTTP, false),
    (KEY_ID, true),
    (SECRET, true),
    (TOKEN, true),
];

/// The settings for `uri`: from the environment (`env` looks a variable up), else from the
/// file's `[storage]`.
pub fn settings(
    file: &StorageSettings,
    env: impl Fn(&str) -> Option<String>,
) -> Result<StorageSettings, String> {
    let var = |k: &str| env(k).filter(|v| !v.is_empty());
    let first = |names: &[&str]| names.iter().find_map(|k| var(k));
    let allow_http = match var(ALLOW_HTTP) {
        Some(v) => Some(match v.to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => true,
            "0" | "false" | "no" | "off" => false,
            _ => return Err(format!("{ALLOW_HTTP}={v:?} is not true or false")),
        }),
        None => file.allow_http,
    };
    let (access_key_id, secret_access_key, session_token) = if var(KEY_ID).is_some() {
        (var(KEY_ID), var(SECRET), var(TOKEN))
    } else {
        (
            file.access_key_id.clone(),
            file.secret_access_key.clone(),
            file.session_token.clone(),
        )
    };
    Ok(StorageSettings {
        endpoint: first(ENDPOINT).or_else(|| file.endpoint.clone()),
        region: first(REGION).or_else(|| file.region.clone()),
        access_key_id,
        secret_access_key,
        session_token,
        allow_http,
        options: file.options.clone(),
    })
}

/// The store at `uri` with the storage options its scheme takes from `settings`.
pub fn location(uri: &str, settings: &StorageSettings) -> Result<Location, String> {
    let options = settings
        .options_for(uri)
        .map_err(|e| format!("storage settings for {uri}: {e}"))?;
    Ok(Location::new(uri, options))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    fn file() -> StorageSettings {
        StorageSettings {
            endpoint: Some("http://file:1".into()),
            region: Some("file-region".into()),
            access_key_id: Some("FILEKEY".into()),
            secret_access_key: Some("filesecret".into()),
            ..Default::default()
        }
    }

    #[test]
    fn the_environment_wins_and_a_key_pair_is_never_mixed() {
        let s = settings(&file(), env(&[])).unwrap();
        assert_eq!(s.endpoint.as_deref(), Some("http://file:1"));
        assert_eq!(s.access_key_id.as_deref(), Some("FILEKEY"));
        let s = settings(
            &file(),
            env(&[
                ("AWS_ENDPOINT_URL", "http://env:2"),
                ("AWS_ENDPOINT_URL_S3", "http://env-s3:3"),
                ("AWS_DEFAULT_REGION", "env-region"),
                ("AWS_ACCESS_KEY_ID", "ENVKEY"),
                ("AWS_ALLOW_HTTP", "false"),
            ]),
        )
        .unwrap();
        assert_eq!(s.endpoint.as_deref(), Some("http://env-s3:3"));
        assert_eq!(s.region.as_deref(), Some("env-region"));
        assert_eq!(s.access_key_id.as_deref(), Some("ENVKEY"));
        // The environment's key id without its secret: the file's secret is not paired with it.
        assert_eq!(s.secret_access_key, None);
        assert_eq!(s.allow_http, Some(false));
        let e = settings(&file(), env(&[("AWS_ALLOW_HTTP", "maybe")])).unwrap_err();
        assert!(e.contains("AWS_ALLOW_HTTP"), "{e}");
    }

    #[test]
    fn s3_settings_reach_only_s3_stores() {
        let s = settings(&file(), env(&[])).unwrap();
        let s3 = location("s3://b/p", &s).unwrap();
        assert_eq!(s3.options().get("aws_endpoint"), Some("http://file:1"));
        assert_eq!(s3.options().get("allow_http"), Some("true"));
        let local = location("/srv/pond", &s).unwrap();
        assert!(local.options().is_empty(), "{local:?}");
        let gs = location("gs://b/p", &s).unwrap();
        assert_eq!(gs.options().get("aws_endpoint"), None);
    }
}
