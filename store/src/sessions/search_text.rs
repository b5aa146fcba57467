//! The indexed retrieval text of a message (spec 8, "Indexed text"): one function, applied alike
//! to every message of every source.

use pond_canonical::{AssistantPart, Message, Provenance, UserPart};

/// `search_text` of `message`: in order, the text of its conversational TextParts and the
/// metadata (name, media type) of its conversational FileParts. `None` for system and tool
/// messages and for a message with no conversational text. Reasoning, tool calls and results,
/// approvals and injected parts are never indexed.
pub fn search_text_for(message: &Message) -> Option<String> {
    let mut pieces: Vec<String> = Vec::new();
    let file = |f: &pond_canonical::FilePart| match &f.file_name {
        Some(name) => format!("[file {} {}]", name.as_str(), f.media_type.as_str()),
        None => format!("[file {}]", f.media_type.as_str()),
    };
    match message {
        Message::System(_) | Message::Tool(_) => return None,
        Message::User(m) => {
            for p in &m.content {
                match p {
                    UserPart::Text(t) if t.provenance == Provenance::Conversational => {
                        pieces.push(t.text.as_str().to_owned())
                    }
                    UserPart::File(f) if f.provenance == Provenance::Conversational => {
                        pieces.push(file(f))
                    }
                    _ => {}
                }
            }
        }
        Message::Assistant(m) => {
            for p in &m.content {
                match p {
                    AssistantPart::Text(t) if t.provenance == Provenance::Conversational => {
                        pieces.push(t.text.as_str().to_owned())
                    }
                    AssistantPart::File(f) if f.provenance == Provenance::Conversational => {
                        pieces.push(file(f))
                    }
                    _ => {}
                }
            }
        }
    }
    let text = pieces.join("\n");
    (!text.trim().is_empty()).then_some(text)
}
