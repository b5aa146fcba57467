//! Text from untrusted input, made safe to show on a terminal.
//!
//! Error messages quote their input: a file's path, a JSON parser's view of a line, a tar entry's
//! name. Printed raw, a hostile or damaged file could move the cursor, recolour the terminal, set
//! its title or hide text (escape sequences, C1 controls, bidirectional overrides). Every message
//! that quotes input goes through [`escape_controls`] before it is shown.

use std::borrow::Cow;
use std::fmt::Write;

/// Whether `c` is a character a message must not carry as it is: a control character (C0, DEL,
/// C1) or a bidirectional embedding, override or isolate, which reorder the text around them.
fn unsafe_char(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every control character and bidirectional control written as a visible escape:
/// `\n`, `\r`, `\t`, `\x1b` for the other ASCII controls, `\u{9b}` for the rest. Text without any
/// is returned as it is, without a copy.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_ascii_control() => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if unsafe_char(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Writes to `f` what `describe` writes, with every control character escaped
/// ([`escape_controls`]): the `Display` of an error that quotes input is
/// `write_escaped(f, |f| self.describe(f))`.
pub fn write_escaped(
    f: &mut std::fmt::Formatter<'_>,
    describe: impl Fn(&mut std::fmt::Formatter<'_>) -> std::fmt::Result,
) -> std::fmt::Result {
    struct Described<F>(F);
    impl<F: Fn(&mut std::fmt::Formatter<'_>) -> std::fmt::Result> std::fmt::Display for Described<F> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            (self.0)(f)
        }
    }
    f.write_str(&escape_controls(&Described(describe).to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_become_visible_escapes() {
        assert!(matches!(escape_controls("plain ü text"), Cow::Borrowed(_)));
        assert_eq!(
            escape_controls("a\x1b[31mred\x07\0\u{7f}\n\t\r"),
            "a\\x1b[31mred\\x07\\x00\\x7f\\n\\t\\r"
        );
        assert_eq!(
            escape_controls("\u{9b}2J \u{202e}x"),
            "\\u{9b}2J \\u{202e}x"
        );
        struct Quoting(&'static str);
        impl std::fmt::Display for Quoting {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write_escaped(f, |f| write!(f, "bad {}", self.0))
            }
        }
        assert_eq!(Quoting("x\x1by").to_string(), "bad x\\x1by");
        for c in (0u32..0x110000).filter_map(char::from_u32) {
            let shown = escape_controls(&c.to_string()).into_owned();
            assert!(!shown.chars().any(unsafe_char), "{c:?} -> {shown:?}");
        }
    }
}
