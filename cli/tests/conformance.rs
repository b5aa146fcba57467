//! `pond conformance` over the shared fixtures and the repo's own: every native round trip and
//! every ordered pair of codecs passes, and `--json` reports each check.

use std::path::Path;
use std::process::Command;

#[test]
fn conformance_passes_over_shared_and_repo_fixtures() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let shared = root.join("../shared/fixtures");
    assert!(
        shared.is_dir(),
        "the shared fixtures are missing at {}",
        shared.display()
    );
    let o = Command::new(env!("CARGO_BIN_EXE_pond"))
        .args(["conformance", "--json", "--fixtures"])
        .arg(&shared)
        .arg("--fixtures")
        .arg(root.join("fixtures"))
        .output()
        .unwrap();
    let checks: Vec<serde_json::Value> =
        serde_json::from_slice(&o.stdout).expect("--json prints the checks");
    let failed: Vec<_> = checks
        .iter()
        .filter(|c| !c["failures"].as_array().unwrap().is_empty())
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
    assert_eq!(o.status.code(), Some(0));
    let codecs = pond_codecs::CODECS.len();
    let foreign_pairs = checks
        .iter()
        .filter(|c| c["kind"] == "foreign" && c["fixtures"].as_str().unwrap().contains("shared"));
    let pairs: std::collections::BTreeSet<(String, String)> = foreign_pairs
        .map(|c| (c["from"].to_string(), c["to"].to_string()))
        .collect();
    assert_eq!(
        pairs.len(),
        codecs * (codecs - 1),
        "every ordered pair of codecs is checked: {pairs:?}"
    );
    let native = checks.iter().filter(|c| c["kind"] == "native").count();
    assert!(native >= codecs, "a native round trip per codec");
}
