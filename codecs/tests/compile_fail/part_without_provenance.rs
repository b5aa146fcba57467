// adapter-provenance-required: the Part constructor needs a Provenance.
use pond_canonical::{PartKey, Text, TextPart};

fn part(key: PartKey, text: Text) -> TextPart {
    TextPart::new(key, text)
}

fn main() {}
