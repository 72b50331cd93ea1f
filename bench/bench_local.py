"""Speed of the local backend on the bundled LLMBar pairs (the real judge prompt of swapjudge.judges.prompts).

Prints: seconds per judgment in log-probability mode and in generation mode (calls in run order, both
orders of each pair back to back, KV cache kept); and per pair, the time of both orders with prefix reuse and
without, as a ratio to the time of one order evaluated from scratch, next to the ideal ratio from token counts
(the second order pays only for the tokens after the prefix it shares with the first).

    .venv/bin/python bench/bench_local.py [--model NAME|PATH] [--pairs N] [--pairs-file FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from swapjudge.judges.base import JudgeReply, JudgeRequest
from swapjudge.judges.local import LocalJudge
from swapjudge.judges.model_files import DEFAULT_MODEL
from swapjudge.judges.prompts import render_request

ROOT = Path(__file__).resolve().parent.parent


def load_requests(path: Path, n: int) -> list[tuple[JudgeRequest, JudgeRequest]]:
    pairs = []
    for line in path.read_text(encoding="utf-8").splitlines()[:n]:
        row = json.loads(line)
        x, y = row["answers"]["output_1"], row["answers"]["output_2"]
        orders = [render_request(task=row["prompt"], first=a, second=b, rubric=None, allow_tie=False,
                                 chain_of_thought=False, structured=False) for a, b in ((x, y), (y, x))]
        pairs.append((orders[0], orders[1]))
    return pairs


def timed(judge: LocalJudge, request: JudgeRequest) -> tuple[float, JudgeReply]:
    started = time.perf_counter()
    reply = judge.judge_sync(request)
    if reply.error:
        raise SystemExit(f"judge error: {reply.error}")
    return time.perf_counter() - started, reply


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--pairs-file", type=Path, default=ROOT / "examples" / "llmbar_natural_30.jsonl")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    pairs = load_requests(args.pairs_file, args.pairs)
    print(f"model {args.model}; {len(pairs)} pairs from {args.pairs_file.name}; n_threads={args.threads}")

    judge = LocalJudge(args.model, n_threads=args.threads)
    started = time.perf_counter()
    judge.load()
    print(f"load (resolve + verify + mmap): {time.perf_counter() - started:.2f} s")
    tokens = [(len(judge.prompt_tokens(ab)) + len(judge.label_tokens(ab).context),
               len(judge.prompt_tokens(ba)) + len(judge.label_tokens(ba).context)) for ab, ba in pairs]
    print(f"prompt tokens per call: median {statistics.median(t for p in tokens for t in p):.0f}, "
          f"min {min(min(p) for p in tokens)}, max {max(max(p) for p in tokens)}")

    # 1. Per pair, cold: first order from scratch, second order with reuse; then the same without reuse.
    cold_first, reuse_second, ideal, shared_tokens = [], [], [], []
    for ab, ba in pairs:
        judge.forget_cache()
        t_ab, r_ab = timed(judge, ab)
        t_ba, r_ba = timed(judge, ba)
        cold_first.append(t_ab)
        reuse_second.append(t_ba)
        assert r_ba.cached_input_tokens is not None and r_ba.input_tokens is not None
        assert r_ab.input_tokens is not None
        shared_tokens.append(r_ba.cached_input_tokens)
        ideal.append((r_ab.input_tokens + r_ba.input_tokens - r_ba.cached_input_tokens) / r_ab.input_tokens)
    no_reuse = LocalJudge(args.model, n_threads=args.threads, reuse_prefix=False)
    no_reuse.load()
    plain_pair, plain_ideal = [], []
    for ab, ba in pairs:
        t_ab, r_ab = timed(no_reuse, ab)
        t_ba, r_ba = timed(no_reuse, ba)
        plain_pair.append(t_ab + t_ba)
        assert r_ab.input_tokens is not None and r_ba.input_tokens is not None
        plain_ideal.append((r_ab.input_tokens + r_ba.input_tokens) / r_ab.input_tokens)
    no_reuse.close()
    ratio_reuse = [(a + b) / a for a, b in zip(cold_first, reuse_second, strict=True)]
    ratio_plain = [p / a for p, a in zip(plain_pair, cold_first, strict=True)]
    print("\nper pair (both orders), relative to one order evaluated from scratch:")
    print(f"  one order from scratch:      {statistics.mean(cold_first):6.2f} s")
    pair_reuse = statistics.mean(cold_first) + statistics.mean(reuse_second)
    print(f"  pair with prefix reuse:      {pair_reuse:6.2f} s  "
          f"ratio {statistics.mean(ratio_reuse):.2f} (ideal from token counts {statistics.mean(ideal):.2f}; "
          f"second order reuses {statistics.mean(shared_tokens):.0f} tokens)")
    print(f"  pair without reuse:          {statistics.mean(plain_pair):6.2f} s  "
          f"ratio {statistics.mean(ratio_plain):.2f} (ideal {statistics.mean(plain_ideal):.2f})")

    # 2. As in a run: calls in plan order, cache kept across calls and pairs.
    for mode in ("logprobs", "generate"):
        run_judge = judge if mode == "logprobs" else LocalJudge(args.model, n_threads=args.threads, mode=mode)
        run_judge.forget_cache() if mode == "logprobs" else run_judge.load()
        times, evaluated, out_tokens, verdicts = [], 0, 0, 0
        for ab, ba in pairs:
            for req in (ab, ba):
                t, reply = timed(run_judge, req)
                times.append(t)
                evaluated += (reply.input_tokens or 0) - (reply.cached_input_tokens or 0)
                out_tokens += reply.output_tokens or 0
                verdicts += reply.verdict is not None
        total, n = sum(times), len(times)
        print(f"\n{mode} mode, run order ({n} calls): {total / n:.2f} s per judgment "
              f"(median {statistics.median(times):.2f}), {total:.1f} s in all; "
              f"{evaluated / n:.0f} prompt tokens evaluated per call, {out_tokens / n:.1f} generated; "
              f"{verdicts} parsed verdicts")
        if run_judge is not judge:
            run_judge.close()
    judge.close()


if __name__ == "__main__":
    main()
