//! # pond-conformance
//!
//! The codec conformance suite (spec 6.8): for every registered codec and every fixture, a native
//! round trip that must be value-equal line by line; later, foreign validity and property tests.
//! `pond conformance` and the test suite both run it.

pub mod roundtrip;
