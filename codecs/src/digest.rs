//! The one SHA-1 the codecs use to derive stable names (name-based UUIDs, hashed ids) for
//! targets that require an id shape the source does not have. Not for anything security-relevant.

use sha1::{Digest, Sha1};
use std::fmt::{self, Write};

/// SHA-1 (FIPS 180-4) of `prefix` followed by the text of `name`, hashed as it is formatted
/// (nothing is allocated for the name). For deriving names (UUID v5, hashed ids) only, never for
/// security. RustCrypto's `sha1`, which uses the CPU's SHA extensions where it has them: a
/// foreign Claude Code write derives one UUID per line, and a portable loop was 8% of a
/// conversion.
pub(crate) fn sha1_named(prefix: &[u8], name: impl fmt::Display) -> [u8; 20] {
    struct Hashing(Sha1);
    impl Write for Hashing {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            self.0.update(s.as_bytes());
            Ok(())
        }
    }
    let mut hashing = Hashing(Sha1::new());
    hashing.0.update(prefix);
    // Writing into a hasher cannot fail.
    let _ = write!(hashing, "{name}");
    hashing.0.finalize().into()
}

/// The name-based (version 5, RFC 9562) UUID of `name` in `namespace`, in lowercase text form.
pub(crate) fn uuid_v5(namespace: &[u8; 16], name: impl fmt::Display) -> String {
    uuid_text(sha1_named(namespace, name))
}

/// [`uuid_v5`] of the name that is the concatenation of `pieces`, hashed piece by piece without
/// `fmt`'s machinery (one UUID per line of a Claude Code write).
pub(crate) fn uuid_v5_of(namespace: &[u8; 16], pieces: &[&[u8]]) -> String {
    uuid_text(sha1_of(namespace, pieces))
}

/// [`sha1_named`] of the name that is the concatenation of `pieces`.
pub(crate) fn sha1_of(prefix: &[u8], pieces: &[&[u8]]) -> [u8; 20] {
    let mut hashing = Sha1::new();
    hashing.update(prefix);
    for piece in pieces {
        hashing.update(piece);
    }
    hashing.finalize().into()
}

/// The version-5 UUID text of a SHA-1 hash.
fn uuid_text(hash: [u8; 20]) -> String {
    let mut b = [0u8; 16];
    b.copy_from_slice(&hash[..16]);
    b[6] = (b[6] & 0x0f) | 0x50;
    b[8] = (b[8] & 0x3f) | 0x80;
    let mut text = String::with_capacity(36);
    for (i, byte) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            text.push('-');
        }
        push_hex(&mut text, *byte);
    }
    text
}

/// The offset bases of the two FNV-1a hashes [`hash128`] joins.
pub(crate) const FNV_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_BASIS_2: u64 = 0x6c62_272e_07bb_0142;
/// The 64-bit FNV prime.
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a, 64 bits, from the offset basis `basis`, over the concatenation of `pieces` (the
/// hash of a derived name, made without first writing the name into a string).
pub(crate) fn fnv(basis: u64, pieces: &[&[u8]]) -> u64 {
    let mut h = basis;
    for piece in pieces {
        for b in *piece {
            h ^= u64::from(*b);
            h = h.wrapping_mul(FNV_PRIME);
        }
    }
    h
}

/// A 128-bit hash of `s`, stable across runs and platforms: FNV-1a from two offset bases, the
/// first in the high half. For derived ids (opencode's, pi's), never for security.
pub(crate) fn hash128(s: &str) -> u128 {
    hash128_of(&[s.as_bytes()])
}

/// [`hash128`] of the concatenation of `pieces`, without first writing it into a string.
pub(crate) fn hash128_of(pieces: &[&[u8]]) -> u128 {
    pieces
        .iter()
        .fold(Hash128::new(), |h, piece| h.update(piece))
        .finish()
}

/// [`hash128`] fed piece by piece: a state that is copied can be continued from more than once
/// (every part of a message hashes the message's name first: it is hashed once). The two hashes
/// run in one pass: their multiplications are independent, so the CPU overlaps them (one FNV-1a
/// chain waits on each multiplication in turn).
#[derive(Clone, Copy)]
pub(crate) struct Hash128 {
    a: u64,
    b: u64,
}

impl Hash128 {
    /// The state of no bytes.
    pub(crate) fn new() -> Self {
        Hash128 {
            a: FNV_BASIS,
            b: FNV_BASIS_2,
        }
    }

    /// The state after `bytes` more.
    pub(crate) fn update(self, bytes: &[u8]) -> Self {
        let Hash128 { mut a, mut b } = self;
        for &byte in bytes {
            a = (a ^ u64::from(byte)).wrapping_mul(FNV_PRIME);
            b = (b ^ u64::from(byte)).wrapping_mul(FNV_PRIME);
        }
        Hash128 { a, b }
    }

    /// The hash of the bytes so far.
    pub(crate) fn finish(self) -> u128 {
        (u128::from(self.a) << 64) | u128::from(self.b)
    }
}

/// `bytes` in lowercase hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        push_hex(&mut text, *byte);
    }
    text
}

