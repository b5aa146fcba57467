//! RFC 3339 timestamps that keep the source's full precision (spec 4.3).
//!
//! A [`Timestamp`] keeps the exact text the source recorded (nanoseconds, offsets and all), so a
//! native write reproduces it, and the instant in microseconds since the Unix epoch, which is what
//! storage orders by.

use crate::seam::Extracted;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cmp::Ordering;
use std::fmt;

/// A source-recorded instant: RFC 3339 text on the wire, microseconds in storage.
#[derive(Clone)]
pub struct Timestamp {
    text: String,
    micros: i64,
}

/// Why a text is not an RFC 3339 timestamp.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimestampError {
    /// The rejected text (at most 64 bytes of it).
    pub text: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl fmt::Display for TimestampError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "not an RFC 3339 timestamp ({}): {:?}",
            self.reason, self.text
        )
    }
}

impl std::error::Error for TimestampError {}

impl Timestamp {
    /// Parses an extracted RFC 3339 text, keeping it verbatim.
    pub fn parse(text: Extracted<&str>) -> Result<Self, TimestampError> {
        Self::parse_str(text.into_inner())
    }

    /// Whether [`parse`](Self::parse) would accept `text`. Builds nothing, so it needs no
    /// [`Extracted`] value: for a reader deciding how to read a record before reading it.
    pub fn is_valid(text: &str) -> bool {
        Self::micros_of(text).is_ok()
    }

    /// An instant a source recorded as milliseconds since the Unix epoch (opencode, pi), written as
    /// RFC 3339 UTC with millisecond precision so nothing is lost or invented.
    pub fn from_unix_millis(millis: Extracted<i64>) -> Result<Self, TimestampError> {
        let millis = millis.into_inner();
        let micros = millis.checked_mul(1000).ok_or(TimestampError {
            text: millis.to_string(),
            reason: "out of range",
        })?;
        Ok(Self {
            text: format_micros(micros, 3),
            micros,
        })
    }

    /// The instant as RFC 3339 text, exactly as the source wrote it.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Microseconds since the Unix epoch (sub-microsecond digits are kept only in the text).
    pub fn unix_micros(&self) -> i64 {
        self.micros
    }

    pub(crate) fn parse_str(text: &str) -> Result<Self, TimestampError> {
        Ok(Self {
            micros: Self::micros_of(text)?,
            text: text.to_owned(),
        })
    }

    /// The instant `text` names, in microseconds since the Unix epoch (no copy of the text: a
    /// survey checks every line's timestamp and keeps none).
    fn micros_of(text: &str) -> Result<i64, TimestampError> {
        let err = |reason| TimestampError {
            text: text.chars().take(64).collect(),
            reason,
        };
        let b = text.as_bytes();
        let num = |range: std::ops::Range<usize>| -> Result<i64, TimestampError> {
            let digits = b.get(range).ok_or_else(|| err("too short"))?;
            if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                return Err(err("expected digits"));
            }
            Ok(digits
                .iter()
                .fold(0i64, |n, d| n * 10 + i64::from(d - b'0')))
        };
        let expect = |at: usize, allowed: &[u8], reason| match b.get(at) {
            Some(c) if allowed.contains(c) => Ok(()),
            _ => Err(err(reason)),
        };
        let year = num(0..4)?;
        expect(4, b"-", "expected '-' after the year")?;
        let month = num(5..7)?;
        expect(7, b"-", "expected '-' after the month")?;
        let day = num(8..10)?;
        expect(10, b"Tt ", "expected 'T' between date and time")?;
        let hour = num(11..13)?;
        expect(13, b":", "expected ':' after the hour")?;
        let minute = num(14..16)?;
        expect(16, b":", "expected ':' after the minute")?;
        let second = num(17..19)?;
        if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
            return Err(err("no such date"));
        }
        if hour > 23 || minute > 59 || second > 60 {
            return Err(err("no such time of day"));
        }
        let mut at = 19;
        let mut frac_micros = 0i64;
        if b.get(at) == Some(&b'.') {
            let start = at + 1;
            at = start;
            while b.get(at).is_some_and(u8::is_ascii_digit) {
                at += 1;
            }
            if at == start {
                return Err(err("expected digits after '.'"));
            }
            for i in 0..6 {
                let d = if start + i < at {
                    i64::from(b[start + i] - b'0')
                } else {
                    0
                };
                frac_micros = frac_micros * 10 + d;
            }
        }
        let offset_seconds = match b.get(at) {
            Some(b'Z' | b'z') if at + 1 == b.len() => 0,
            Some(sign @ (b'+' | b'-')) if at + 6 == b.len() => {
                let h = num(at + 1..at + 3)?;
                expect(at + 3, b":", "expected ':' in the offset")?;
                let m = num(at + 4..at + 6)?;
                if h > 23 || m > 59 {
                    return Err(err("no such offset"));
                }
                let s = h * 3600 + m * 60;
                if *sign == b'-' { -s } else { s }
            }
            _ => return Err(err("expected 'Z' or a ±HH:MM offset at the end")),
        };
        let days = days_from_civil(year, month, day);
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second.min(59) - offset_seconds;
        Ok(seconds * 1_000_000 + frac_micros)
    }
}

