//! A `.pond` archive's container: unpacked and checked as `pond import` does before Lance opens
//! anything.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    pond_fuzz::run(pond_conformance::hostile::Target::Archive, data);
});
