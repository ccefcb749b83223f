"""What every benchmark's command line shares: comma lists, the prompt-language and status checks, and the help
texts of the common options. Each benchmark's own options live in its folder (``evals/<name>/command.py``).
"""

from __future__ import annotations

from culturekb.errors import ConfigError
from culturekb.text.prompts import PROMPT_LANGUAGES, available_prompt_languages

__all__ = ["csv_list", "csv_tuple", "prompt_language_tuple", "status_option", "OUT_HELP", "LANG_HELP", "MODEL_HELP",
           "PARSE_FALLBACK_HELP", "STATUS_HELP"]


def csv_list(value: str | None) -> list[str] | None:
    """``"a, b,,c"`` -> ``["a", "b", "c"]``; None or an empty string -> None."""
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def csv_tuple(value: str | None) -> tuple[str, ...] | None:
    """`csv_list` as a tuple (what the run specs hold)."""
    items = csv_list(value)
    return tuple(items) if items is not None else None


def prompt_language_tuple(value: str | None, template: str) -> tuple[str, ...] | None:
    """``--prompt-languages``: the comma list as normalised codes (``zh-CN`` -> ``zh``), each once, checked against
    the languages `template` is packaged in; a language without it raises ConfigError naming those."""
    from culturekb.inference.prompts import normalise_language

    items = csv_list(value)
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
STATUS_HELP = ("which tuples are served: all (every tuple but rejected ones; pending ones marked unreviewed), "
                "accepted (reviewed only) or pending (default: the status setting, all)")


def status_option(value: str | None) -> str | None:
    """``--status``: a status filter (all, accepted, pending), checked now; None leaves it to the settings."""
    from culturekb.retrieval.filters import check_status

    return None if value is None else check_status(value.strip())