/// RFC 3339 UTC text of `micros` with `digits` fractional digits.
fn format_micros(micros: i64, digits: usize) -> String {
    let seconds = micros.div_euclid(1_000_000);
    let sub = micros.rem_euclid(1_000_000);
    let (days, rem) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    let frac = format!("{sub:06}");
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        &frac[..digits.min(6)]
    )
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

// Howard Hinnant's days_from_civil / civil_from_days (proleptic Gregorian calendar).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (H. Hinnant's
/// civil_from_days): the one calendar the timestamps' parsing, their text and the writers'
/// dates share.
pub fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

impl PartialEq for Timestamp {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}
impl Eq for Timestamp {}

impl PartialOrd for Timestamp {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Timestamp {
    /// Orders by instant, then by text so distinct texts of one instant still order totally.
    fn cmp(&self, other: &Self) -> Ordering {
        self.micros
            .cmp(&other.micros)
            .then_with(|| self.text.cmp(&other.text))
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Timestamp({:?})", self.text)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse_str(&text).map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for Timestamp {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Timestamp".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "RFC 3339 date-time exactly as the source recorded it (full precision kept).",
            "type": "string",
            "format": "date-time"
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_full_precision_text_and_orders_by_instant() {
        let a = Timestamp::parse_str("2025-06-02T18:46:59.937123456Z").unwrap();
        let b = Timestamp::parse_str("2025-06-02T20:46:59.937+02:00").unwrap();
        assert_eq!(a.as_str(), "2025-06-02T18:46:59.937123456Z");
        assert_eq!(a.unix_micros(), 1_748_890_019_937_123);
        assert_eq!(b.unix_micros(), 1_748_890_019_937_000);
        assert!(b < a);
    }

    #[test]
    fn rejects_what_is_not_rfc3339() {
        for bad in [
            "",
            "2025-13-01T00:00:00Z",
            "2025-02-30T00:00:00Z",
            "2025-06-02",
            "2025-06-02T18:46:59",
            "2025-06-02T18:46:59.Z",
        ] {
            assert!(Timestamp::parse_str(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn unix_millis_round_trip_through_text() {
        let t = Timestamp::from_unix_millis(Extracted::new(1_748_890_019_937)).unwrap();
        assert_eq!(t.as_str(), "2025-06-02T18:46:59.937Z");
        assert_eq!(
            Timestamp::parse_str(t.as_str()).unwrap().unix_micros(),
            t.unix_micros()
        );
        let before_epoch = Timestamp::from_unix_millis(Extracted::new(-1)).unwrap();
        assert_eq!(before_epoch.as_str(), "1969-12-31T23:59:59.999Z");
    }
}
