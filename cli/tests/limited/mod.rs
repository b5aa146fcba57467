//! Running the `pond` binary as an unprivileged user limited to one task (`RLIMIT_NPROC` 1: no
//! thread can be started), as a process at its thread limit is (a container with a small pids
//! limit). Root is exempt from the limit, so the tests run the binary as `nobody` with
//! util-linux's `setpriv` and `prlimit`, and skip, saying why, elsewhere. Used by `cli.rs` and
//! `convert_foreign.rs`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `setpriv`'s arguments for the unprivileged user.
const NOBODY: [&str; 3] = ["--reuid=65534", "--regid=65534", "--clear-groups"];

/// A folder of mode `mode` holding a copy of the binary the unprivileged user may run, and the
/// copy's path; `None`, after printing why, when this is not root with `setpriv`.
pub fn pond_for_nobody(mode: u32) -> Option<(tempfile::TempDir, PathBuf)> {
    let probe = Command::new("setpriv").args(NOBODY).arg("true").output();
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout == b"0\n");
    if !root || !probe.is_ok_and(|o| o.status.success()) {
        eprintln!("SKIP: needs root with setpriv and prlimit to limit another user's threads");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(mode)).unwrap();
    let bin = dir.path().join("pond");
    std::fs::copy(env!("CARGO_BIN_EXE_pond"), &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    Some((dir, bin))
}

/// `bin` run as the unprivileged user, limited to one task; its arguments are the caller's.
pub fn limited(bin: &Path) -> Command {
    let mut command = Command::new("setpriv");
    command.args(NOBODY).args(["prlimit", "--nproc=1"]).arg(bin);
    command
}
