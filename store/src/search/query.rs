//! A query's analysis, and the choice of the few terms that find its candidates.
//!
//! The n-gram index cuts a query like any text: every 3-, 4- and 5-character gram of the whole
//! string, across spaces too (search-language-neutral-index). Ranked all together, those grams
//! are the query's BM25 score; but asking Lance for all of them costs in proportion to the
//! postings of every gram, and the common ones ("the", "ing", " th") hold most of the corpus:
//! at a million messages that is seconds per query (docs/benchmarks.md, "Search latency at 1M messages").
//! So the search runs in two steps (docs/decisions.md, "Full-text search in two steps"):
//! - **recall**: Lance ranks the rows that hold the query's rarest 3-grams, chosen here under a
//!   budget of postings ([`recall_terms`]); a 3-character string is exactly one term of the
//!   index, so each is an exact term query;
//! - **rank**: the candidates are scored with every gram of the query ([`super::bm25`]).

use crate::substrate::TextAnalyzer;

/// The most postings the recall step's terms may hold together. Lance's cost for a term query
/// grows with its posting list, whatever the limit and the filter; this bounds the step's work
/// for any corpus. Measured in docs/benchmarks.md ("Search latency at 1M messages"); a corpus smaller than this
/// is searched with every 3-gram of the query.
pub const RECALL_POSTINGS_BUDGET: u64 = 120_000;

/// The most terms the recall step asks for, whatever their postings.
pub const MAX_RECALL_TERMS: usize = 64;

/// One 3-character window of the query as typed, and the index term it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// The three characters as the query has them: sent to Lance, which analyses them into
    /// exactly `term`.
    pub text: String,
    /// The index term (lower-cased, ASCII-folded).
    pub term: String,
    /// The word it lies within, if it lies within one (an index into [`AnalyzedQuery::words`]).
    pub word: Option<usize>,
}

/// A query cut into the index's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnalyzedQuery {
    /// Every distinct term of the query, in order of first appearance: what ranking scores.
    pub terms: Vec<String>,
    /// Every distinct 3-character window, in order: what recall may ask for.
    pub windows: Vec<Window>,
    /// The query's words: runs of letters, digits and `_`, at least 3 characters long.
    pub words: Vec<String>,
}

/// Whether `c` belongs to a word: letters and digits of every script, and `_`, so a
/// `snake_case_name` is one word.
pub fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

impl AnalyzedQuery {
    /// Analyses `text` with the index's own analyzer.
    pub fn new(analyzer: &mut TextAnalyzer, text: &str) -> Self {
        let mut terms: Vec<String> = Vec::new();
        for t in analyzer.query_terms(text) {
            if !terms.contains(&t) {
                terms.push(t);
            }
        }
        let chars: Vec<(usize, char)> = text.char_indices().collect();
        // The word each character belongs to.
        let mut words = Vec::new();
        let mut word_of = vec![None; chars.len()];
        let mut i = 0;
        while i < chars.len() {
            if !is_word_char(chars[i].1) {
                i += 1;
                continue;
            }
            let start = i;
            while i < chars.len() && is_word_char(chars[i].1) {
                i += 1;
            }
            if i - start >= 3 {
                let end = chars.get(i).map_or(text.len(), |c| c.0);
                word_of[start..i].fill(Some(words.len()));
                words.push(text[chars[start].0..end].to_owned());
            }
        }
        let mut windows: Vec<Window> = Vec::new();
        for i in 0..chars.len().saturating_sub(2) {
            let end = chars.get(i + 3).map_or(text.len(), |c| c.0);
            let window = &text[chars[i].0..end];
            let Some(term) = analyzer.query_terms(window).into_iter().next() else {
                continue;
            };
            if windows.iter().any(|w| w.term == term) {
                continue;
            }
            let word = word_of[i].filter(|w| word_of[i + 2] == Some(*w));
            windows.push(Window {
                text: window.to_owned(),
                term,
                word,
            });
        }
        Self {
            terms,
            windows,
            words,
        }
    }
}

/// A window chosen for recall, with the postings it costs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecallTerm {
    pub window: Window,
    pub document_frequency: u64,
}

