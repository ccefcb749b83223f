"""Builds that scale (issue 25): the one-pass embedding of a step's distinct texts shows progress, in slices, and
embeds each text once whatever the slicing."""

from __future__ import annotations

import pytest

from culturekb.builders import pipeline
from culturekb.builders.pipeline import BuildConfig, build_kb
from culturekb.workflows import demo_data_files, load_data
from tests.builders.test_vector_cache import CountingHashEmbedder, _components


def test_the_embedding_pass_shows_progress_and_embeds_each_text_once(tmp_path, capsys, monkeypatch) -> None:
    samples, _ = load_data(demo_data_files())
    samples = samples[:40]
    monkeypatch.setattr(pipeline, "_PREFETCH_SLICE", 7)  # several slices
    emb = CountingHashEmbedder()
    res = build_kb(samples, BuildConfig(chunk_size=5), cache_dir=tmp_path / "cache", components=_components(emb),
                   progress=True)
    err = capsys.readouterr().err
    assert "rationales: embed" in err and "text" in err
    assert len(emb.texts) == len(set(emb.texts)) > 7  # every distinct text once, over several slices
    quiet = CountingHashEmbedder()
    again = build_kb(samples, BuildConfig(chunk_size=5), cache_dir=tmp_path / "other", components=_components(quiet),
                     progress=False)
    assert "embed" not in capsys.readouterr().err
    assert again.report["kb_version"] == res.report["kb_version"]  # slicing changes nothing in the KB


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__])
