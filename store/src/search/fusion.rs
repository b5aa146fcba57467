//! Fusion of the retrievers (spec 8): each arm's surviving raw scores, after its own grouping by
//! session root, are divided by the best session score it returned (max normalization, into
//! [0, 1]), and summed across arms with fixed per-arm weights. A session one arm did not return
//! scores 0 in that arm.
//!
//! Dividing by the maximum keeps each arm's own contrast: BM25 scores spread widely, cosine
//! similarities of one query crowd together (0.45 to 0.6, say), and min-max would stretch that
//! crowd to the whole [0, 1] and let small vector differences outvote clear text evidence.
//! Normalization and weights were chosen by `scripts/search-benchmarks/simulate_fusion.py`,
//! which replays this arithmetic over both arms' recorded results on `../shared/searchbench`
//! (docs/benchmarks.md, "Hybrid search quality on LoCoMo").

use super::{MATCHES_PER_SESSION, MessageHit, SessionGroup};
use std::collections::HashMap;

/// The weight of the full-text (BM25) arm.
pub const FULL_TEXT_WEIGHT: f32 = 0.5;
/// The weight of the vector arm.
pub const VECTOR_WEIGHT: f32 = 0.5;

/// One retriever's results, grouped by session root, best first.
#[derive(Debug, Clone)]
pub struct Arm {
    pub name: &'static str,
    pub weight: f32,
    pub groups: Vec<SessionGroup>,
}

/// An arm's part in a fused score (`pond search --explain`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArmScore {
    pub arm: &'static str,
    /// The arm's own score: BM25, or cosine similarity.
    pub raw: f32,
    /// Divided by the arm's best session score, in [0, 1].
    pub normalized: f32,
}

/// What an arm returned, as the fusion saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct ArmTrace {
    pub name: &'static str,
    pub weight: f32,
    /// The lowest and highest session scores; each is divided by the highest.
    pub min: f32,
    pub max: f32,
    /// Its sessions, best first, with their raw score.
    pub sessions: Vec<(String, f32)>,
    /// Lance's `analyze_plan` of its query, when asked for.
    pub plan: Option<String>,
    /// The candidate pools it asked its index for, and how many came back each time (the
    /// vector arm's; the full-text arm's are the search trace's).
    pub rounds: Vec<(usize, usize)>,
}

/// A fused result's hit, with what each arm gave it.
#[derive(Debug, Clone, PartialEq)]
pub struct FusedHit {
    pub session_id: String,
    pub message_id: String,
    pub fused: f32,
    pub arms: Vec<ArmScore>,
}

struct Bounds {
    min: f32,
    max: f32,
}

impl Bounds {
    fn of(groups: &[SessionGroup]) -> Self {
        let mut b = Self {
            min: f32::INFINITY,
            max: f32::NEG_INFINITY,
        };
        for g in groups {
            b.min = b.min.min(g.score);
            b.max = b.max.max(g.score);
        }
        b
    }

    /// `x` as a share of the arm's best session score, in [0, 1]. An arm whose best score is not
    /// positive (every vector pointing away from the query) carries no evidence: 0.
    fn normalize(&self, x: f32) -> f32 {
        if self.max > 0.0 {
            (x / self.max).clamp(0.0, 1.0)
        } else {
            0.0
        }
    }
}

