//! The `pond` binary's own surface: version, help, codecs, completions, usage errors.

mod limited;

use std::process::{Command, Output};

fn pond(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pond"))
        .args(args)
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn version_and_help() {
    let v = pond(&["--version"]);
    assert!(v.status.success());
    assert_eq!(
        stdout(&v).trim(),
        format!("pond {}", env!("CARGO_PKG_VERSION"))
    );
    let h = pond(&["--help"]);
    assert!(h.status.success());
    for verb in ["convert", "codecs", "schema", "completions", "--json"] {
        assert!(stdout(&h).contains(verb), "--help does not mention {verb}");
    }
}

#[test]
fn codecs_json_lists_every_registered_codec() {
    let o = pond(&["codecs", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let list: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = list.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, pond_codecs::registry::names());
    for c in &list {
        assert!(
            c["source_agent"].as_str().is_some_and(|s| !s.is_empty()),
            "{c}"
        );
        assert!(c["faces"].as_array().is_some_and(|f| !f.is_empty()), "{c}");
    }
}

#[test]
fn completions_for_bash_name_the_verbs() {
    let o = pond(&["completions", "bash"]);
    assert!(o.status.success());
    assert!(stdout(&o).contains("convert"));
}

#[test]
fn convert_usage_errors_say_what_is_wrong() {
    let o = pond(&["convert", "--from", "nope", "--to", "nope", "."]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown codec `nope`"),
        "{}",
        stderr(&o)
    );

    let o = pond(&["convert", "codex→claude"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("missing INPUT"), "{}", stderr(&o));

    let o = pond(&["convert", "--to", "nope", "/definitely/not/here"]);
    assert_eq!(o.status.code(), Some(2));
}

/// A store verb the system will start no thread for (a process at its thread limit) ends with
/// an error saying so, where tokio's runtime panicked when it could not start its workers. The
/// limit is set for an unprivileged user (root is exempt from RLIMIT_NPROC), so this runs as
/// root with util-linux's `setpriv` and `prlimit`, and skips, saying why, elsewhere.
#[test]
fn a_store_verb_that_can_start_no_thread_says_so() {
    let Some((dir, bin)) = limited::pond_for_nobody(0o777) else {
        return;
    };
    let data = dir.path().join("data");
    for verb in ["status", "sessions"] {
        let o = limited::limited(&bin)
            .arg("--data")
            .arg(&data)
            .arg(verb)
            .env("HOME", dir.path())
            .env_remove("XDG_DATA_HOME")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("POND_DATA")
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{verb}: {err}");
        assert!(!err.contains("panicked"), "{verb}: {err}");
        assert!(
            err.starts_with(&format!("pond {verb}: the system will not start a thread")),
            "{verb}: {err}"
        );
    }
}
