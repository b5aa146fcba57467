//! Civil UTC dates and times as the foreign writers spell them.

/// Days since 1970-01-01 to (year, month, day): the canonical calendar
/// ([`pond_canonical::civil_from_days`]), month and day as the writers format them.
pub(crate) fn civil(days: i64) -> (i64, u32, u32) {
    let (y, m, d) = pond_canonical::civil_from_days(days);
    // A month is 1-12 and a day 1-31.
    (y, m as u32, d as u32)
}

/// Epoch ms as the ISO form pi and Codex write, `2025-12-09T00:52:54.397Z`.
pub(crate) fn iso_millis(ms: i64) -> String {
    let (days, rem) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    let (y, mo, d) = civil(days);
    let (h, mi, s, milli) = (
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000,
    );
    if !(0..=9999).contains(&y) {
        return format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}Z");
    }
    // Written digit by digit: one per pi entry and per Codex line, and `format!` was 3% of a
    // conversion to pi and 6% of one to Codex.
    let mut text = [0u8; 24];
    let mut at = 0;
    let mut put = |n: i64, width: u32, after: u8| {
        for i in (0..width).rev() {
            text[at] = b'0' + (n / 10i64.pow(i) % 10) as u8;
            at += 1;
        }
        text[at] = after;
        at += 1;
    };
    put(y, 4, b'-');
    put(i64::from(mo), 2, b'-');
    put(i64::from(d), 2, b'T');
    put(h, 2, b':');
    put(mi, 2, b':');
    put(s, 2, b'.');
    put(milli, 3, b'Z');
    String::from_utf8_lossy(&text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codex_timestamps_are_written_as_before() {
        // How the Codex writer spelled an instant (in microseconds) with `format!`, before it
        // took `iso_millis` of the instant's milliseconds: the same text for every instant,
        // before 1970 and after 9999 too.
        let before = |micros: i64| {
            let secs = micros.div_euclid(1_000_000);
            let millis = micros.rem_euclid(1_000_000) / 1000;
            let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
            let (y, mo, d) = civil(days);
            let (h, mi, s) = (rem / 3600, rem / 60 % 60, rem % 60);
            format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{millis:03}Z")
        };
        let mut micros = -70_000_000_000_000_000i64;
        while micros < 260_000_000_000_000_000 {
            for at in [
                micros,
                micros + 1,
                micros + 999,
                micros - 1,
                micros + 1_000_001,
            ] {
                assert_eq!(iso_millis(at.div_euclid(1000)), before(at), "{at}");
            }
            micros += 7_777_777_777_777;
        }
    }

    #[test]
    fn iso_millis_is_what_format_writes() {
        assert_eq!(iso_millis(1_765_241_574_397), "2025-12-09T00:52:54.397Z");
        assert_eq!(iso_millis(0), "1970-01-01T00:00:00.000Z");
        for ms in [
            1,
            999,
            86_399_999,
            951_782_400_000,
            4_102_444_800_000,
            253_402_300_799_999,
        ] {
            let (days, rem) = (ms / 86_400_000, ms % 86_400_000);
            let (y, mo, d) = civil(days);
            let expected = format!(
                "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
                rem / 3_600_000,
                rem / 60_000 % 60,
                rem / 1000 % 60,
                rem % 1000
            );
            assert_eq!(iso_millis(ms), expected);
        }
        assert_eq!(iso_millis(253_402_300_800_000), "10000-01-01T00:00:00.000Z");
    }
}
