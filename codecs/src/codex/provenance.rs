//! Which text of a Codex `message` is conversation and which is harness scaffolding
//! (model-part-provenance).
//!
//! Codex stores everything it injects as ordinary `message` items (format reference section 7):
//! developer messages, `<environment_context>`, AGENTS.md `<INSTRUCTIONS>` blocks,
//! `<user_instructions>`, `<turn_aborted>`, `<user_shell_command>`, the `<image ...>` wrapper.
//! Newer versions (0.10x+) also label every content item with a provenance
//! (`internal_chat_message_metadata_passthrough.content_item_metadata[].provenance.type`); where that
//! label exists it decides. Older files need the tag heuristics below, and one string may fuse
//! typed and injected text: [`split`] cuts it at exact byte boundaries into segments that
//! re-concatenate to the original (spec 6.5, rule 1).

use pond_canonical::Provenance;
use std::ops::Range;

/// One provenance-homogeneous span of a text: its byte range and, for injected text, what kind of
/// injection it is (kept in the part's `options.pond.injected_kind`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub range: Range<usize>,
    pub provenance: Provenance,
    pub kind: Option<&'static str>,
}

/// A block the harness injects: how it opens, how it closes, and what to call it.
struct Block {
    open: &'static str,
    close: &'static str,
    kind: &'static str,
}

/// The injected blocks Codex writes into user messages (format reference section 7).
const BLOCKS: &[Block] = &[
    Block {
        open: "<environment_context>",
        close: "</environment_context>",
        kind: "environment_context",
    },
    Block {
        open: "<user_instructions>",
        close: "</user_instructions>",
        kind: "user_instructions",
    },
    Block {
        open: "# AGENTS.md instructions for ",
        close: "</INSTRUCTIONS>",
        kind: "agents_md",
    },
    Block {
        open: "<INSTRUCTIONS>",
        close: "</INSTRUCTIONS>",
        kind: "agents_md",
    },
    Block {
        open: "<turn_aborted>",
        close: "</turn_aborted>",
        kind: "turn_aborted",
    },
    Block {
        open: "<user_shell_command>",
        close: "</user_shell_command>",
        kind: "user_shell_command",
    },
    Block {
        open: "<permissions instructions>",
        close: "</permissions instructions>",
        kind: "permissions_instructions",
    },
    Block {
        open: "<skills_instructions>",
        close: "</skills_instructions>",
        kind: "skills_instructions",
    },
    Block {
        open: "<collaboration_mode>",
        close: "</collaboration_mode>",
        kind: "collaboration_mode",
    },
    Block {
        open: "<image name=",
        close: ">",
        kind: "image_wrapper",
    },
    Block {
        open: "</image>",
        close: "",
        kind: "image_wrapper",
    },
];

/// The marker older Codex put before the typed request in a combined message (`S-2026-01`
/// `USER_MESSAGE_BEGIN`): everything up to and including its line is harness text.
const USER_MESSAGE_BEGIN: &str = "## My request for Codex:";

/// The provenance a Codex per-item label (`provenance.type`) states: `user` is the human's text,
/// every other label (`harness`, `agents_md`, `skills`, ...) is injected.
pub fn from_label(label: &str) -> Provenance {
    if label == "user" {
        Provenance::Conversational
    } else {
        Provenance::Injected
    }
}

/// Splits the text of one content item of a message in `role` into provenance-homogeneous
/// segments whose ranges cover `text` exactly, in order. `label` is the item's Codex provenance
/// label if the source recorded one.
pub fn split(text: &str, role: &str, label: Option<&str>) -> Vec<Segment> {
    let whole = |provenance, kind| {
        vec![Segment {
            range: 0..text.len(),
            provenance,
            kind,
        }]
    };
    if let Some(label) = label {
        let provenance = from_label(label);
        let kind = (provenance == Provenance::Injected).then_some("labelled");
        return whole(provenance, kind);
    }
    match role {
        // Model output is conversation.
        "assistant" => whole(Provenance::Conversational, None),
        "user" => split_user_text(text),
        // Developer and system messages are harness instructions.
        _ => whole(Provenance::Injected, Some("developer")),
    }
}

/// The tag heuristics for a user message without per-item labels.
fn split_user_text(text: &str) -> Vec<Segment> {
    let mut segments: Vec<Segment> = Vec::new();
    let mut push = |range: Range<usize>, provenance, kind| {
        if range.is_empty() {
            return;
        }
        match segments.last_mut() {
            Some(last) if last.provenance == provenance && last.kind == kind => {
                last.range.end = range.end
            }
            _ => segments.push(Segment {
                range,
                provenance,
                kind,
            }),
        }
    };
    // The harness preamble before "## My request for Codex:" (and the marker line itself).
    let mut pos = 0;
    // memchr's prepared searcher: `str::find` with a string builds a two-way searcher per call,
    // which cost more than the search on a user message's short text.
    static BEGIN: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(USER_MESSAGE_BEGIN.as_bytes()));
    if let Some(at) = BEGIN.find(text.as_bytes()) {
        let line_end = text[at..].find('\n').map_or(text.len(), |n| at + n + 1);
        push(
            0..line_end,
            Provenance::Injected,
            Some("user_message_begin"),
        );
        pos = line_end;
    }
    while pos < text.len() {
        let rest = &text[pos..];
        let trimmed = rest.trim_start();
        let lead = rest.len() - trimmed.len();
        if let Some(len) = block_at(trimmed) {
            // The block plus the whitespace around it is one injected segment.
            let mut end = pos + lead + len.0;
            end += text[end..].len() - text[end..].trim_start().len();
            push(pos..end, Provenance::Injected, Some(len.1));
            pos = end;
            continue;
        }
        // Conversational text up to the next block that starts a line.
        let next = next_block_line(rest).unwrap_or(rest.len());
        push(pos..pos + next, Provenance::Conversational, None);
        pos += next;
    }
    if segments.is_empty() {
        segments.push(Segment {
            range: 0..text.len(),
            provenance: Provenance::Conversational,
            kind: None,
        });
    }
    segments
}