/// Appends the two hex digits of `byte`.
pub(crate) fn push_hex(text: &mut String, byte: u8) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    text.push(char::from(DIGITS[usize::from(byte >> 4)]));
    text.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash128_of_pieces_is_the_two_hashes_of_their_concatenation() {
        for (pieces, whole) in [
            (vec![], ""),
            (vec!["a"], "a"),
            (vec!["pond-session:", "0198", ""], "pond-session:0198"),
            (
                vec!["s/m", "#", "s/m", "#step-start", "12"],
                "s/m#s/m#step-start12",
            ),
        ] {
            let bytes: Vec<&[u8]> = pieces.iter().map(|p: &&str| p.as_bytes()).collect();
            let w = whole.as_bytes();
            let expected =
                (u128::from(fnv(FNV_BASIS, &[w])) << 64) | u128::from(fnv(FNV_BASIS_2, &[w]));
            assert_eq!(hash128_of(&bytes), expected, "{pieces:?}");
            assert_eq!(hash128(whole), expected);
        }
        // FNV-1a's published 64-bit vector: "a" from the standard offset basis.
        assert_eq!(hash128("a") >> 64, 0xaf63_dc4c_8601_ec8c);
        // A state copied and continued twice: each continuation is the hash of its whole name
        // (the opencode writer hashes a message's name once for all its parts).
        let message = Hash128::new().update(b"s/m").update(b"#");
        assert_eq!(message.update(b"p1").finish(), hash128("s/m#p1"));
        assert_eq!(message.update(b"p22").finish(), hash128("s/m#p22"));
        assert_eq!(message.finish(), hash128("s/m#"));
    }

    #[test]
    fn sha1_matches_the_standard_vectors() {
        let sha1 = |prefix: &[u8], name: std::fmt::Arguments<'_>| hex(&sha1_named(prefix, name));
        let abc = "a9993e364706816aba3e25717850c26c9cd0d89d";
        assert_eq!(sha1(b"abc", format_args!("")), abc);
        assert_eq!(sha1(b"", format_args!("abc")), abc);
        assert_eq!(sha1(b"a", format_args!("{}{}", 'b', "c")), abc);
        assert_eq!(
            sha1(b"", format_args!("")),
            "da39a3ee5e6b4b0d3255bfef95601890afd80709"
        );
        // Two blocks, the padding in the second.
        let long = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
        assert_eq!(
            sha1(&long.as_bytes()[..8], format_args!("{}", &long[8..])),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1"
        );
    }

    #[test]
    fn uuid_v5_matches_rfc_9562() {
        // The DNS namespace and `www.example.com` (RFC 9562, appendix A.4).
        let dns = [
            0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4,
            0x30, 0xc8,
        ];
        assert_eq!(
            uuid_v5(&dns, "www.example.com"),
            "2ed6657d-e927-568b-95e1-2665a8aea6a2"
        );
        // By pieces: the UUID of their concatenation.
        for pieces in [
            &[&b"www.example.com"[..]][..],
            &[b"www.", b"example", b".com"],
            &[b"", b"www.example.com", b""],
        ] {
            assert_eq!(
                uuid_v5_of(&dns, pieces),
                "2ed6657d-e927-568b-95e1-2665a8aea6a2"
            );
        }
        assert_eq!(
            uuid_v5_of(&dns, &[b"line:", b"s-1", b":", b"12"]),
            uuid_v5(&dns, format_args!("line:{}:{}", "s-1", 12))
        );
    }
}
