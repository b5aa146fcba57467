//! Counting a few terms in a document without building its every term: what BM25 needs of a
//! document (each query term's frequency, and the document's length in terms) for an n-gram
//! index, at a fraction of the cost of Lance's token stream.
//!
//! Lance's n-gram analysis (`ngram` base tokenizer, lower case, ASCII folding, no stemming, no
//! stop words, no length limit: [`super::IndexKind::inverted_params`]) makes one term of every
//! window of `min..=max` characters, each window lower-cased and folded on its own. A window of
//! ASCII characters is therefore its bytes lower-cased, and is counted here straight from the
//! text's bytes; a window holding any other character is cut by Lance's own analyzer, run only
//! over the stretch of text around that character. The counts are the token stream's exactly
//! (the tests below: fixed and random texts of every script, compared term by term).

use super::search::TextAnalyzer;

/// The terms to count, each with its position in the caller's list
/// ([`TextAnalyzer::term_counter`]).
pub struct TermCounter {
    /// Every term, for the windows Lance's analyzer cuts (every window, for an analysis
    /// other than n-grams of 3 to 7 characters).
    all: foldhash::HashMap<String, usize>,
    fast: Option<Ascii>,
}

/// What counts the windows of ASCII characters of an n-gram analysis.
struct Ascii {
    min: usize,
    max: usize,
    /// The terms of `min..=max` ASCII bytes (the only ones an ASCII window can be), by their
    /// bytes and length ([`key`]).
    ascii: foldhash::HashMap<u64, usize>,
    /// A bit per hash of the first three bytes of each of `ascii`'s terms: most windows of a
    /// text start with no query term's prefix and are passed over on one bit.
    prefix: Box<[u64; PREFIX_WORDS]>,
}

const PREFIX_BITS: u32 = 16;
const PREFIX_WORDS: usize = (1 << PREFIX_BITS) / 64;

/// A window of ASCII bytes as one number: its bytes (little end first) and its length.
fn key(bytes: u64, len: usize) -> u64 {
    let mask = if len >= 8 {
        u64::MAX
    } else {
        (1u64 << (8 * len)) - 1
    };
    (bytes & mask) | ((len as u64) << 56)
}

fn prefix_slot(bytes: u64) -> (usize, u64) {
    let h =
        ((bytes & 0xFF_FFFF).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - PREFIX_BITS)) as usize;
    (h / 64, 1u64 << (h % 64))
}

impl TermCounter {
    /// A counter of `terms` (as the index's analysis makes them). `ngram` is the analysis's
    /// window lengths, when it is Lance's n-gram analysis; windows of 3 to 7 characters are
    /// counted from the bytes (a window's bytes are one number), any other analysis through
    /// the token stream.
    pub(crate) fn new(terms: &[String], ngram: Option<(usize, usize)>) -> Self {
        let mut all = foldhash::HashMap::default();
        for (i, t) in terms.iter().enumerate() {
            all.entry(t.clone()).or_insert(i);
        }
        let fast = ngram
            .filter(|&(min, max)| (3..=7).contains(&min) && (min..=7).contains(&max))
            .map(|(min, max)| Ascii::new(terms, min, max));
        Self { all, fast }
    }

    /// Adds each term's occurrences among `text`'s terms to `freq` (indexed as the terms were
    /// given) and returns the number of terms `text` has. `analyzer` is the index's own, for
    /// the windows that hold a character other than ASCII.
    pub(crate) fn count(&self, analyzer: &mut TextAnalyzer, text: &str, freq: &mut [u32]) -> u64 {
        let Some(fast) = &self.fast else {
            let mut n = 0;
            analyzer.document_terms(text, |t| {
                n += 1;
                if let Some(&i) = self.all.get(t) {
                    freq[i] += 1;
                }
            });
            return n;
        };
        fast.count(&self.all, analyzer, text, freq)
    }
}

impl Ascii {
    fn new(terms: &[String], min: usize, max: usize) -> Self {
        let mut prefix = Box::new([0u64; PREFIX_WORDS]);
        let mut ascii = foldhash::HashMap::default();
        for (i, t) in terms.iter().enumerate() {
            if t.is_ascii() && (min..=max).contains(&t.len()) {
                let mut bytes = 0u64;
                for (k, b) in t.bytes().enumerate() {
                    bytes |= u64::from(b) << (8 * k);
                }
                ascii.entry(key(bytes, t.len())).or_insert(i);
                let (w, bit) = prefix_slot(bytes);
                prefix[w] |= bit;
            }
        }
        Self {
            min,
            max,
            ascii,
            prefix,
        }
    }

