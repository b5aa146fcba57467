//! The fuzz targets' shared part: each target hands its bytes to
//! `pond_conformance::hostile::Target::run`, which the regression test
//! (`conformance/tests/fuzz_regressions.rs`) replays on the committed crashers.

use pond_conformance::hostile::Target;
use std::path::PathBuf;
use std::sync::OnceLock;

/// Runs one input of `target` in this process's scratch folder (in memory where `/dev/shm`
/// exists), on one thread: what a conversion writes does not depend on threads, and a fuzz run
/// should not start one per input.
pub fn run(target: Target, data: &[u8]) {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        // SAFETY: set once, before this process starts any other thread.
        unsafe { std::env::set_var("POND_THREADS", "1") };
        let shm = std::path::Path::new("/dev/shm");
        let base = if shm.is_dir() {
            shm.to_owned()
        } else {
            std::env::temp_dir()
        };
        base.join(format!("pond-fuzz-{}", std::process::id()))
    });
    target.run(data, dir);
}
