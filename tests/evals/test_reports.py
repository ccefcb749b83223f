"""Report writers: files are written, re-read and valid; Markdown is exact; matplotlib stays optional."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from culturekb.errors import ConfigError, MissingExtraError
from culturekb.evals import (
    BarPlot,
    HeatmapPlot,
    Plot,
    Table,
    confusion_matrix,
    render_markdown_table,
    to_jsonable,
    write_report,
)
from culturekb.evals.reports import valid_accuracy_text

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from the IHDR chunk; asserts the PNG signature."""
    raw = path.read_bytes()
    assert raw[:8] == PNG_SIGNATURE, f"{path} is not a PNG"
    assert raw[12:16] == b"IHDR"
    width, height = struct.unpack(">II", raw[16:24])
    assert raw.rstrip(b"\x00")[-8:-4] == b"IEND"
    return width, height


def test_render_markdown_table_exact() -> None:
    table = Table("acc", ["culture", "accuracy", "n"], [["en", 0.5, 2], ["zh", None, 0], ["a|b", float("nan"), 1]],
                  precision=2)
    assert render_markdown_table(table) == (
        "| culture | accuracy | n |\n"
        "|---|---:|---:|\n"
        "| en | 0.50 | 2 |\n"
        "| zh | n/a | 0 |\n"
        "| a\\|b | n/a | 1 |\n"
    )


def test_table_validation_and_builders() -> None:
    with pytest.raises(ConfigError, match="row 0 has 1 cells but there are 2 columns"):
        Table("t", ["a", "b"], [["x"]])
    grid = Table.from_nested("grid", {"en": {"en": 0.5, "zh": 0.25}, "zh": {"en": 1.0}}, row_label="prompt")
    assert grid.columns == ("prompt", "en", "zh")
    assert grid.rows == (("en", 0.5, 0.25), ("zh", 1.0, None))
    flat = Table.from_mapping("per culture", {"en": 0.5}, key="culture", value="accuracy")
    assert flat.rows == (("en", 0.5),)


def test_to_jsonable_sanitises() -> None:
    cm = confusion_matrix(["a"], ["a"], ["a"])
    out = to_jsonable({"x": float("nan"), "y": (1, float("inf")), 3: cm, "p": Path("/tmp/a")})
    assert out == {"x": None, "y": [1, None], "3": {"labels": ["a"], "columns": ["a", "invalid"],
                                                    "counts": [[1, 0]]}, "p": "/tmp/a"}
    with pytest.raises(ConfigError, match="cannot be written as JSON"):
        to_jsonable({"f": object()})


def test_write_report_files(tmp_path: Path) -> None:
    cm = confusion_matrix(["a", "b", None, "a"], ["a", "b", "b", "b"], ["a", "b"])
    acc = {"orig": {"en": 0.5, "zh": 0.25}, "know": {"en": 0.75, "zh": float("nan")}}
    data = {"overall": 0.5, "accuracy": acc, "confusion": cm, "bias": {"Q1": 25.0, "Q2": -25.0}}
    plots: list[Plot] = [
        BarPlot.from_nested("accuracy", "Accuracy per culture per mode", acc, ylabel="accuracy", ylim=(0, 1)),
        BarPlot("languages", "Per-language accuracy", ["en", "zh"], {"orig": [0.5, 0.25]}),
        BarPlot("quadrant-bias", "Russell quadrant bias", ["Q1", "Q2"], {"all": [25.0, -25.0]}, diverging=True),
        HeatmapPlot.from_confusion("confusion", "Confusion (orig)", cm),
        HeatmapPlot.from_nested("grid", "Prompt x data language", acc),
    ]
    tables = {"accuracy": Table.from_nested("Accuracy", acc, row_label="mode")}
    files = write_report(tmp_path, "toy", data, tables, plots)

    assert json.loads(files.json.read_text()) == {
        "overall": 0.5,
        "accuracy": {"orig": {"en": 0.5, "zh": 0.25}, "know": {"en": 0.75, "zh": None}},
        "confusion": {"labels": ["a", "b"], "columns": ["a", "b", "invalid"], "counts": [[1, 0, 0], [1, 1, 1]]},
        "bias": {"Q1": 25.0, "Q2": -25.0},
    }
    md = files.markdown.read_text()
    assert md.startswith("# toy\n")
    assert "- **overall**: 0.5000" in md
    assert ("## Accuracy\n\n| mode | en | zh |\n|---|---:|---:|\n"
            "| orig | 0.5000 | 0.2500 |\n| know | 0.7500 | n/a |") in md
    assert [p.name for p in files.images] == [f"toy-{p.name}.png" for p in plots]
    for path in files.images:
        assert f"]({path.name})" in md
        width, height = png_size(path)
        assert width > 100 and height > 100
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in files.all())  # no temp files left


