//! The ranking step: each candidate scored with every term of the query by Lance's own BM25
//! (its `MemBM25Scorer`: k1 = 1.2, b = 0.75, idf = ln(1 + (N − df + 0.5) / (df + 0.5))), from the
//! corpus statistics of the index ([`crate::substrate::Substrate::term_stats`]). The score is the
//! one Lance gives the row for the whole query; only which rows get scored is pond's choice.

use super::query::AnalyzedQuery;
pub use crate::substrate::ngram_count;
use crate::substrate::{TermCounter, TermStats, TextAnalyzer};
use lance_index::scalar::inverted::{MemBM25Scorer, Scorer};
use std::collections::HashMap;

/// Scores texts against one query.
pub struct Ranker {
    scorer: MemBM25Scorer,
    /// Counts the query's terms in a text (in `query.terms` order) from its bytes, not from
    /// every one of its grams: about 100,000 grams a search at 1M messages.
    counter: TermCounter,
    /// Per query term, its BM25 weight (idf; zero for a term no row holds).
    weights: Vec<f32>,
    /// Per query term, whether the recall step asks for it.
    recall: Vec<bool>,
}

/// A document's score, and whether it holds one of the recall step's terms (which is what
/// makes it a candidate).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scored {
    pub score: f32,
    pub recalled: bool,
}

impl Ranker {
    /// A ranker for `query`, whose terms' statistics are `stats` (in `query.terms` order);
    /// `recall` are the terms the recall step asks for.
    pub fn new(
        analyzer: &TextAnalyzer,
        query: &AnalyzedQuery,
        stats: &TermStats,
        recall: &[&str],
    ) -> Self {
        let token_docs: HashMap<String, usize> = query
            .terms
            .iter()
            .zip(&stats.document_frequency)
            .map(|(t, df)| (t.clone(), *df as usize))
            .collect();
        let scorer = MemBM25Scorer::new(stats.terms, stats.documents as usize, token_docs);
        let weights = query.terms.iter().map(|t| scorer.query_weight(t)).collect();
        let counter = analyzer.term_counter(&query.terms);
        let recall = query
            .terms
            .iter()
            .map(|t| recall.contains(&t.as_str()))
            .collect();
        Self {
            scorer,
            counter,
            weights,
            recall,
        }
    }

    /// The BM25 score of a document. `text` is the document, or its first characters when it is
    /// longer than pond reads for ranking; `length` is then the number of terms of the whole
    /// document, which BM25's length normalisation needs.
    pub fn score(&self, analyzer: &mut TextAnalyzer, text: &str, length: Option<u64>) -> Scored {
        let mut freq = vec![0u32; self.weights.len()];
        let counted = analyzer.count_terms(&self.counter, text, &mut freq);
        let length = length.unwrap_or(counted).min(u64::from(u32::MAX)) as u32;
        let mut score = 0.0f32;
        let mut recalled = false;
        for (i, f) in freq.iter().enumerate() {
            if *f > 0 {
                score += self.weights[i] * self.scorer.doc_weight(*f, length);
                recalled |= self.recall[i];
            }
        }
        Scored { score, recalled }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::substrate::IndexKind;

    #[test]
    fn the_gram_count_is_what_the_analyzer_makes() {
        let mut a = TextAnalyzer::for_index(IndexKind::Ngram { min: 3, max: 5 }).unwrap();
        for text in [
            "",
            "ab",
            "abc",
            "abcd",
            "Straße und 数据库 ok",
            "x".repeat(1000).as_str(),
        ] {
            let mut n = 0u64;
            a.document_terms(text, |_| n += 1);
            assert_eq!(
                n,
                ngram_count(text.chars().count() as u64, 3, 5),
                "{text:?}"
            );
        }
    }

    #[test]
    fn rarer_terms_and_more_matches_score_higher() {
        let mut a = TextAnalyzer::for_index(IndexKind::Ngram { min: 3, max: 5 }).unwrap();
        let q = AnalyzedQuery::new(&mut a, "zebra");
        let df = |t: &str| if t == "zeb" { 1 } else { 50 };
        let stats = TermStats {
            documents: 100,
            terms: 100 * 60,
            document_frequency: q.terms.iter().map(|t| df(t)).collect(),
            ..TermStats::default()
        };
        let r = Ranker::new(&a, &q, &stats, &["zeb"]);
        let full = r.score(&mut a, "a zebra here", None);
        let part = r.score(&mut a, "a bra here", None);
        assert!(
            full.score > part.score && part.score > 0.0,
            "{full:?} {part:?}"
        );
        assert!(full.recalled && !part.recalled);
        assert_eq!(r.score(&mut a, "nothing alike", None).score, 0.0);
        // A longer document with the same matches scores lower (length normalisation).
        assert!(r.score(&mut a, "a zebra here", Some(10_000)).score < full.score);
    }
}
