"""Every plot of every runner renders with a glyph for every character: matplotlib's "Glyph ... missing from
font(s)" (a box in the PNG) is a failure, for the runners' plots on their sample results and for labels in every
script the packaged data has (Chinese, Arabic, Devanagari, Thai, ...)."""

from __future__ import annotations

import functools
import json
import unicodedata
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("matplotlib")

from culturekb.evals.artemculture.runner import artemculture_plots  # noqa: E402
from culturekb.evals.cedar.runner import cedar_plots  # noqa: E402
from culturekb.evals.commet.report import commet_plots  # noqa: E402
from culturekb.evals.culturaltom.scoring import culturaltom_plots  # noqa: E402
from culturekb.evals.knowledge.report import knowledge_plots  # noqa: E402
from culturekb.evals.plots import (  # noqa: E402
    FONT_DIR,
    FONT_FAMILIES,
    BarPlot,
    HeatmapPlot,
    IntervalPlot,
    MissingGlyphWarning,
    Plot,
    plot_fonts,
    render_png,
)
from culturekb.evals.reports import RUN_FIELDS, write_report  # noqa: E402
from culturekb.evals.ricevl.grounding import grounding_plots  # noqa: E402
from culturekb.evals.ricevl.vqa import vqa_plots  # noqa: E402

FIXTURES = Path(__file__).parents[1] / "fixtures" / "reports"
DATA = Path(__file__).parents[2] / "culturekb" / "data"
PNG = b"\x89PNG\r\n\x1a\n"

RUNNERS: dict[str, Callable[[Any], list[Plot]]] = {
    "artemculture": artemculture_plots, "knowledge": knowledge_plots, "cedar": cedar_plots,
    "ricevl-vqa": vqa_plots, "ricevl-grounding": grounding_plots, "culturaltom": culturaltom_plots,
    "commet": commet_plots,
}


def _render_strict(plot: Plot) -> bytes:
    with warnings.catch_warnings():
        warnings.simplefilter("error", MissingGlyphWarning)
        png = render_png(plot)
    assert png.startswith(PNG) and len(png) > 5000, f"plot {plot.name!r} drew no image"
    return png


@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_every_runner_plot_renders_without_missing_glyphs(runner: str) -> None:
    results = json.loads((FIXTURES / f"{runner}.json").read_text(encoding="utf-8"))  # NaN read back as None
    plots = RUNNERS[runner](results)
    assert plots, f"{runner} made no plot"
    for plot in plots:
        _render_strict(plot)


_TEXT = {".json", ".jsonl", ".csv", ".tsv", ".txt"}


PHRASES = DATA / "languages" / "choices"


@functools.cache
def _scripts_in_packaged_data() -> dict[str, str]:
    """Per script (the first word of the Unicode name: CJK, ARABIC, DEVANAGARI, THAI ...), every distinct letter of
    it in the packaged data files."""
    chars: dict[str, set[str]] = {}
    for path in DATA.rglob("*"):
        # the multiple-choice phrase lists and choice words are what the answer reader matches, never a label a plot
        # draws
        if (path.is_file() and path.suffix in _TEXT and FONT_DIR not in path.parents and PHRASES not in path.parents
                and path.name != "choice_words.json"):
            for ch in set(path.read_text(encoding="utf-8", errors="ignore")):
                if ord(ch) > 0x24F and unicodedata.category(ch).startswith("L"):
                    chars.setdefault(unicodedata.name(ch, "UNKNOWN").split()[0], set()).add(ch)
    return {script: "".join(sorted(cs)) for script, cs in sorted(chars.items())}


def test_packaged_data_has_the_scripts_the_fonts_are_for() -> None:
    scripts = _scripts_in_packaged_data()
    for script in ("CJK", "ARABIC", "DEVANAGARI"):
        assert script in scripts, f"no {script} letter in culturekb/data: the check below would test nothing"


NO_FONT_YET: dict[str, str] = {}
"""Scripts of the packaged data that no packaged font draws: each test is expected to fail (strict), so it starts
failing the day a font is added and this list must shrink."""


@pytest.mark.parametrize("script", [pytest.param(s, marks=pytest.mark.xfail(raises=MissingGlyphWarning, strict=True,
                                                                            reason=NO_FONT_YET[s]))
                                    if s in NO_FONT_YET else s for s in sorted(_scripts_in_packaged_data())])
def test_labels_in_every_script_of_the_data_draw(script: str) -> None:
    text = _scripts_in_packaged_data()[script]
    covered = _covered()
    missing = [ch for ch in text if ord(ch) not in covered]
    if missing:  # the PNG would show boxes: drawing them raises MissingGlyphWarning, as a plot's label would
        _render_strict(BarPlot("missing", "".join(missing[:30]), ["".join(missing[:30])], {"a": [0.5]}))
    labels = [text[i:i + 20] for i in range(0, min(len(text), 200), 20)]  # the drawing path, on a sample
    cols = [text[:2], text[-2:]]
    _render_strict(BarPlot("bars", labels[0], labels, {"a": [0.5] * len(labels)}, baselines={labels[-1]: 0.3}))
    _render_strict(HeatmapPlot("heat", labels[0], labels[:3], cols, [[0.1, 0.2]] * len(labels[:3])))
    _render_strict(IntervalPlot("interval", "x", cols, {labels[0]: [0.5, 0.4]}, {labels[0]: [0.4, 0.3]},
                                {labels[0]: [0.6, 0.5]}))