/// If `s` starts with a known injected block that is closed, its length and kind.
fn block_at(s: &str) -> Option<(usize, &'static str)> {
    BLOCKS.iter().find_map(|b| {
        let after = s.strip_prefix(b.open)?;
        let close = after.find(b.close)?;
        Some((b.open.len() + close + b.close.len(), b.kind))
    })
}

/// The byte offset in `s` (after offset 0) of the first line that starts a known closed block.
fn next_block_line(s: &str) -> Option<usize> {
    s.match_indices('\n')
        .map(|(i, _)| i + 1)
        .find(|&i| block_at(&s[i..]).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use Provenance::{Conversational, Injected};

    fn parts<'a>(text: &'a str, role: &str, label: Option<&str>) -> Vec<(&'a str, Provenance)> {
        let segments = split(text, role, label);
        let joined: String = segments.iter().map(|s| &text[s.range.clone()]).collect();
        assert_eq!(joined, text, "segments must re-concatenate exactly");
        segments
            .into_iter()
            .map(|s| (&text[s.range], s.provenance))
            .collect()
    }

    #[test]
    fn environment_context_alone_is_injected() {
        let t = "<environment_context>\n  <cwd>/p</cwd>\n</environment_context>";
        assert_eq!(parts(t, "user", None), [(t, Injected)]);
    }

    #[test]
    fn typed_text_is_conversational() {
        assert_eq!(
            parts("add a Pause/Resume feature", "user", None),
            [("add a Pause/Resume feature", Conversational)]
        );
    }

    #[test]
    fn fused_instructions_and_request_split_at_the_byte_boundary() {
        let t = "<user_instructions>\n\nbe terse\n\n</user_instructions>\n\nfix the bug\n";
        assert_eq!(
            parts(t, "user", None),
            [
                (
                    "<user_instructions>\n\nbe terse\n\n</user_instructions>\n\n",
                    Injected
                ),
                ("fix the bug\n", Conversational),
            ]
        );
    }

    #[test]
    fn a_block_after_typed_text_is_split_off() {
        let t = "hello\n<turn_aborted>\nThe user interrupted.\n</turn_aborted>";
        assert_eq!(
            parts(t, "user", None),
            [
                ("hello\n", Conversational),
                (
                    "<turn_aborted>\nThe user interrupted.\n</turn_aborted>",
                    Injected
                )
            ]
        );
    }

    #[test]
    fn agents_md_heading_and_block_are_one_injected_span() {
        let t = "# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nrule\n</INSTRUCTIONS>";
        assert_eq!(parts(t, "user", None), [(t, Injected)]);
    }

    #[test]
    fn my_request_marker_separates_preamble_from_request() {
        let t = "ctx\n## My request for Codex:\ndo it";
        assert_eq!(
            parts(t, "user", None),
            [
                ("ctx\n## My request for Codex:\n", Injected),
                ("do it", Conversational)
            ]
        );
    }

    #[test]
    fn an_unclosed_tag_is_not_a_block() {
        let t = "<environment_context> but never closed";
        assert_eq!(parts(t, "user", None), [(t, Conversational)]);
    }

    #[test]
    fn image_wrappers_are_injected() {
        let t = "<image name=[Image #1] path=\"/a.png\">";
        assert_eq!(parts(t, "user", None), [(t, Injected)]);
        assert_eq!(parts("</image>", "user", None), [("</image>", Injected)]);
    }

    #[test]
    fn developer_is_injected_and_assistant_conversational() {
        assert_eq!(parts("x", "developer", None), [("x", Injected)]);
        assert_eq!(
            parts(
                "<environment_context></environment_context>",
                "assistant",
                None
            )
            .len(),
            1
        );
        assert_eq!(parts("x", "assistant", None), [("x", Conversational)]);
    }

    #[test]
    fn labels_decide_over_heuristics() {
        assert_eq!(
            parts(
                "<environment_context>x</environment_context>",
                "user",
                Some("user")
            ),
            [(
                "<environment_context>x</environment_context>",
                Conversational
            )]
        );
        assert_eq!(
            parts("plain", "user", Some("agents_md")),
            [("plain", Injected)]
        );
        assert_eq!(
            parts("plain", "user", Some("harness")),
            [("plain", Injected)]
        );
    }

    #[test]
    fn empty_text_is_one_empty_segment() {
        assert_eq!(parts("", "user", None), [("", Conversational)]);
    }
}
