"""Real concept strings for the stores benchmark, and their embeddings (cached on disk by embedder id).

Sources, all shipped with the package (no network): the concepts that the offline text concept extractor (the
build's step 1) takes from the demo data (ArtEmis and ArtELingo subsets, the BRIGHTER sample), the concept word
lists of that extractor (`culturekb/data/text_concepts_en.txt`: nouns, colours, modifiers, proper concepts,
common words), and both sides of the tau pair files (`tau_pairs.jsonl`, `cross_language_pairs.jsonl`).
About 10,700 distinct strings in ten languages. Each string keeps the culture of the first sample it came from
(word-list entries: en; pair queries: their language).
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import numpy as np

log = logging.getLogger("bench_stores")

DATA = Path(__file__).resolve().parents[1] / "culturekb" / "data"
CACHE = Path(__file__).resolve().parents[1] / ".culturekb-cache" / "bench_stores"
WORD_SECTIONS = ("[proper_concepts]", "[modifiers]", "[colours]", "[nouns]", "[common_words]")


def real_concepts() -> dict[str, str]:
    """Distinct real concept strings (lower-cased) -> culture, in a deterministic order."""
    from culturekb.kb.loaders import load_artemis_csv, load_samples_jsonl
    from culturekb.text.concepts import TextConceptExtractor

    found: dict[str, str] = {}

    def add(text: str, culture: str) -> None:
        text = text.strip().lower()
        if text:
            found.setdefault(text, culture)

    extractor = TextConceptExtractor(fields=("title", "text", "question", "explanations"), max_concepts=30)
    demo = DATA / "demo"
    loads = (
        load_artemis_csv(demo / "artemis_demo.csv"),
        load_artemis_csv(demo / "artelingo_demo.csv"),
        load_samples_jsonl(demo / "brighter" / "brighter_sample.jsonl",
                           scheme=str(demo / "brighter" / "brighter_scheme.json")),
    )
    for loaded in loads:
        for sample, concepts in zip(loaded.samples, extractor.extract(loaded.samples), strict=True):
            for concept in concepts:
                add(concept, sample.culture)
    section = None
    for line in (DATA / "text_concepts_en.txt").read_text("utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("["):
            section = line
        elif line and section in WORD_SECTIONS:
            add(line, "en")
    for row in pair_rows():
        add(row["query"], row.get("language", "en"))
        add(row["concept"], "en")
    return found


def pair_rows() -> list[dict[str, str]]:
    """The rows of the packaged evaluation pair files (`tau_pairs.jsonl`, `cross_language_pairs.jsonl`)."""
    return [json.loads(line) for name in ("tau_pairs.jsonl", "cross_language_pairs.jsonl")
            for line in (DATA / name).read_text("utf-8").splitlines() if line.strip()]


def embedded_concepts(spec: str = "minilm") -> tuple[list[str], list[str], np.ndarray]:
    """(strings, cultures, unit vectors) of `real_concepts()`, encoded once with `spec` and cached on disk."""
    concepts = real_concepts()
    texts = list(concepts)
    key = hashlib.sha256("\n".join(texts).encode("utf-8")).hexdigest()[:16]
    from culturekb.models.factory import make_embedder

    embedder = make_embedder(spec)
    ident = hashlib.sha256(str(embedder.id).encode("utf-8")).hexdigest()[:12]
    path = CACHE / f"{ident}-{key}.npy"
    if path.is_file():
        vectors = np.load(path)
        log.info("real concepts: %d strings, vectors from %s", len(texts), path)
    else:
        vectors = np.asarray(embedder.encode(texts, batch_size=256), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        CACHE.mkdir(parents=True, exist_ok=True)
        np.save(path, vectors)
        log.info("real concepts: %d strings encoded with %s, cached in %s", len(texts), embedder.id, path)
    return texts, [concepts[t] for t in texts], vectors


def distinct_vectors(texts: list[str], cultures: list[str], vectors: np.ndarray) -> tuple[np.ndarray, dict[str, int]]:
    """Row numbers of the first string of each distinct vector, and how many strings share a vector.

    MiniLM's word pieces cover little of some scripts, so many strings encode to one vector (1,305 Chinese
    strings give a single vector): such a string as a query would be a stored point in all but name.
    """
    _, first, inverse = np.unique(np.round(vectors, 5), axis=0, return_index=True, return_inverse=True)
    counts = np.bincount(inverse.ravel())
    return np.sort(first), {"strings": len(texts), "distinct_vectors": int(len(first)),
                            "largest_shared_vector": int(counts.max())}


class ClusterSampler:
    """Synthetic padding clustered like the real vectors: a Gaussian mixture fitted to them.

    Spherical k-means (one cluster per ~20 real vectors) gives the components; a sample of component c is its
    mean plus a random Gaussian combination of `members` real residuals (x_j - mean_c) of that cluster, scaled
    so that its covariance is the cluster's own (full rank within the span of its members), plus a little
    isotropic noise (norm ~0.1), then normalised. Components are drawn in proportion to their sizes.
    """

    def __init__(self, vectors: np.ndarray, seed: int, per_cluster: int = 20, members: int = 4) -> None:
        import faiss

        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.k = max(1, len(vectors) // per_cluster)
        self.members = members
        self.rng = np.random.default_rng(seed)
        km = faiss.Kmeans(vectors.shape[1], self.k, niter=20, seed=seed, spherical=True)
        km.train(self.vectors)
        assert km.index is not None and km.centroids is not None  # set by train()
        _, labels = km.index.search(self.vectors, 1)
        self.groups = [np.flatnonzero(labels[:, 0] == c) for c in range(self.k)]
        self.means = np.stack([self.vectors[g].mean(0) if len(g) else km.centroids[c]
                               for c, g in enumerate(self.groups)]).astype(np.float32)
        sizes = np.array([len(g) for g in self.groups], dtype=np.float64)
        self.weights = sizes / sizes.sum()

    def sample(self, n: int, chunk: int = 100_000) -> np.ndarray:
        """`n` unit vectors from the fitted mixture."""
        dim = self.vectors.shape[1]
        out = np.empty((n, dim), dtype=np.float32)
        for start in range(0, n, chunk):
            comp = self.rng.choice(self.k, min(chunk, n - start), p=self.weights)
            x = self.means[comp].copy()
            for _ in range(self.members):
                pick = np.array([g[self.rng.integers(len(g))] for g in (self.groups[c] for c in comp)])
                w = self.rng.standard_normal((len(comp), 1), dtype=np.float32) / np.sqrt(self.members)
                x += w * (self.vectors[pick] - self.means[comp])
            x += self.rng.standard_normal(x.shape, dtype=np.float32) * np.float32(0.1 / np.sqrt(dim))
            out[start : start + len(comp)] = x / np.linalg.norm(x, axis=1, keepdims=True)
        return out
