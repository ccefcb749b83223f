"""What every benchmark's command line shares: comma lists, the prompt-language and status checks, and the help
texts of the common options. Each benchmark's own options live in its folder (``evals/<name>/command.py``): a
function whose parameters typer reads as the command's arguments and options (its docstring is the command's
help) and which returns the benchmark's run spec (``evals/<name>/spec.py``); nothing else belongs there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from culturekb.errors import ConfigError
from culturekb.text.prompts import PROMPT_LANGUAGES, available_prompt_languages

__all__ = ["MapOption", "OnBadRowOption", "SchemeOption", "field_map_option", "csv_list", "csv_tuple",
           "prompt_language_tuple", "status_option", "label_words_option", "OUT_HELP", "LANG_HELP", "MODEL_HELP",
           "PARSE_FALLBACK_HELP", "LABEL_WORDS_HELP", "STATUS_HELP"]


def csv_list(value: str | None, option: str = "a comma list") -> list[str] | None:
    """``"a, b,,c"`` -> ``["a", "b", "c"]``; None -> None (the option's default). A value that names nothing
    (``""``, ``","``) raises ConfigError naming `option` (`culturekb._records.comma_list`)."""
    from culturekb._records import comma_list

    return comma_list(value, option)


def csv_tuple(value: str | None, option: str = "a comma list") -> tuple[str, ...] | None:
    """`csv_list` as a tuple (what the run specs hold)."""
    items = csv_list(value, option)
    return tuple(items) if items is not None else None


def prompt_language_tuple(value: str | None, template: str) -> tuple[str, ...] | None:
    """``--prompt-languages``: the comma list as normalised codes (``zh-CN`` -> ``zh``), each once, checked against
    the languages `template` is packaged in; a language without it raises ConfigError naming those."""
    from culturekb.inference.prompts import normalise_language

    items = csv_list(value, "--prompt-languages")
    if items is None:
        return None
    langs = tuple(dict.fromkeys(normalise_language(v) for v in items))
    available = available_prompt_languages(template)
    missing = [lang for lang in langs if lang not in available]
    if missing:
        raise ConfigError(f"--prompt-languages {value!r}: no packaged {template} prompt in {missing}; the packaged "
                          f"languages are {available}. Drop those, or run the runner from Python with your own "
                          "templates")
    return langs


OUT_HELP = "run folder (reports, resumable predictions)"
LANG_HELP = f"comma list of prompt languages ({', '.join(PROMPT_LANGUAGES)})"
MODEL_HELP = "kb-prior | openai:MODEL | hf:PATH | any registered model client"
PARSE_FALLBACK_HELP = ("answers naming no label word go to the nearest label by the multilingual embedder "
                        "(default: the parse_fallback setting, off)")
LABEL_WORDS_HELP = ('label words file, JSON or TOML: {"<lang>": {"<label>": ["word", ...]}}; the prompts show these '
                    "words beside the labels and the parser reads them (the run report lists the words of unread "
                    "answers)")
STATUS_HELP = ("which tuples are served: all (every tuple but rejected ones; pending ones marked unreviewed), "
                "accepted (reviewed only) or pending (default: the status setting, all)")


def status_option(value: str | None) -> str | None:
    """``--status``: a status filter (all, accepted, pending), checked now; None leaves it to the settings."""
    from culturekb.retrieval.filters import check_status

    return None if value is None else check_status(value.strip())


def label_words_option(value: Path | None) -> Path | None:
    """``--label-words FILE``: the file, read and checked now (a bad file fails before any data or model)."""
    if value is None:
        return None
    from culturekb.kb.label_words import load_label_words

    load_label_words(value)
    return value


def field_map_option(value: str | None) -> str | None:
    """``--map``: a built-in map's name, a map file or ``field=KEY`` pairs, checked now (the spec keeps the text)."""
    from culturekb._records import parse_field_map

    parse_field_map(value)
    return value.strip() if value else None


MAP_HELP = ("how the file's keys map to this benchmark's fields: a built-in map (tombench, tombench-zh, hitom, "
            "blend ...: culturekb/data/maps), a .toml/.json map file, or field=KEY pairs such as "
            "id=qid,question=QUESTION (default: the loader's names, or a built-in map the file matches)")
ON_BAD_ROW_HELP = ("fail: report every bad row of the data at once and run nothing; skip: leave bad rows out and "
                   "list them in the run report")
MapOption = Annotated[str | None, typer.Option("--map", help=MAP_HELP)]
OnBadRowOption = Annotated[str, typer.Option("--on-bad-row", help=ON_BAD_ROW_HELP)]
SCHEME_HELP = ("label scheme the data's labels are read against: artemis9, cedar14, a file, or a comma list "
               "(default: the KB's); it must have the KB's labels, its synonyms and translations may add to them")
SchemeOption = Annotated[str | None, typer.Option("--scheme", help=SCHEME_HELP)]
