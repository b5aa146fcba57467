// A part cannot be built field by field (and so without a provenance) outside the canonical crate.
use pond_canonical::{MessageId, PartId, SessionId, Text, TextPart};

fn part(id: PartId, session_id: SessionId, message_id: MessageId, text: Text) -> TextPart {
    TextPart { id, session_id, message_id, text, options: Default::default() }
}

fn main() {}
