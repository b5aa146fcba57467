//! `pond mcp install`: registers pond's MCP server with a harness, in the harness's own
//! configuration file, idempotently. Each harness keeps stdio MCP servers differently
//! (`../shared/research/object-store-and-mcp.md`, part C):
//! - Claude Code: `{"mcpServers": {"pond": {"type": "stdio", "command", "args", "env"}}}` in
//!   `~/.claude.json` (user scope; `$CLAUDE_CONFIG_DIR/.claude.json` when that is set, as Claude
//!   Code itself then reads) or `.mcp.json` in the project (project scope);
//! - Codex: a `[mcp_servers.pond]` table in `$CODEX_HOME/config.toml` (default `~/.codex`) or the
//!   project's `.codex/config.toml`; Codex refuses a file with the table twice, so the table is
//!   updated in place;
//! - opencode: `{"mcp": {"pond": {"type": "local", "command": [...], "enabled": true}}}` in
//!   `~/.config/opencode/opencode.json` or the project's `opencode.json`.
//!
//! Clients do not pass their environment to the servers they start, so the entry names the store
//! explicitly (`pond mcp --data URI`). Every other key of the file is kept as it was; a file that
//! does not parse is never rewritten.

use std::fmt;
use std::path::{Path, PathBuf};

/// The harnesses pond can register with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Harness {
    ClaudeCode,
    Codex,
    Opencode,
}

/// Whose configuration: the user's, or the project's (the current directory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    User,
    Project,
}

/// What an install would change, or changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The configuration file.
    pub file: PathBuf,
    /// The file's new text.
    pub text: String,
    /// The entry pond writes, as it appears in the file.
    pub entry: String,
    /// Whether the file already holds exactly this entry.
    pub unchanged: bool,
    /// Whether the file exists yet.
    pub creates: bool,
}

/// Why an install cannot be done.
#[derive(Debug)]
pub enum InstallError {
    /// The configuration file could not be read or written.
    Io {
        file: PathBuf,
        error: std::io::Error,
    },
    /// The configuration file is not what the harness reads, or pond cannot rewrite it without
    /// losing something (comments in a JSON file).
    Unrewritable { file: PathBuf, detail: String },
    /// No home directory to find the user's configuration in.
    NoHome,
}

impl fmt::Display for InstallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { file, error } => write!(f, "{}: {error}", file.display()),
            Self::Unrewritable { file, detail } => write!(f, "{}: {detail}", file.display()),
            Self::NoHome => write!(f, "no home directory: set HOME"),
        }
    }
}

impl std::error::Error for InstallError {}

/// The command a harness runs to start pond's MCP server.
#[derive(Debug, Clone)]
pub struct ServerCommand {
    /// The pond binary, by absolute path.
    pub program: String,
    /// Its arguments: `mcp --data URI`.
    pub args: Vec<String>,
    /// Environment variables the harness gives the server (an object store's settings).
    pub env: Vec<(String, EnvValue)>,
}

/// How the harness gives the server one environment variable.
#[derive(Clone, PartialEq, Eq)]
pub enum EnvValue {
    /// This value, written into the harness's file (never a secret unless the user asked).
    Value(String),
    /// The harness's own variable of the same name, passed on by reference: the value is not
    /// written (Claude Code `${NAME}`, Codex `env_vars`, opencode `{env:NAME}`).
    Inherit,
}

impl fmt::Debug for EnvValue {
    /// Never the value: it may be a secret the user asked to write.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Value(_) => write!(f, "Value(..)"),
            Self::Inherit => write!(f, "Inherit"),
        }
    }
}

impl ServerCommand {
    /// `env` as the harness's JSON object of values: a value as written, a variable passed on
    /// as `reference(name)`.
    fn env_json(
        &self,
        reference: impl Fn(&str) -> String,
    ) -> serde_json::Map<String, serde_json::Value> {
        self.env
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    EnvValue::Value(v) => v.clone(),
                    EnvValue::Inherit => reference(k),
                };
                (k.clone(), serde_json::Value::String(v))
            })
            .collect()
    }
}