def test_write_report_rejects_bad_plots(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="series 's' has 1 values for 2 categories"):
        BarPlot("b", "t", ["x", "y"], {"s": [1.0]})
    with pytest.raises(ConfigError, match="not a safe file stem"):
        BarPlot("../evil", "t", ["x"], {"s": [1.0]})
    plot = BarPlot("b", "t", ["x"], {"s": [1.0]})
    with pytest.raises(ConfigError, match="plot names repeat"):
        write_report(tmp_path, "r", {}, plots=[plot, plot])
    assert list(tmp_path.iterdir()) == []


def test_missing_matplotlib_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` raise ImportError
    plot = BarPlot("b", "t", ["x"], {"s": [1.0]})
    with pytest.raises(MissingExtraError, match=r"pip install 'culturekb\[reports\]'"):
        write_report(tmp_path, "r", {"a": 1}, plots=[plot])
    assert list(tmp_path.iterdir()) == []  # failed before writing anything
    files = write_report(tmp_path, "r", {"a": 1})  # without plots matplotlib is not needed
    assert json.loads(files.json.read_text()) == {"a": 1}


def test_import_is_light_and_pyplot_untouched(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "import culturekb.evals as e\n"
        "assert 'matplotlib' not in sys.modules, 'importing culturekb.evals imported matplotlib'\n"
        f"e.write_report({str(tmp_path)!r}, 'r', {{}}, plots=[e.BarPlot('b', 't', ['x'], {{'s': [1.0]}})])\n"
        "assert 'matplotlib.pyplot' not in sys.modules, 'plots went through pyplot global state'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    png_size(tmp_path / "r-b.png")


INTERVAL = r"\d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\] n="
FIXTURES = Path(__file__).parents[1] / "fixtures" / "reports"


def test_valid_accuracy_text_gives_interval_and_n() -> None:
    cal = {"valid": {"accuracy": 0.25, "prior_accuracy": None}, "fitted_on": {"samples": 20}}
    assert valid_accuracy_text(cal) == "0.250 [0.112, 0.469] n=20"
    assert valid_accuracy_text(cal, "prior_accuracy") == "n/a (not recorded)"
    assert valid_accuracy_text({"valid": {}, "fitted_on": {"samples": 0}}) == "n/a (no valid split)"
    assert valid_accuracy_text({"valid": {"accuracy": 0.5}}) == "0.500 (n not recorded)"


def test_calibration_accuracies_in_reports_have_interval_and_n() -> None:
    """The kb-prior's valid accuracies (artemculture, knowledge) and the knowledge report's calibration accuracy
    carry their 95% interval and n, as every other accuracy in the reports does."""
    import re

    from culturekb.evals.artemculture.runner import artemculture_tables
    from culturekb.evals.knowledge.report import knowledge_tables

    art = artemculture_tables(json.loads((FIXTURES / "artemculture.json").read_text(encoding="utf-8")))["calibration"]
    row = dict(zip(art.columns, art.rows[0], strict=True))
    assert row["valid acc"] == row["valid prior acc"] == "0.250 [0.112, 0.469] n=20"
    know = knowledge_tables(json.loads((FIXTURES / "knowledge.json").read_text(encoding="utf-8")))
    for r in know["calibration"].rows:
        assert re.fullmatch(INTERVAL + str(r[2]), str(r[3])), r
    shown = {str(k): str(v) for k, v in know["kb_prior_calibration"].rows}
    assert re.fullmatch(INTERVAL + r"\d+", shown["valid accuracy"]) and re.fullmatch(INTERVAL + r"\d+",
                                                                                        shown["valid accuracy, prior"])