    fn count(
        &self,
        all: &foldhash::HashMap<String, usize>,
        analyzer: &mut TextAnalyzer,
        text: &str,
        freq: &mut [u32],
    ) -> u64 {
        let bytes = text.as_bytes();
        let n = bytes.len();
        let ascii_only = text.is_ascii();
        // Windows of ASCII characters, straight from the bytes: `w` holds the (lower-cased)
        // bytes from `p` on, `clean` how many of them, from `p`, are ASCII.
        let lower = |b: u8| u64::from(b.to_ascii_lowercase());
        let mut next_other = if ascii_only {
            n
        } else {
            bytes.iter().position(|b| !b.is_ascii()).unwrap_or(n)
        };
        let mut w = 0u64;
        for (k, b) in bytes.iter().take(self.max).enumerate() {
            w |= lower(*b) << (8 * k);
        }
        for p in 0..n {
            if p > 0 {
                w >>= 8;
                if let Some(b) = bytes.get(p + self.max - 1) {
                    w |= lower(*b) << (8 * (self.max - 1));
                }
            }
            if next_other < p {
                next_other = bytes[p..]
                    .iter()
                    .position(|b| !b.is_ascii())
                    .map_or(n, |i| p + i);
            }
            let clean = next_other.min(n) - p;
            if clean < self.min {
                continue;
            }
            let (word, bit) = prefix_slot(w);
            if self.prefix[word] & bit == 0 {
                continue;
            }
            for len in self.min..=self.max.min(clean) {
                if let Some(&i) = self.ascii.get(&key(w, len)) {
                    freq[i] += 1;
                }
            }
        }
        if ascii_only {
            return ngram_count(n as u64, self.min as u32, self.max as u32);
        }
        // The other windows: each lies within `max - 1` characters of a character other than
        // ASCII; the stretches around those characters (merged where they touch) are cut by
        // the analyzer, and of their terms only those windows that hold such a character are
        // counted (the ASCII ones were counted above).
        let starts: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
        let chars = starts.len();
        let reach = self.max - 1;
        let mut stretch: Option<(usize, usize)> = None;
        let mut flush = |from: usize, to: usize, freq: &mut [u32]| {
            let start = starts[from];
            let end = starts.get(to + 1).copied().unwrap_or(n);
            let piece = &text[start..end];
            analyzer.document_terms_at(piece, |term, a, b| {
                if !piece.as_bytes()[a..b].is_ascii()
                    && let Some(&i) = all.get(term)
                {
                    freq[i] += 1;
                }
            });
        };
        for (c, &at) in starts.iter().enumerate() {
            if bytes[at].is_ascii() {
                continue;
            }
            let (from, to) = (c.saturating_sub(reach), (c + reach).min(chars - 1));
            stretch = match stretch {
                Some((f, t)) if from <= t + 1 => Some((f, to.max(t))),
                Some((f, t)) => {
                    flush(f, t, freq);
                    Some((from, to))
                }
                None => Some((from, to)),
            };
        }
        if let Some((f, t)) = stretch {
            flush(f, t, freq);
        }
        ngram_count(chars as u64, self.min as u32, self.max as u32)
    }
}

/// The number of terms the n-gram analysis makes of a text of `chars` characters: one window of
/// each length `min..=max` at every position it fits.
pub fn ngram_count(chars: u64, min: u32, max: u32) -> u64 {
    (min..=max)
        .map(|n| chars.saturating_sub(u64::from(n) - 1))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::substrate::IndexKind;
    use proptest::prelude::*;

    fn analyzer() -> TextAnalyzer {
        TextAnalyzer::for_index(IndexKind::Ngram { min: 3, max: 5 }).unwrap()
    }

    fn check(text: &str, query: &str) {
        let mut a = analyzer();
        let mut terms = a.query_terms(query);
        terms.sort();
        terms.dedup();
        let counter = TermCounter::new(&terms, Some((3, 5)));
        assert!(counter.fast.is_some());
        let mut fast = vec![0u32; terms.len()];
        let mut slow = vec![0u32; terms.len()];
        let n_fast = counter.count(&mut a, text, &mut fast);
        // The reference: the same terms counted from Lance's token stream, term by term (the
        // counter's own path for an analysis it does not count from bytes).
        let n_slow = TermCounter::new(&terms, None).count(&mut a, text, &mut slow);
        assert_eq!(n_fast, n_slow, "length of {text:?}");
        let differ: Vec<_> = terms
            .iter()
            .zip(fast.iter().zip(&slow))
            .filter(|(_, (f, s))| f != s)
            .collect();
        assert!(differ.is_empty(), "{text:?} / {query:?}: {differ:?}");
    }

    #[test]
    fn counts_are_the_token_streams() {
        for (text, query) in [
            ("", "abc"),
            ("ab", "abc"),
            ("abc", "ABC"),
            ("The cat sat on THE mat; the end.", "the mat"),
            ("café CAFÉ cafe", "café"),
            ("Straße strasse STRASSE", "straße"),
            ("数据库 数据 库存", "数据库"),
            ("İstanbul istanbul", "istanbul"),
            ("ﬁle file ǅemal", "file dž"),
            ("emoji 🦀🦀 crab 🦀 rust", "🦀 rust"),
            ("a\u{301}bc abc", "abc"),
            ("x".repeat(300).as_str(), "xxx xxxx"),
            ("aé", "aé"),
            ("éa", "éa"),
            ("ab\u{80}cd abcd", "bcd abc"),
        ] {
            check(text, query);
        }
    }

    fn piece() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-zA-Z ]{0,12}",
            "[a-c A-C.,;]{0,8}",
            Just("é".to_owned()),
            Just("É".to_owned()),
            Just("ß".to_owned()),
            Just("İ".to_owned()),
            Just("æ".to_owned()),
            Just("ﬁ".to_owned()),
            Just("数据".to_owned()),
            Just("🦀".to_owned()),
            Just("\u{301}".to_owned()),
            Just("ǅ".to_owned()),
            Just("Σ".to_owned()),
            "\\PC{0,3}",
        ]
    }

    proptest! {
        #[test]
        fn counts_are_the_token_streams_for_any_text(
            text in proptest::collection::vec(piece(), 0..12).prop_map(|p| p.concat()),
            query in proptest::collection::vec(piece(), 1..4).prop_map(|p| p.concat()),
            from_text in any::<bool>(),
        ) {
            // Half the queries are cut from the text itself, so they match.
            let query = if from_text && text.chars().count() > 4 {
                text.chars().skip(1).take(6).collect()
            } else {
                query
            };
            check(&text, &query);
        }
    }
}
