"""`culturekb build --split all` builds from every sample, also for data whose rows carry a split (the ArtEmis CSV's
deterministic 8:1:1 split by image): the option reached the build as None and was dropped for the default 'train'."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from culturekb.cli import app
from culturekb.data.samples import sample_path


class _StopError(Exception):
    pass


@pytest.mark.parametrize(("given", "expected"), [(["--split", "all"], None), ([], "train"),
                                                 (["--split", "valid"], "valid")])
def test_the_split_reaches_the_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: list[str],
                                     expected: str | None) -> None:
    seen: dict[str, Any] = {}

    def fake_build_kb(samples: Any, config: Any, **_: Any) -> Any:
        seen["split"], seen["splits"] = config.split, {s.split for s in samples}
        raise _StopError

    monkeypatch.setattr("culturekb.builders.pipeline.build_kb", fake_build_kb)
    res = CliRunner().invoke(app, ["build", str(sample_path("sample:artemis")), "--out", str(tmp_path / "kb"),
                                   "--cache-dir", str(tmp_path / "cache"), *given])
    assert isinstance(res.exception, _StopError), res.output
    assert seen["split"] == expected and {"train", "valid", "test"} <= seen["splits"]
