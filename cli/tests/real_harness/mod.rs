//! The real harness CLIs for the binary's end-to-end tests: ../shared/oracle's pinned installs
//! (`POND_ORACLE_HOME`, else ~/.cache/pond-oracle; `scripts/test` installs them), run in a
//! network namespace that has only loopback (`unshare -rn`) so nothing leaves the machine. A
//! test that cannot have them prints `SKIP: <reason>` and returns.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

/// The executable of `harness` (`claude-code`, `codex`, `opencode`, `pi`) in the oracle's install
/// ([`pond_conformance::oracle::install_home`]), or why there is none.
pub fn cli(harness: &str) -> Result<PathBuf, String> {
    let modules = pond_conformance::oracle::install_home(harness)?
        .join(harness)
        .join("node_modules");
    let candidates: &[&str] = match harness {
        "claude-code" => &[".bin/claude"],
        "codex" => &[".bin/codex"],
        // A node script; its package's modules are pi's own code (`SessionManager`).
        "pi" => &["@mariozechner/pi-coding-agent/dist/cli.js"],
        // The native binary first: the npm wrapper only finds and runs it.
        _ => &[
            "opencode-linux-x64/bin/opencode",
            "opencode-linux-arm64/bin/opencode",
            ".bin/opencode",
        ],
    };
    candidates
        .iter()
        .map(|c| modules.join(c))
        .find(|c| c.exists())
        .ok_or_else(|| format!("no {harness} executable under {}", modules.display()))
}

/// Whether `unshare -rn` can make a loopback-only network namespace here, or why not.
pub fn netns() -> Result<(), String> {
    match Command::new("unshare").args(["-rn", "true"]).output() {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!(
            "`unshare -rn` cannot make a network namespace here: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Err(format!("`unshare` cannot run: {e}")),
    }
}

/// [`cli`] once [`netns`] works, or `None` after printing `SKIP: <reason>`.
pub fn cli_or_skip(harness: &str) -> Option<PathBuf> {
    netns()
        .and_then(|()| cli(harness))
        .inspect_err(|reason| println!("SKIP: {reason}"))
        .ok()
}
