//! Names Claude Code needs that a foreign session may not have: the encoded project folder, UUIDs
//! (name-based, RFC 9562 version 5, so a conversion is deterministic), message ids, and the
//! resume command.

use crate::digest;
/// The namespace of every UUID pond derives for Claude Code (a fixed version-4 UUID).
const NAMESPACE: [u8; 16] = [
    0x8c, 0x0e, 0x6a, 0x53, 0x2b, 0x1d, 0x4f, 0x36, 0x9a, 0x47, 0x5e, 0x61, 0x70, 0xd2, 0x3c, 0x19,
];

/// Claude Code's `sanitizePath` (format reference §1.2): every UTF-16 code unit outside
/// `[A-Za-z0-9]` becomes `-`; past 200 chars the name is cut and the Node string hash of the
/// original path is appended in base 36 (the `claude` npm package runs under Node).
pub fn encode_cwd(cwd: &str) -> String {
    let mut out = String::with_capacity(cwd.len());
    for unit in cwd.encode_utf16() {
        match u8::try_from(unit) {
            Ok(b) if b.is_ascii_alphanumeric() => out.push(char::from(b)),
            _ => out.push('-'),
        }
    }
    if out.len() > 200 {
        out.truncate(200);
        out.push('-');
        out.push_str(&base36(node_hash(cwd)));
    }
    out
}

/// JavaScript's `(h << 5) - h + charCode | 0` over UTF-16 code units, then `Math.abs`.
fn node_hash(s: &str) -> u32 {
    let mut h: i32 = 0;
    for unit in s.encode_utf16() {
        h = (h << 5).wrapping_sub(h).wrapping_add(i32::from(unit));
    }
    h.unsigned_abs()
}

fn base36(mut n: u32) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// Whether `s` is a UUID in Claude Code's form (lowercase hex, 8-4-4-4-12).
pub fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_digit() || (b'a'..=b'f').contains(&b),
        })
}

/// A name-based (version 5) UUID for `name`, in lowercase text form.
pub fn uuid_v5(name: impl std::fmt::Display) -> String {
    digest::uuid_v5(&NAMESPACE, name)
}

/// [`uuid_v5`] of the name that is the concatenation of `pieces`.
pub(crate) fn uuid_v5_of(pieces: &[&[u8]]) -> String {
    digest::uuid_v5_of(&NAMESPACE, pieces)
}

/// `n` hex digits derived from `name` (for sub-agent ids and message ids).
pub fn hex_id(name: impl std::fmt::Display, n: usize) -> String {
    let mut h = digest::hex(&digest::sha1_named(&NAMESPACE, name));
    h.truncate(n.min(40));
    h
}

/// `prefix` followed by the [`hex_id`] of the name that is the concatenation of `pieces`, in
/// one string and without `fmt`'s machinery (one per assistant message of a Claude Code write).
pub(crate) fn prefixed_hex_id_of(prefix: &str, pieces: &[&[u8]], n: usize) -> String {
    let digest = digest::sha1_of(&NAMESPACE, pieces);
    let n = n.min(40);
    let mut id = String::with_capacity(prefix.len() + n + 1);
    id.push_str(prefix);
    for &byte in &digest[..n.div_ceil(2)] {
        digest::push_hex(&mut id, byte);
    }
    id.truncate(prefix.len() + n);
    id
}

/// `cd '<cwd>' && claude --resume <id>`, the cwd single-quoted for a POSIX shell.
pub fn resume_command(cwd: &str, session: &str) -> String {
    format!(
        "cd '{}' && claude --resume {session}",
        cwd.replace('\'', "'\\''")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cwd_encoding_follows_sanitize_path() {
        assert_eq!(encode_cwd("/Users/foo/my_proj.v2"), "-Users-foo-my-proj-v2");
        assert_eq!(encode_cwd("/home/u/.agents"), "-home-u--agents");
        assert_eq!(encode_cwd("C:\\Users\\a\\x"), "C--Users-a-x");
        // A non-BMP character is two UTF-16 code units, so two dashes.
        assert_eq!(encode_cwd("/a😀"), "-a--");
        assert_eq!(encode_cwd("/ж"), "--");
        let long = format!("/{}", "a".repeat(250));
        let enc = encode_cwd(&long);
        assert!(enc.starts_with(&format!("-{}-", "a".repeat(199))));
        assert!(enc.len() > 201 && !enc.contains('/'));
    }

    #[test]
    fn derived_uuids_are_stable_and_well_formed() {
        let a = uuid_v5("x");
        assert_eq!(a, uuid_v5("x"));
        assert_ne!(a, uuid_v5("y"));
        assert!(is_uuid(&a), "{a}");
        assert_eq!(&a[14..15], "5");
        assert!(!is_uuid("../../.bashrc"));
        assert!(is_uuid("019c8a70-dda7-7f33-98ea-f30553347322"));
    }

    #[test]
    fn ids_from_pieces_are_those_from_their_concatenation() {
        let pieces: [&[u8]; 4] = [b"response:", b"s-1", b":", b"L7"];
        assert_eq!(
            prefixed_hex_id_of("", &pieces, 24),
            hex_id("response:s-1:L7", 24)
        );
        assert_eq!(prefixed_hex_id_of("", &pieces, 24).len(), 24);
        assert_eq!(
            prefixed_hex_id_of("msg_", &pieces, 24),
            format!("msg_{}", hex_id("response:s-1:L7", 24))
        );
        assert_eq!(
            prefixed_hex_id_of("", &pieces, 7),
            hex_id("response:s-1:L7", 7)
        );
        assert_eq!(uuid_v5_of(&pieces), uuid_v5("response:s-1:L7"));
    }

    #[test]
    fn resume_quotes_the_cwd() {
        assert_eq!(
            resume_command("/it's here", "u"),
            "cd '/it'\\''s here' && claude --resume u"
        );
    }
}
