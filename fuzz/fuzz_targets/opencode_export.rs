//! The opencode read face on one arbitrary `opencode export` document.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    pond_fuzz::run(pond_conformance::hostile::Target::OpencodeExport, data);
});
