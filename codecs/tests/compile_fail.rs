//! model-no-synthesis and adapter-provenance-required are compile errors for codec code: these
//! programs, written as a codec would be, must not compile, and must fail for the stated reason
//! (the `.stderr` files beside them).

#[test]
fn codec_code_cannot_synthesize_or_skip_provenance() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/compile_fail/*.rs");
}
