//! The Codex read face on one arbitrary rollout: plain, as a hostile .zst archive, or compressed (the first byte chooses).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    pond_fuzz::run(pond_conformance::hostile::Target::Codex, data);
});
