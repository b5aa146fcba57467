//! The pi read face on one arbitrary session file.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    pond_fuzz::run(pond_conformance::hostile::Target::Pi, data);
});
