//! # pond-conformance
//!
//! The codec conformance suite (spec 6.8): for every registered codec and every fixture, a native
//! round trip that must be value-equal line by line, and for every ordered pair of codecs a
//! foreign conversion that the target codec must read back without a fault.
//! `pond conformance` and the test suite both run it.

pub mod foreign_check;
pub mod hostile;
pub mod oracle;
pub mod roundtrip;
pub mod suite;
