//! Prints the path of the `protoc` binary bundled in the `protoc-bin-vendored` crate (Google's
//! release binaries, from crates.io) on its first line and its include folder (the
//! `google/protobuf/*.proto` files Lance's protos import) on the second. `scripts/lib.sh` sets
//! `PROTOC` and `PROTOC_INCLUDE` from them when the machine has no `protoc` of its own.

fn main() {
    match (
        protoc_bin_vendored::protoc_bin_path(),
        protoc_bin_vendored::include_path(),
    ) {
        (Ok(bin), Ok(include)) => {
            println!("{}", bin.display());
            println!("{}", include.display());
        }
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("no vendored protoc for this platform: {e}");
            std::process::exit(1);
        }
    }
}