/// Fuses the arms: sessions by their fused score (ties by session id), the best `limit`, each
/// with its best [`MATCHES_PER_SESSION`] messages by their own fused score; a message's fused
/// score sums, per arm that found it, the weight times its normalized score. `min_score` drops
/// sessions and messages whose fused score is below it. Returns the groups, each arm's trace
/// (no plan) and every returned hit's attribution.
pub fn fuse(
    arms: Vec<Arm>,
    limit: usize,
    min_score: Option<f32>,
) -> (Vec<SessionGroup>, Vec<ArmTrace>, Vec<FusedHit>) {
    let bounds: Vec<Bounds> = arms.iter().map(|a| Bounds::of(&a.groups)).collect();
    let weights: HashMap<&'static str, f32> = arms.iter().map(|a| (a.name, a.weight)).collect();
    let traces = arms
        .iter()
        .zip(&bounds)
        .map(|(a, b)| ArmTrace {
            name: a.name,
            weight: a.weight,
            min: if a.groups.is_empty() { 0.0 } else { b.min },
            max: if a.groups.is_empty() { 0.0 } else { b.max },
            sessions: a
                .groups
                .iter()
                .map(|g| (g.session.id.to_string(), g.score))
                .collect(),
            plan: None,
            rounds: Vec::new(),
        })
        .collect();

    struct Fused {
        group: SessionGroup,
        score: f32,
        hits: HashMap<(String, String), (MessageHit, Vec<ArmScore>)>,
    }
    let mut sessions: HashMap<String, Fused> = HashMap::new();
    for (arm, b) in arms.into_iter().zip(&bounds) {
        for g in arm.groups {
            let id = g.session.id.to_string();
            let session_score = arm.weight * b.normalize(g.score);
            let entry = sessions.entry(id).or_insert_with(|| Fused {
                group: SessionGroup {
                    session: g.session.clone(),
                    score: 0.0,
                    hits: Vec::new(),
                },
                score: 0.0,
                hits: HashMap::new(),
            });
            entry.score += session_score;
            for h in g.hits {
                let part = ArmScore {
                    arm: arm.name,
                    raw: h.score,
                    normalized: b.normalize(h.score),
                };
                entry
                    .hits
                    .entry((h.session_id.clone(), h.message_id.clone()))
                    .or_insert_with(|| (h, Vec::new()))
                    .1
                    .push(part);
            }
        }
    }
    let mut fused: Vec<Fused> = sessions.into_values().collect();
    for f in &mut fused {
        f.group.score = f.score;
    }
    fused.retain(|f| min_score.is_none_or(|m| f.score >= m));
    fused.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.group.session.id.cmp(&b.group.session.id))
    });
    fused.truncate(limit);

    let mut groups = Vec::with_capacity(fused.len());
    let mut attributions = Vec::new();
    for f in fused {
        let mut hits: Vec<(MessageHit, Vec<ArmScore>, f32)> = f
            .hits
            .into_values()
            .map(|(mut h, parts)| {
                let score: f32 = parts.iter().map(|p| weights[p.arm] * p.normalized).sum();
                h.score = score;
                (h, parts, score)
            })
            .filter(|(_, _, s)| min_score.is_none_or(|m| *s >= m))
            .collect();
        hits.sort_by(|a, b| {
            b.2.total_cmp(&a.2)
                .then_with(|| a.0.session_id.cmp(&b.0.session_id))
                .then_with(|| a.0.message_id.cmp(&b.0.message_id))
        });
        hits.truncate(MATCHES_PER_SESSION);
        let mut group = f.group;
        for (h, parts, score) in hits {
            attributions.push(FusedHit {
                session_id: h.session_id.clone(),
                message_id: h.message_id.clone(),
                fused: score,
                arms: parts,
            });
            group.hits.push(h);
        }
        groups.push(group);
    }
    (groups, traces, attributions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pond_canonical::Session;

    fn group(session: &str, hits: &[(&str, f32)]) -> SessionGroup {
        let s: Session = serde_json::from_value(serde_json::json!({
            "id": session, "source_agent": "codex", "created_at": "2026-01-01T00:00:00Z",
            "project": "/p", "options": {}
        }))
        .unwrap();
        SessionGroup {
            session: s,
            score: hits[0].1,
            hits: hits
                .iter()
                .map(|(m, score)| MessageHit {
                    session_id: session.to_owned(),
                    message_id: (*m).to_owned(),
                    role: "user".to_owned(),
                    timestamp: String::new(),
                    score: *score,
                    recall_score: *score,
                    text: String::new(),
                    text_chars: 0,
                })
                .collect(),
        }
    }

    #[test]
    fn arms_are_normalized_then_weighted() {
        // Full text: a 10, b 6, c 2. Vector: c 0.9, a 0.5 (b not found).
        let text = Arm {
            name: "full_text",
            weight: 0.6,
            groups: vec![
                group("a", &[("a1", 10.0), ("a2", 4.0)]),
                group("b", &[("b1", 6.0)]),
                group("c", &[("c1", 2.0)]),
            ],
        };
        let vector = Arm {
            name: "vector",
            weight: 0.4,
            groups: vec![group("c", &[("c1", 0.9)]), group("a", &[("a2", 0.5)])],
        };
        let (groups, traces, hits) = fuse(vec![text, vector], 10, None);
        let scores: Vec<(String, f32)> = groups
            .iter()
            .map(|g| (g.session.id.to_string(), g.score))
            .collect();
        // Each arm divided by its best: a 0.6 * 1 + 0.4 * 0.5/0.9 = 0.8222; b 0.6 * 0.6 = 0.36;
        // c 0.6 * 0.2 + 0.4 * 1 = 0.52.
        let expect = [("a", 0.6 + 0.4 * 0.5 / 0.9), ("c", 0.52), ("b", 0.36)];
        for ((id, s), (eid, es)) in scores.iter().zip(expect) {
            assert_eq!(id, eid);
            assert!((s - es).abs() < 1e-6, "{scores:?}");
        }
        assert_eq!(traces[0].min, 2.0);
        assert_eq!(traces[1].max, 0.9);
        // a2 was found by both arms: 0.6 * 4/10 + 0.4 * 0.5/0.9 = 0.4622; a1 by text only: 0.6.
        let a = &groups[0];
        assert_eq!(a.hits[0].message_id, "a1");
        assert_eq!(a.hits[1].message_id, "a2");
        assert!((a.hits[1].score - (0.24 + 0.4 * 0.5 / 0.9)).abs() < 1e-6);
        let a2 = hits.iter().find(|h| h.message_id == "a2").unwrap();
        assert_eq!(a2.arms.len(), 2);
        // min_score drops what fuses below it; limit keeps the best.
        let (groups, ..) = fuse(
            vec![Arm {
                name: "full_text",
                weight: 1.0,
                groups: vec![group("a", &[("a1", 3.0)]), group("b", &[("b1", 1.0)])],
            }],
            1,
            Some(0.5),
        );
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].session.id.to_string(), "a");
    }

    #[test]
    fn an_arm_with_no_positive_score_adds_nothing() {
        let text = Arm {
            name: "full_text",
            weight: 0.5,
            groups: vec![group("a", &[("a1", 2.0)]), group("b", &[("b1", 1.0)])],
        };
        let vector = Arm {
            name: "vector",
            weight: 0.5,
            groups: vec![group("b", &[("b1", -0.1)]), group("a", &[("a1", -0.3)])],
        };
        let (groups, ..) = fuse(vec![text, vector], 10, None);
        let scores: Vec<(String, f32)> = groups
            .iter()
            .map(|g| (g.session.id.to_string(), g.score))
            .collect();
        assert_eq!(
            scores,
            vec![("a".to_owned(), 0.5), ("b".to_owned(), 0.25)],
            "negative similarities must neither flip the order nor subtract"
        );
    }
}