@functools.cache
def _covered() -> frozenset[int]:
    """The code points some font of the plots' family list has (DejaVu Sans and the packaged fonts)."""
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    plot_fonts()
    out: set[int] = set()
    for family in FONT_FAMILIES:
        path = font_manager.findfont(font_manager.FontProperties(family=family), fallback_to_default=False)
        out |= set(FT2Font(path).get_charmap())
    return frozenset(out)


def test_a_character_without_a_glyph_fails() -> None:
    """The check can fail: a character no packaged font has (Linear B) raises MissingGlyphWarning."""
    with pytest.raises(MissingGlyphWarning, match="no glyph"):
        _render_strict(BarPlot("linear-b", "\U00010000\U00010001", ["\U00010000"], {"a": [0.5]}))


def test_plot_style(tmp_path: Path) -> None:
    """Values on bars, baselines and legends go into the PNG; a flat grid keeps a 0..1 colour scale; the header
    opens both files."""
    header = {f: f"{f} value" for f in ("model", "judge", "baseline", "KB", "KB calibration", "prompt languages",
                                        "images sent", "unread answers")}
    files = write_report(tmp_path, "r", {"accuracy": 1, "zz": {"b": 2, "a": 1}}, plots=[
        BarPlot("zeros", "all zero", ["a", "b"], {"s": [0.0, 0.0]}, ylim=(0.0, 1.0), baselines={"majority": 0.25}),
        HeatmapPlot("flat", "flat grid", ["r"], ["c1", "c2"], [[0.0, 0.0]])], header=header)
    md = files.markdown.read_text(encoding="utf-8")
    assert md.index("## What was run") < md.index("accuracy**") and "| images sent | images sent value |" in md
    report = json.loads(files.json.read_text(encoding="utf-8"))
    assert list(report) == ["run", "accuracy", "zz"]  # "accuracy" sorts before "run": the header still opens the file
    assert list(report["run"]) == list(RUN_FIELDS) and list(report["zz"]) == ["a", "b"]
    assert all(p.read_bytes().startswith(PNG) for p in files.images)


def _drawn(plot: IntervalPlot) -> Any:
    """The axes `plot` is drawn on (a private Agg canvas), to read back where its labels went."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from culturekb.evals.plots import _draw_intervals

    fig = Figure(figsize=(6.0, 4.8), dpi=100)
    FigureCanvasAgg(fig)
    _draw_intervals(fig, plot)
    return fig.axes[0]


def test_value_label_never_sits_on_a_baseline() -> None:
    """A value whose label would be crossed by a baseline line is written past the line; one clear of every line
    stays on its bar (the grounding chart's 0.47 under the 0.50 hit threshold)."""
    plot = IntervalPlot("iou", "mean IoU", ["a", "b"], {"s": [0.47, 0.2]}, {"s": [0.47, 0.1]}, {"s": [0.47, 0.3]},
                        ylim=(0.0, 1.0), baselines={"hit threshold": 0.5})
    anchors = {t.get_text(): t.xy[1] for t in _drawn(plot).texts}
    assert anchors == {"0.47": 0.5, "0.20": 0.3}
    no_line = IntervalPlot("iou", "mean IoU", ["a"], {"s": [0.47]}, {"s": [0.47]}, {"s": [0.47]}, ylim=(0.0, 1.0))
    assert [t.xy[1] for t in _drawn(no_line).texts] == [0.47]


def test_cedar_accuracy_charts_draw_chance_and_majority_lines() -> None:
    results = json.loads((FIXTURES / "cedar.json").read_text(encoding="utf-8"))
    charts = {p.name: p for p in cedar_plots(results) if p.name.startswith("accuracy-")}
    assert set(charts) == {"accuracy-all", "accuracy-multimodal", "accuracy-text"}
    for name, plot in charts.items():
        assert isinstance(plot, IntervalPlot)
        block = results["settings"]["orig"][name.removeprefix("accuracy-")]["majority"]
        assert plot.baselines == {f"chance, 1/{results['n_labels']} labels": pytest.approx(1 / 14),
                                  f"majority label: {block['label']}": pytest.approx(block["accuracy"])}
    quadrants = next(p for p in cedar_plots(results) if p.name == "quadrant-bias")
    assert isinstance(quadrants, BarPlot)
    assert "orig / all (n=26)" in quadrants.series  # each series names the items it is over


def test_knowledge_majority_is_a_line_not_a_bar() -> None:
    results = json.loads((FIXTURES / "knowledge.json").read_text(encoding="utf-8"))
    plot = next(p for p in knowledge_plots(results) if p.name == "accuracy")
    assert isinstance(plot, IntervalPlot) and "majority" not in plot.series
    assert plot.baselines == {"majority baseline, overall": results["accuracy"]["overall"]["majority"]["estimate"]}
