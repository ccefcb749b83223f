"""The small real samples shipped with the package, by name: ``sample:NAME`` wherever an eval command takes a data
file, so that the example in each ``culturekb eval NAME --help`` runs on a fresh clone.

Each sample's folder under ``culturekb/data/demo/`` has a NOTICE.md saying where the data come from, their licence,
and what was derived and how. Image paths inside a sample are relative to its own file, so no ``--data-root`` is
needed.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from culturekb.errors import DataError

__all__ = ["PACKAGED_SAMPLES", "SAMPLE_PREFIX", "EXAMPLES", "example_epilog", "packaged_sample", "sample_path",
           "resolve_samples"]

SAMPLE_PREFIX = "sample:"

PACKAGED_SAMPLES: dict[str, str] = {
    "artemis": "artemis_demo.csv",
    "artelingo": "artelingo_demo.csv",
    "cedar": "cedar/cedar_sample.jsonl",
    "cedar-kb": "cedar/cedar_kb_train.jsonl",
    "ricevl-vqa": "ricevl/vqa_sample.jsonl",
    "ricevl-cues": "ricevl/cue_metadata_sample.jsonl",
    "ricevl-grounding": "ricevl/grounding_sample.jsonl",
    "culturaltom": "culturaltom/culturaltom_sample.jsonl",
    "commet": "commet/commet_sample.jsonl",
    "brighter": "brighter/brighter_sample.jsonl",
}
"""Sample name -> its file under ``culturekb/data/demo/``."""


def packaged_sample(name: str) -> Path:
    """The file of the packaged sample `name` (see `PACKAGED_SAMPLES`); an unknown name raises DataError listing
    the names."""
    key = name.strip().lower()
    if key not in PACKAGED_SAMPLES:
        raise DataError(f"unknown packaged sample {name!r}; use sample:NAME with NAME one of "
                        f"{', '.join(sorted(PACKAGED_SAMPLES))}")
    path = Path(str(resources.files("culturekb.data").joinpath("demo", *PACKAGED_SAMPLES[key].split("/"))))
    if not path.is_file():
        raise DataError(f"the packaged sample {key!r} is missing at {path}; reinstall culturekb")
    return path


def sample_path(path: Path | str) -> Path:
    """`path` itself, or for ``sample:NAME`` the packaged sample's file."""
    text = str(path)
    if text.startswith(SAMPLE_PREFIX):
        return packaged_sample(text[len(SAMPLE_PREFIX):])
    return Path(path)


EXAMPLES: dict[str, str] = {
    "artemculture": "culturekb build sample:artemis --out artemis-kb && "
                    "culturekb eval artemculture sample:artemis --kb artemis-kb --out artemculture-run",
    "knowledge": "culturekb build sample:artemis --out artemis-kb && "
                 "culturekb eval knowledge sample:artemis --kb artemis-kb --out knowledge-run",
    "cedar": "culturekb build sample:cedar-kb --scheme cedar14 --concepts precomputed --min-support 1 --out cedar-kb "
             "&& culturekb eval cedar sample:cedar --kb cedar-kb --out cedar-run",
    "ricevl-vqa": "culturekb eval ricevl-vqa sample:ricevl-vqa --cue-metadata sample:ricevl-cues --any-country "
                  "--out ricevl-vqa-run",
    "ricevl-grounding": "culturekb eval ricevl-grounding sample:ricevl-grounding --any-country "
                        "--out ricevl-grounding-run",
    "culturaltom": "culturekb eval culturaltom sample:culturaltom --out culturaltom-run",
    "commet": "culturekb eval commet sample:commet --model openai:MODEL --base-url http://127.0.0.1:8000/v1 "
              "--out commet-run",
}
"""Per benchmark, a command that runs on the packaged sample: offline (the kb-prior, full-image and reference
baselines), except CoMMET, which needs a chat model (here an OpenAI-compatible server; `culturekb mock-server`
serves scripted answers). Shown under ``culturekb eval NAME --help`` and run by the test suite."""


EXAMPLE_NOTES: dict[str, str] = {
    "commet": "No chat server at hand? Start the bundled scripted one first, offline, in another terminal: "
              "culturekb mock-server --answer 'I think she feels sad.' (it listens on http://127.0.0.1:8000/v1 and "
              "answers every question with that text).",
}
"""What an example needs beyond a fresh clone, said after it."""

NO_SCHEME: dict[str, str] = {
    "culturaltom": "There is no --scheme: an item's answer is one of its own options (A, B, ...), not a label of a "
                   "scheme.",
    "commet": "There is no --scheme: a turn's answer is free text judged against the reference answer, not a "
              "label of a scheme.",
}
"""Why a benchmark has no ``--scheme`` option, said in its help (docs/data-formats.md)."""


def example_epilog(name: str) -> str | None:
    """The help epilog of ``culturekb eval NAME``: its example on the packaged sample (and what it needs), and why
    it has no ``--scheme`` where it has none."""
    parts = []
    example = EXAMPLES.get(name)
    if example is not None:
        parts.append(f"Example on the packaged sample (sample:NAME is a file shipped with culturekb): {example}")
    parts += [text for text in (EXAMPLE_NOTES.get(name), NO_SCHEME.get(name)) if text]
    return "\n\n".join(parts) or None


def resolve_samples(value: object) -> object:
    """A command's parsed value with every ``sample:NAME`` path (alone, or in a list or tuple) made the packaged
    file; any other value unchanged."""
    if isinstance(value, Path) and str(value).startswith(SAMPLE_PREFIX):
        return sample_path(value)
    if isinstance(value, list | tuple):
        return type(value)(resolve_samples(v) for v in value)
    return value
