//! The shared JSONL reader: one [`Record`](pond_canonical::Record) per line, with bounded memory.
//!
//! A line longer than [`MAX_LINE_BYTES`] is reported as a typed error and skipped without being
//! held in memory, so a corrupt or hostile file cannot exhaust memory. Blank lines carry no data
//! and are passed over. Every other fault is reported with its file and line, and reading goes on.

use pond_canonical::{Locator, Origin, ParseError, ParseErrorKind, Record};
use std::io::{BufRead, Read};

/// The longest line read, in bytes. See docs/decisions.md ("The per-value bound").
pub const MAX_LINE_BYTES: u64 = 128 * 1024 * 1024;

/// Reads `input` line by line, calling `each` with every line's record or fault, in order.
/// Returns the number of lines seen. An I/O failure ends the read with one error.
pub fn read_records<R: Read>(
    origin: &Origin,
    input: R,
    mut each: impl FnMut(Result<Record<'_>, ParseError>),
) -> u64 {
    read_lines(origin, input, |line, bytes| match bytes {
        Ok(bytes) => each(Record::from_json_line(origin, line, bytes)),
        Err(e) => each(Err(e)),
    })
}

/// Like [`read_records`], for codecs that need the raw bytes of each line.
pub fn read_lines<R: Read>(
    origin: &Origin,
    input: R,
    mut each: impl FnMut(u64, Result<&[u8], ParseError>),
) -> u64 {
    let mut reader = std::io::BufReader::with_capacity(1 << 20, input);
    let mut buf = Vec::new();
    let mut line = 0u64;
    loop {
        buf.clear();
        line += 1;
        let mut limited = (&mut reader).take(MAX_LINE_BYTES + 1);
        match limited.read_until(b'\n', &mut buf) {
            Ok(0) => return line - 1,
            Ok(_) => {}
            Err(e) => {
                each(
                    line,
                    Err(origin.error(
                        Locator::Line(line),
                        ParseErrorKind::Io {
                            detail: e.to_string(),
                        },
                    )),
                );
                return line;
            }
        }
        if buf.last() != Some(&b'\n') && buf.len() as u64 > MAX_LINE_BYTES {
            // Skip the rest of the over-long line without keeping it.
            let mut total = buf.len() as u64;
            buf.clear();
            loop {
                match reader.fill_buf() {
                    Ok([]) => break,
                    Ok(chunk) => {
                        let (n, done) = match chunk.iter().position(|&b| b == b'\n') {
                            Some(i) => (i + 1, true),
                            None => (chunk.len(), false),
                        };
                        total += n as u64;
                        reader.consume(n);
                        if done {
                            total -= 1;
                            break;
                        }
                    }
                    Err(e) => {
                        each(
                            line,
                            Err(origin.error(
                                Locator::Line(line),
                                ParseErrorKind::Io {
                                    detail: e.to_string(),
                                },
                            )),
                        );
                        return line;
                    }
                }
            }
            let kind = ParseErrorKind::LineTooLong {
                bytes: total,
                limit: MAX_LINE_BYTES,
            };
            each(line, Err(origin.error(Locator::Line(line), kind)));
            continue;
        }
        let mut end = buf.len();
        while end > 0 && matches!(buf[end - 1], b'\n' | b'\r') {
            end -= 1;
        }
        if buf[..end].iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        each(line, Ok(&buf[..end]));
    }
}

/// Opens a source file for reading, as a typed error if it cannot be.
pub fn open(origin: &Origin) -> Result<std::fs::File, ParseError> {
    std::fs::File::open(origin.path()).map_err(|e| {
        origin.error(
            Locator::File,
            ParseErrorKind::Io {
                detail: e.to_string(),
            },
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_are_located_and_reading_goes_on() {
        let origin = Origin::new("test", "/x.jsonl", "x.jsonl");
        let input = b"{\"a\":1}\n\nnot json\n[1]\n{\"b\":2}\r\n{\"c\":";
        let mut seen = Vec::new();
        read_records(&origin, &input[..], |r| {
            seen.push(match r {
                Ok(rec) => format!("ok {:?}", rec.locator()),
                Err(e) => format!("err {:?} {}", e.locator, e.kind),
            })
        });
        assert_eq!(seen.len(), 5, "{seen:?}");
        assert_eq!(seen[0], "ok Line(1)");
        assert!(
            seen[1].starts_with("err Line(3) invalid JSON"),
            "{}",
            seen[1]
        );
        assert!(
            seen[2].starts_with("err Line(4) expected a JSON object"),
            "{}",
            seen[2]
        );
        assert_eq!(seen[3], "ok Line(5)");
        assert!(seen[4].starts_with("err Line(6) truncated"), "{}", seen[4]);
    }
}
