"""Regenerate the judge card's suite (src/swapjudge/suites/llmbar.jsonl.gz and its manifest) from the LLMBar copy
in ../shared/data/llmbar.

Selection (seeded, reproducible, no judgement involved): from each of the eight LLMBar sets below, a sample of
round(n * 600 / 885) pairs, stratified by label (which output is better) in proportion to the set's own split (less
any pair whose two outputs are the same text: one, LLMEval2 index 57); the
`quick` suite takes 4 pairs of each set's sample (stratified by label the same way), 32 in all: few enough that the
embedded CPU judge cards it in minutes. Item ids keep the subset and the source index (`Adversarial/GPTInst#17` is
index 17 of `dataset__LLMBar__Adversarial__GPTInst.json`), so a published evaluator output of the same set (indexed
by position) lines up with the suite's pairs.
Source: github.com/princeton-nlp/LLMBar at commit 900616bff90b6c6c8e1681f7d079250637c55992, license MIT.

    python examples/make_card_suite.py [--shared ../shared]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import random
from pathlib import Path

SEED = "swapjudge-card-suite-1"
DEFAULT_SIZE = 600
QUICK_PER_SUBSET = 4
# (subset name on the card, source file under shared/data/llmbar)
SUBSETS = (
    ("Natural", "dataset__LLMBar__Natural.json"),
    ("Adversarial/Neighbor", "dataset__LLMBar__Adversarial__Neighbor.json"),
    ("Adversarial/GPTInst", "dataset__LLMBar__Adversarial__GPTInst.json"),
    ("Adversarial/GPTOut", "dataset__LLMBar__Adversarial__GPTOut.json"),
    ("Adversarial/Manual", "dataset__LLMBar__Adversarial__Manual.json"),
    ("MT-Bench", "dataset__Processed__MT-Bench.json"),
    ("FairEval", "dataset__Processed__FairEval.json"),
    ("LLMEval2", "dataset__Processed__LLMEval2.json"),
)


def stratified(rng: random.Random, indices_by_label: dict[int, list[int]], size: int) -> list[int]:
    """`size` indices, each label taking its share of the set (largest remainder), drawn without replacement."""
    total = sum(len(v) for v in indices_by_label.values())
    exact = {k: size * len(v) / total for k, v in indices_by_label.items()}
    take = {k: int(x) for k, x in exact.items()}
    for k in sorted(exact, key=lambda k: (take[k] - exact[k], k))[: size - sum(take.values())]:
        take[k] += 1
    return sorted(i for k, v in sorted(indices_by_label.items()) for i in rng.sample(v, take[k]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = Path(__file__).resolve().parent.parent
    parser.add_argument("--shared", type=Path, default=root.parent / "shared")
    parser.add_argument("--out", type=Path, default=root / "src" / "swapjudge" / "suites")
    args = parser.parse_args()
    sets = {}
    for name, file in SUBSETS:
        source = args.shared / "data" / "llmbar" / file
        if not source.is_file():
            raise SystemExit(f"{source} not found: the shared data is needed (see ../shared/data/README.md)")
        sets[name] = json.loads(source.read_text(encoding="utf-8"))
    total = sum(len(v) for v in sets.values())
    rows, quick, sizes = [], [], {}
    for name, _ in SUBSETS:
        pairs = sets[name]
        rng = random.Random(f"{SEED}|{name}")
        by_label: dict[int, list[int]] = {}
        for index, pair in enumerate(pairs):
            by_label.setdefault(int(pair["label"]), []).append(index)
        sampled = stratified(rng, by_label, round(len(pairs) * DEFAULT_SIZE / total))
        # a pair whose two outputs are the same text (LLMEval2 index 57) has no better answer to find: left out
        chosen = [i for i in sampled if pairs[i]["output_1"] != pairs[i]["output_2"]]
        sizes[name] = (len(pairs), len(chosen))
        sample_by_label: dict[int, list[int]] = {}
        for index in sampled:
            sample_by_label.setdefault(int(pairs[index]["label"]), []).append(index)
        quick += [f"{name}#{i}" for i in stratified(random.Random(f"{SEED}|quick|{name}"), sample_by_label,
                                                     QUICK_PER_SUBSET) if i in chosen]
        for index in chosen:
            pair = pairs[index]
            rows.append({"item": f"{name}#{index}", "prompt": pair["input"],
                         "answers": {"output_1": pair["output_1"], "output_2": pair["output_2"]},
                         "label": f"output_{pair['label']}"})
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as gz:
        gz.write(text)
    (args.out / "llmbar.jsonl.gz").write_bytes(buffer.getvalue())
    manifest = json.loads((args.out / "manifest.json").read_text(encoding="utf-8"))
    manifest["pairs_sha256"] = hashlib.sha256(text).hexdigest()
    manifest["quick"] = quick
    for entry in manifest["subsets"]:
        entry["source_pairs"], entry["pairs"] = sizes[entry["name"]]
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n",
                                            encoding="utf-8")
    print(f"wrote {len(rows)} pairs ({len(quick)} in the quick suite) to {args.out}")


if __name__ == "__main__":
    main()
