//! The real harness CLIs as oracles (`../shared/oracle`): does the real harness accept a session
//! pond wrote, and what history does it then send to a (mock, loopback-only) model?
//!
//! [`Oracle::locate`] finds the scripts and the installed CLIs; when either is missing it returns
//! the reason, which a test prints before it skips (a skip is never silent). [`Oracle::run`] runs
//! one harness on one session file and parses the script's JSON report.

use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The oracle scripts and where their CLIs are installed.
#[derive(Debug, Clone)]
pub struct Oracle {
    scripts: PathBuf,
    home: PathBuf,
}

/// One entry of the history the harness sent to the model, normalized across wire formats.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Turn {
    /// `user`, `assistant` or `tool`.
    pub role: String,
    /// Block kinds in order: `text`, `image`, `file`, `thinking`, `tool_use`, `tool_result`, `summary`.
    pub kinds: Vec<String>,
}

/// What an oracle run reported.
#[derive(Debug, Clone)]
pub struct Report {
    /// Whether the harness accepted the session and sent it to the model.
    pub accepted: bool,
    /// The script's exit code: 0 accepted, 3 rejected, 4 nothing captured.
    pub exit_code: i32,
    /// The history the harness sent (the ping prompt and injected items left out).
    pub history: Vec<Turn>,
    /// Why a run was rejected, per the script.
    pub reasons: Vec<String>,
    /// The whole report.
    pub raw: Value,
}

impl Report {
    /// How many text blocks of `role` in the request Claude Code made up itself, read from the
    /// request the mock model received: when a transcript ends on an interrupted turn (its last
    /// message a tool result) it adds the user text "Continue from where you left off.", and when
    /// it ends on an unanswered prompt the assistant text "No response requested." (the ping
    /// follows). Neither is session data.
    pub fn claude_injected(&self, role: &str) -> usize {
        let injected = match role {
            "user" => "Continue from where you left off.",
            "assistant" => "No response requested.",
            _ => return 0,
        };
        let Some(path) = self.raw.get("request_path").and_then(Value::as_str) else {
            return 0;
        };
        let Ok(text) = std::fs::read_to_string(path) else {
            return 0;
        };
        let Ok(request) = serde_json::from_str::<Value>(&text) else {
            return 0;
        };
        let body = request.get("body").unwrap_or(&request);
        body.get("messages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some(role))
            .filter_map(|m| m.get("content").and_then(Value::as_array))
            .flatten()
            .filter(|b| b.get("text").and_then(Value::as_str) == Some(injected))
            .count()
    }

    /// How many blocks of `kind` the history holds.
    pub fn count(&self, kind: &str) -> usize {
        self.history
            .iter()
            .flat_map(|t| &t.kinds)
            .filter(|k| *k == kind)
            .count()
    }
}

/// Where `../shared/oracle/install.sh` put the pinned CLIs (`POND_ORACLE_HOME`, else
/// `~/.cache/pond-oracle`), once `harness`'s is there (`<home>/<harness>/node_modules`).
pub fn install_home(harness: &str) -> Result<PathBuf, String> {
    let home = match std::env::var_os("POND_ORACLE_HOME") {
        Some(h) => PathBuf::from(h),
        None => PathBuf::from(std::env::var_os("HOME").ok_or("HOME is not set")?)
            .join(".cache/pond-oracle"),
    };
    if !home.join(harness).join("node_modules").is_dir() {
        return Err(format!(
            "the {harness} CLI is not installed under {} (run ../shared/oracle/install.sh; scripts/test does)",
            home.display()
        ));
    }
    Ok(home)
}

impl Oracle {
    /// Whether `harness` has an offline (`--offline-check`) mode: all but Claude Code.
    pub fn has_offline(harness: &str) -> bool {
        harness != "claude-code"
    }

    /// The oracle for `harness` (`claude-code`, `codex`, `opencode`, `pi`), or why it cannot run.
    /// `POND_ORACLE_HOME` overrides the install folder (default `~/.cache/pond-oracle`).
    pub fn locate(harness: &str) -> Result<Self, String> {
        let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/oracle");
        if !scripts.join(format!("{harness}.sh")).is_file() {
            return Err(format!(
                "the oracle scripts are not at {}",
                scripts.display()
            ));
        }
        let home = install_home(harness)?;
        for tool in ["python3", "node"] {
            if Command::new(tool).arg("--version").output().is_err() {
                return Err(format!("{tool} is not on PATH"));
            }
        }
        Ok(Self { scripts, home })
    }

    /// [`Oracle::locate`], or `None` after printing `SKIP: <reason>` (a test then returns).
    pub fn locate_or_skip(harness: &str) -> Option<Self> {
        Self::locate(harness)
            .inspect_err(|reason| eprintln!("SKIP: {reason}"))
            .ok()
    }

    /// Resumes `session` (a file in the harness's native form) with the real CLI, or with
    /// `offline` runs the harness's cheaper structural check. `out` keeps the artifacts.
    pub fn run(
        &self,
        harness: &str,
        session: &Path,
        offline: bool,
        out: &Path,
    ) -> Result<Report, String> {
        let mut cmd = Command::new("bash");
        cmd.arg(self.scripts.join(format!("{harness}.sh")));
        if offline {
            cmd.arg("--offline-check");
        }
        cmd.arg("--out")
            .arg(out)
            .arg("--timeout")
            .arg("120")
            .arg(session)
            .env("POND_ORACLE_HOME", &self.home);
        let output = cmd
            .output()
            .map_err(|e| format!("cannot run the {harness} oracle: {e}"))?;
        let code = output.status.code().unwrap_or(-1);
        if code == 2 {
            return Err(format!(
                "the {harness} oracle refused its arguments: {}",
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        let raw: Value = serde_json::from_slice(&output.stdout).map_err(|e| {
            format!(
                "the {harness} oracle printed no JSON report ({e}); stderr: {}",
                tail(&String::from_utf8_lossy(&output.stderr))
            )
        })?;
        let history = serde_json::from_value(
            raw.get("history")
                .cloned()
                .unwrap_or(Value::Array(Vec::new())),
        )
        .map_err(|e| format!("unexpected history in the {harness} report: {e}"))?;
        let reasons = raw
            .get("reasons")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        Ok(Report {
            accepted: raw
                .get("accepted")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            exit_code: code,
            history,
            reasons,
            raw,
        })
    }
}

fn tail(s: &str) -> &str {
    let start = s.len().saturating_sub(2000);
    &s[s.floor_char_boundary(start)..]
}