/// Where a harness keeps its user configuration when its environment moves it; each `None`
/// (unset or empty) is the harness's default under the home folder.
#[derive(Debug, Clone, Copy, Default)]
pub struct HarnessDirs<'a> {
    /// `CLAUDE_CONFIG_DIR`: Claude Code then keeps `.claude.json` there, not in the home folder.
    pub claude_config_dir: Option<&'a Path>,
    /// `CODEX_HOME` (default `~/.codex`).
    pub codex_home: Option<&'a Path>,
    /// `XDG_CONFIG_HOME` (default `~/.config`), where opencode's `opencode/opencode.json` is.
    pub xdg_config_home: Option<&'a Path>,
}

/// The configuration file of `harness` at `scope`; `home` is the user's home, `cwd` the project.
pub fn config_file(
    harness: Harness,
    scope: Scope,
    home: &Path,
    cwd: &Path,
    dirs: HarnessDirs<'_>,
) -> PathBuf {
    match (harness, scope) {
        (Harness::ClaudeCode, Scope::User) => {
            dirs.claude_config_dir.unwrap_or(home).join(".claude.json")
        }
        (Harness::ClaudeCode, Scope::Project) => cwd.join(".mcp.json"),
        (Harness::Codex, Scope::User) => dirs
            .codex_home
            .map(Path::to_owned)
            .unwrap_or_else(|| home.join(".codex"))
            .join("config.toml"),
        (Harness::Codex, Scope::Project) => cwd.join(".codex").join("config.toml"),
        (Harness::Opencode, Scope::User) => dirs
            .xdg_config_home
            .map(Path::to_owned)
            .unwrap_or_else(|| home.join(".config"))
            .join("opencode")
            .join("opencode.json"),
        (Harness::Opencode, Scope::Project) => cwd.join("opencode.json"),
    }
}

/// What registering `command` in `file` (read as `existing`, `None` when absent) comes to.
pub fn plan(
    harness: Harness,
    file: &Path,
    existing: Option<&str>,
    command: &ServerCommand,
) -> Result<Plan, InstallError> {
    let unrewritable = |detail: String| InstallError::Unrewritable {
        file: file.to_owned(),
        detail,
    };
    let (text, entry) = match harness {
        Harness::Codex => codex(existing, command).map_err(unrewritable)?,
        Harness::ClaudeCode | Harness::Opencode => {
            json_config(harness, existing, command).map_err(unrewritable)?
        }
    };
    Ok(Plan {
        file: file.to_owned(),
        unchanged: existing == Some(text.as_str()),
        creates: existing.is_none(),
        text,
        entry,
    })
}

/// Writes a plan: a new file beside the old one, renamed over it, so a failure leaves the old
/// file whole.
pub fn apply(plan: &Plan) -> Result<(), InstallError> {
    let io = |error| InstallError::Io {
        file: plan.file.clone(),
        error,
    };
    if plan.unchanged {
        return Ok(());
    }
    if let Some(dir) = plan.file.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let tmp = plan.file.with_extension("pond-tmp");
    std::fs::write(&tmp, &plan.text).map_err(io)?;
    std::fs::rename(&tmp, &plan.file).map_err(io)
}

fn json_config(
    harness: Harness,
    existing: Option<&str>,
    command: &ServerCommand,
) -> Result<(String, String), String> {
    use serde_json::{Value, json};
    let mut doc: Value = match existing {
        None => json!({}),
        Some(text) => match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) if has_comments(text) => {
                return Err(format!(
                    "has comments (JSONC), which pond cannot keep when it rewrites the file ({e}); add the entry below by hand"
                ));
            }
            Err(e) => return Err(format!("is not JSON ({e}); fix or move it first")),
        },
    };
    let (outer, entry) = match harness {
        Harness::ClaudeCode => (
            "mcpServers",
            json!({"type": "stdio", "command": command.program, "args": command.args,
                "env": command.env_json(|k| format!("${{{k}}}"))}),
        ),
        _ => {
            let mut argv = vec![command.program.clone()];
            argv.extend(command.args.iter().cloned());
            let mut entry = json!({"type": "local", "command": argv, "enabled": true});
            if !command.env.is_empty() {
                entry["environment"] = Value::Object(command.env_json(|k| format!("{{env:{k}}}")));
            }
            ("mcp", entry)
        }
    };
    let Value::Object(root) = &mut doc else {
        return Err("is not a JSON object".to_owned());
    };
    if harness == Harness::Opencode && !root.contains_key("$schema") && existing.is_none() {
        root.insert("$schema".into(), json!("https://opencode.ai/config.json"));
    }
    let servers = root
        .entry(outer)
        .or_insert_with(|| Value::Object(Default::default()));
    let Value::Object(servers) = servers else {
        return Err(format!("its \"{outer}\" is not an object"));
    };
    servers.insert("pond".into(), entry.clone());
    let mut text = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
    text.push('\n');
    Ok((
        text,
        serde_json::to_string_pretty(&json!({ outer: {"pond": entry} })).unwrap_or_default(),
    ))
}

