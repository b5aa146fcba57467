//! `pond namespace create NAME | list`: the namespaces under a store's root (spec 2.2, hosted).
//! A namespace exists only once provisioned here; a request naming another is refused with
//! `namespace_unknown` (wire-namespace-resolution).

use crate::store_cmd::{DataArgs, fail, runtime};
use std::process::ExitCode;

/// Provision or list the namespaces under the store (`--data`): each a tenant's own tables
/// under `<store>/ns/<name>/`, reached with `--namespace NAME` or the wire's `namespace`.
#[derive(clap::Args)]
pub struct NamespaceArgs {
    #[command(flatten)]
    data: DataArgs,
    #[command(subcommand)]
    command: NamespaceCommand,
}

#[derive(clap::Subcommand)]
pub enum NamespaceCommand {
    /// Provision a namespace (idempotent): lower-case letters, digits, '.', '_', '-'.
    Create {
        /// The namespace's name.
        name: String,
    },
    /// List the namespaces: `default` (the store's own tables) and every provisioned one.
    List,
}

pub fn run(args: NamespaceArgs, json: bool) -> ExitCode {
    let (pond, location) = match args.data.pond() {
        Ok(p) => p,
        Err(e) => return fail("namespace", e),
    };
    let at = |e: &dyn std::fmt::Display| format!("{e} (store {})", location.describe());
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return fail("namespace", e),
    };
    match args.command {
        NamespaceCommand::Create { name } => match rt.block_on(pond.catalog().create(&name)) {
            Ok(created) => {
                let status = if created {
                    "created"
                } else {
                    "already provisioned"
                };
                if json {
                    println!(
                        "{}",
                        serde_json::json!({"namespace": name, "status": status})
                    );
                } else {
                    println!("namespace {name}: {status}");
                }
                ExitCode::SUCCESS
            }
            Err(e) => fail("namespace create", at(&e)),
        },
        NamespaceCommand::List => match rt.block_on(pond.catalog().list()) {
            Ok(list) => {
                if json {
                    println!("{}", serde_json::to_string_pretty(&list).expect("JSON"));
                } else {
                    println!("{:<24} {:<22} URI", "NAMESPACE", "CREATED");
                    for n in &list {
                        println!(
                            "{:<24} {:<22} {}",
                            n.name,
                            n.created_at.as_deref().unwrap_or("-"),
                            n.uri
                        );
                    }
                }
                ExitCode::SUCCESS
            }
            Err(e) => fail("namespace list", at(&e)),
        },
    }
}
