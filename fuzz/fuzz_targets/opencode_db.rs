//! The opencode read face on one arbitrary `opencode.db` (SQLite, opened read-only).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    pond_fuzz::run(pond_conformance::hostile::Target::OpencodeDb, data);
});