/// The windows the recall step asks Lance for, given each window's document frequency
/// (`document_frequency(term)`): rarest first, within [`RECALL_POSTINGS_BUDGET`].
///
/// First the rarest window of each word (rarer words first), so a candidate is found by every
/// word of the query, not only by its rarest one; then the rarest of the rest. A window no row
/// holds finds nothing and is left out. The rarest window of all is always taken, even over
/// budget, so a query of only common words still finds its candidates.
pub fn recall_terms(
    query: &AnalyzedQuery,
    document_frequency: impl Fn(&str) -> u64,
) -> Vec<RecallTerm> {
    let mut candidates: Vec<RecallTerm> = query
        .windows
        .iter()
        .map(|w| RecallTerm {
            window: w.clone(),
            document_frequency: document_frequency(&w.term),
        })
        .filter(|c| c.document_frequency > 0)
        .collect();
    // Stable: among equally rare windows, the one that comes first in the query.
    candidates.sort_by_key(|c| c.document_frequency);
    let mut chosen: Vec<RecallTerm> = Vec::new();
    let mut postings = 0u64;
    let mut take = |c: &RecallTerm, chosen: &mut Vec<RecallTerm>| {
        if chosen.len() >= MAX_RECALL_TERMS || chosen.iter().any(|x| x.window == c.window) {
            return false;
        }
        if !chosen.is_empty() && postings + c.document_frequency > RECALL_POSTINGS_BUDGET {
            return false;
        }
        postings += c.document_frequency;
        chosen.push(c.clone());
        true
    };
    let mut covered = vec![false; query.words.len()];
    for c in &candidates {
        if let Some(w) = c.window.word
            && !covered[w]
        {
            covered[w] = true;
            take(c, &mut chosen);
        }
    }
    for c in &candidates {
        if chosen.len() >= MAX_RECALL_TERMS {
            break;
        }
        if !take(c, &mut chosen) && chosen.iter().all(|x| x.window != c.window) {
            // Sorted by frequency: every later window costs at least as much.
            break;
        }
    }
    if chosen.is_empty()
        && let Some(c) = candidates.first()
    {
        chosen.push(c.clone());
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::substrate::IndexKind;

    fn analyzer() -> TextAnalyzer {
        TextAnalyzer::for_index(IndexKind::Ngram { min: 3, max: 5 }).unwrap()
    }

    #[test]
    fn a_query_is_cut_like_a_document_across_words_and_scripts() {
        let q = AnalyzedQuery::new(&mut analyzer(), "Big Café");
        // Lower case, ASCII folding, grams across the space.
        for t in ["big", "g c", "cafe", " caf", "big c"] {
            assert!(q.terms.contains(&t.to_owned()), "{t} in {:?}", q.terms);
        }
        assert_eq!(q.words, vec!["Big", "Café"]);
        let windows: Vec<_> = q
            .windows
            .iter()
            .map(|w| (w.text.as_str(), w.term.as_str(), w.word))
            .collect();
        assert_eq!(
            windows,
            vec![
                ("Big", "big", Some(0)),
                ("ig ", "ig ", None),
                ("g C", "g c", None),
                (" Ca", " ca", None),
                ("Caf", "caf", Some(1)),
                ("afé", "afe", Some(1)),
            ]
        );
        let cjk = AnalyzedQuery::new(&mut analyzer(), "数据库索引");
        assert_eq!(cjk.words, vec!["数据库索引"]);
        assert_eq!(cjk.windows.len(), 3);
        assert!(cjk.terms.contains(&"数据库".to_owned()));
    }

    #[test]
    fn snake_case_is_one_word_and_short_words_are_not_words() {
        let q = AnalyzedQuery::new(&mut analyzer(), "fix parse_session_id in a go file");
        assert_eq!(q.words, vec!["fix", "parse_session_id", "file"]);
    }

    #[test]
    fn recall_takes_each_words_rarest_window_then_the_rarest_within_budget() {
        let q = AnalyzedQuery::new(&mut analyzer(), "the zebra");
        let df = |t: &str| match t {
            "zeb" => 3,
            "ebr" => 5,
            "bra" => 900,
            "the" => RECALL_POSTINGS_BUDGET, // too common to fit after the others
            "he " | "e z" | " ze" => 40_000,
            _ => 0,
        };
        let chosen: Vec<_> = recall_terms(&q, df)
            .into_iter()
            .map(|c| c.window.term)
            .collect();
        // "the" does not fit once "zebra" is in; " ze" is the first window over budget.
        assert_eq!(chosen, vec!["zeb", "ebr", "bra", "he ", "e z"]);
        // A query whose every window is over budget still gets its rarest one.
        let only_common = recall_terms(&AnalyzedQuery::new(&mut analyzer(), "the"), |_| {
            10 * RECALL_POSTINGS_BUDGET
        });
        assert_eq!(only_common.len(), 1);
        // Windows no row holds are never asked for.
        assert!(recall_terms(&q, |_| 0).is_empty());
    }
}
