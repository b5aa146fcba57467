//! The Claude Code read face on one arbitrary transcript file (then every writer).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    pond_fuzz::run(pond_conformance::hostile::Target::ClaudeCode, data);
});