/// Whether a text that failed to parse as JSON has `//` or `/* */` comments outside strings.
fn has_comments(text: &str) -> bool {
    let mut in_string = false;
    let mut escaped = false;
    let mut prev = '\0';
    for c in text.chars() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
        } else if prev == '/' && (c == '/' || c == '*') {
            return true;
        }
        prev = c;
    }
    false
}

fn codex(existing: Option<&str>, command: &ServerCommand) -> Result<(String, String), String> {
    use toml_edit::{Array, DocumentMut, Item, Table, value};
    let mut doc: DocumentMut = existing
        .unwrap_or("")
        .parse()
        .map_err(|e| format!("is not TOML ({e}); fix or move it first"))?;
    let servers = doc
        .entry("mcp_servers")
        .or_insert_with(|| {
            let mut t = Table::new();
            t.set_implicit(true);
            Item::Table(t)
        })
        .as_table_mut()
        .ok_or("its mcp_servers is not a table")?;
    let mut args = Array::new();
    for a in &command.args {
        args.push(a.as_str());
    }
    let pond = servers
        .entry("pond")
        .or_insert_with(|| Item::Table(Table::new()))
        .as_table_mut()
        .ok_or("its mcp_servers.pond is not a table")?;
    pond["command"] = value(command.program.as_str());
    pond["args"] = value(args);
    // The variables pond sets; any other the user put there stays.
    let mut entry = format!(
        "[mcp_servers.pond]\ncommand = {:?}\nargs = {:?}",
        command.program, command.args
    );
    let values: Vec<(&String, &String)> = command
        .env
        .iter()
        .filter_map(|(k, v)| match v {
            EnvValue::Value(v) => Some((k, v)),
            EnvValue::Inherit => None,
        })
        .collect();
    let inherited: Vec<&String> = command
        .env
        .iter()
        .filter(|(_, v)| *v == EnvValue::Inherit)
        .map(|(k, _)| k)
        .collect();
    if !values.is_empty() {
        let env = pond
            .entry("env")
            .or_insert_with(|| value(toml_edit::InlineTable::new()));
        let env = env
            .as_inline_table_mut()
            .ok_or("its mcp_servers.pond.env is not an inline table")?;
        for (k, v) in &values {
            env.insert(k.as_str(), v.as_str().into());
        }
        let shown: Vec<String> = values.iter().map(|(k, v)| format!("{k} = {v:?}")).collect();
        entry.push_str(&format!("\nenv = {{ {} }}", shown.join(", ")));
    }
    if !inherited.is_empty() {
        let vars = pond
            .entry("env_vars")
            .or_insert_with(|| value(Array::new()))
            .as_array_mut()
            .ok_or("its mcp_servers.pond.env_vars is not an array")?;
        for k in &inherited {
            if !vars.iter().any(|v| v.as_str() == Some(k.as_str())) {
                vars.push(k.as_str());
            }
        }
        entry.push_str(&format!("\nenv_vars = {inherited:?}"));
    }
    Ok((doc.to_string(), entry))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd() -> ServerCommand {
        ServerCommand {
            program: "/usr/local/bin/pond".into(),
            args: vec!["mcp".into(), "--data".into(), "/data/pond".into()],
            env: Vec::new(),
        }
    }

    #[test]
    fn the_user_file_is_where_each_harness_reads_it_with_or_without_its_override() {
        let (home, cwd) = (Path::new("/h"), Path::new("/p"));
        let moved = HarnessDirs {
            claude_config_dir: Some(Path::new("/c")),
            codex_home: Some(Path::new("/x")),
            xdg_config_home: Some(Path::new("/g")),
        };
        // (harness, scope, file by default, file with every override set). Claude Code with
        // CLAUDE_CONFIG_DIR set reads `.claude.json` there and ignores the home folder's
        // (claude 2.1.197: `claude mcp list` then lists nothing else); a project's file does
        // not move with the user's.
        let cases = [
            (
                Harness::ClaudeCode,
                Scope::User,
                "/h/.claude.json",
                "/c/.claude.json",
            ),
            (
                Harness::Codex,
                Scope::User,
                "/h/.codex/config.toml",
                "/x/config.toml",
            ),
            (
                Harness::Opencode,
                Scope::User,
                "/h/.config/opencode/opencode.json",
                "/g/opencode/opencode.json",
            ),
            (
                Harness::ClaudeCode,
                Scope::Project,
                "/p/.mcp.json",
                "/p/.mcp.json",
            ),
            (
                Harness::Codex,
                Scope::Project,
                "/p/.codex/config.toml",
                "/p/.codex/config.toml",
            ),
            (
                Harness::Opencode,
                Scope::Project,
                "/p/opencode.json",
                "/p/opencode.json",
            ),
        ];
        for (harness, scope, default, with_overrides) in cases {
            let plain = config_file(harness, scope, home, cwd, HarnessDirs::default());
            assert_eq!(plain, Path::new(default), "{harness:?} {scope:?}");
            let moved = config_file(harness, scope, home, cwd, moved);
            assert_eq!(moved, Path::new(with_overrides), "{harness:?} {scope:?}");
        }
    }

    /// An object store's entry: its endpoint written, its secret passed on by name.
    fn s3_cmd() -> ServerCommand {
        ServerCommand {
            program: "/usr/local/bin/pond".into(),
            args: vec!["mcp".into(), "--data".into(), "s3://pond/team".into()],
            env: vec![
                (
                    "AWS_ENDPOINT_URL".into(),
                    EnvValue::Value("http://127.0.0.1:9000".into()),
                ),
                ("AWS_SECRET_ACCESS_KEY".into(), EnvValue::Inherit),
            ],
        }
    }

    #[test]
    fn an_object_store_entry_passes_secrets_by_name_in_every_harness() {
        let claude = plan(
            Harness::ClaudeCode,
            Path::new("/h/.claude.json"),
            None,
            &s3_cmd(),
        )
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(&claude.text).unwrap();
        let env = &v["mcpServers"]["pond"]["env"];
        assert_eq!(env["AWS_ENDPOINT_URL"], "http://127.0.0.1:9000");
        assert_eq!(env["AWS_SECRET_ACCESS_KEY"], "${AWS_SECRET_ACCESS_KEY}");
        let opencode = plan(
            Harness::Opencode,
            Path::new("/p/opencode.json"),
            None,
            &s3_cmd(),
        )
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(&opencode.text).unwrap();
        let env = &v["mcp"]["pond"]["environment"];
        assert_eq!(env["AWS_SECRET_ACCESS_KEY"], "{env:AWS_SECRET_ACCESS_KEY}");
        assert_eq!(env["AWS_ENDPOINT_URL"], "http://127.0.0.1:9000");
        let before = "[mcp_servers.pond]\ncommand = \"old\"\nenv = { KEEP = \"1\" }\nenv_vars = [\"HOME2\"]\n";
        let codex = plan(
            Harness::Codex,
            Path::new("/h/.codex/config.toml"),
            Some(before),
            &s3_cmd(),
        )
        .unwrap();
        let v: toml::Table = codex.text.parse().unwrap();
        let pond = &v["mcp_servers"]["pond"];
        assert_eq!(pond["env"]["KEEP"].as_str(), Some("1"));
        assert_eq!(
            pond["env"]["AWS_ENDPOINT_URL"].as_str(),
            Some("http://127.0.0.1:9000")
        );
        assert!(pond["env"].get("AWS_SECRET_ACCESS_KEY").is_none());
        let vars: Vec<&str> = pond["env_vars"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|v| v.as_str())
            .collect();
        assert_eq!(vars, ["HOME2", "AWS_SECRET_ACCESS_KEY"]);
        assert!(
            plan(
                Harness::Codex,
                Path::new("/h/.codex/config.toml"),
                Some(&codex.text),
                &s3_cmd()
            )
            .unwrap()
            .unchanged
        );
    }

    #[test]
    fn claude_code_keeps_every_other_key_and_is_idempotent() {
        let f = Path::new("/h/.claude.json");
        let before =
            r#"{"numStartups": 3, "mcpServers": {"other": {"command": "x"}}, "projects": {}}"#;
        let p = plan(Harness::ClaudeCode, f, Some(before), &cmd()).unwrap();
        let v: serde_json::Value = serde_json::from_str(&p.text).unwrap();
        assert_eq!(v["numStartups"], 3);
        assert_eq!(v["mcpServers"]["other"]["command"], "x");
        assert_eq!(v["mcpServers"]["pond"]["args"][2], "/data/pond");
        assert_eq!(v["mcpServers"]["pond"]["type"], "stdio");
        assert!(!p.unchanged);
        let again = plan(Harness::ClaudeCode, f, Some(&p.text), &cmd()).unwrap();
        assert!(again.unchanged);
    }

    #[test]
    fn codex_updates_its_table_in_place() {
        let f = Path::new("/h/.codex/config.toml");
        let before = "model = \"o3\" # mine\n\n[mcp_servers.pond]\ncommand = \"old\"\nenv = { A = \"1\" }\n\n[mcp_servers.other]\ncommand = \"x\"\n";
        let p = plan(Harness::Codex, f, Some(before), &cmd()).unwrap();
        assert_eq!(
            p.text.matches("[mcp_servers.pond]").count(),
            1,
            "{}",
            p.text
        );
        assert!(p.text.contains("# mine"));
        assert!(p.text.contains("[mcp_servers.other]"));
        let v: toml::Table = p.text.parse().unwrap();
        let pond = &v["mcp_servers"]["pond"];
        assert_eq!(pond["command"].as_str(), Some("/usr/local/bin/pond"));
        assert_eq!(pond["args"].as_array().unwrap().len(), 3);
        assert_eq!(
            pond["env"]["A"].as_str(),
            Some("1"),
            "keys pond does not own stay"
        );
        assert!(
            plan(Harness::Codex, f, Some(&p.text), &cmd())
                .unwrap()
                .unchanged
        );
        let fresh = plan(Harness::Codex, f, None, &cmd()).unwrap();
        assert!(fresh.creates);
        let v: toml::Table = fresh.text.parse().unwrap();
        assert_eq!(v["mcp_servers"]["pond"]["args"][0].as_str(), Some("mcp"));
    }

    #[test]
    fn opencode_gets_a_local_server_and_jsonc_is_not_rewritten() {
        let f = Path::new("/p/opencode.json");
        let p = plan(Harness::Opencode, f, None, &cmd()).unwrap();
        let v: serde_json::Value = serde_json::from_str(&p.text).unwrap();
        assert_eq!(v["mcp"]["pond"]["type"], "local");
        assert_eq!(v["mcp"]["pond"]["command"][0], "/usr/local/bin/pond");
        assert_eq!(v["mcp"]["pond"]["command"][1], "mcp");
        let jsonc = "{\n  // my servers\n  \"mcp\": {}\n}\n";
        let e = plan(Harness::Opencode, f, Some(jsonc), &cmd()).unwrap_err();
        assert!(e.to_string().contains("comments"), "{e}");
        let broken = plan(Harness::ClaudeCode, f, Some("{not json"), &cmd()).unwrap_err();
        assert!(broken.to_string().contains("not JSON"), "{broken}");
    }
}
