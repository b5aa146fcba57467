//! The canonical half of a `pond_ingest` body: a JSON array of wire events, assembled and written.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    pond_fuzz::run(pond_conformance::hostile::Target::WireEvents, data);
});
