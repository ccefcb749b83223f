"""The Cedar file format and its loader.

Cedar (`load_cedar`)
--------------------
=============  ==========================================  ========================================================
field          aliases                                     meaning
=============  ==========================================  ========================================================
id             item_id, uid                                unique id (string or integer)
language       lang, culture, locale                       the data language / culture: ``ar zh en hi ja es sw``
                                                           (any culture id or alias of the registry); one per row
modality       type, subset, input, setting                ``multimodal`` (aliases mm, image, vision, image+text,
                                                           image-text, vl) or ``text`` (text-only, text_only,
                                                           textonly, unimodal); default: multimodal iff an image
image          image_path, img, image_file                 path (relative to ``data_root`` or the file's folder),
                                                           absolute path, or URI; required for multimodal rows
narrative      story, context, scenario, text, situation   the story the question is about
question       prompt, query                               the question asked about the narrative
label          emotion, gold, answer, gold_label           a label of the scheme (``cedar14`` by default; synonyms
                                                           and translations accepted); required
=============  ==========================================  ========================================================

Samples: ``culture`` = the language's culture id, ``text`` = narrative, ``question``, ``image``, ``label``;
metadata ``language``, ``modality``, ``source``, ``source_line``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from culturekb._records import FieldMap, LoadReport
from culturekb.errors import DataError
from culturekb.evals.loaders import Row, load_context, load_rows, resolve_image, row_culture
from culturekb.kb.cultures import CultureRegistry
from culturekb.kb.loaders import canonical_label
from culturekb.kb.schema import Sample
from culturekb.kb.schemes import EmotionScheme

__all__ = ["load_cedar"]

log = logging.getLogger(__name__)

_MULTIMODAL = {"multimodal", "multi-modal", "mm", "image", "vision", "image+text", "image-text", "image_text", "vl",
               "visual"}

_TEXT = {"text", "text-only", "text_only", "textonly", "text only", "unimodal", "language"}

_LANG_SEPARATORS = re.compile(r"[,/;+|&]| and ")


def load_cedar(
    path: str | Path,
    *,
    scheme: str | EmotionScheme = "cedar14",
    languages: Sequence[str] | None = None,
    modalities: Sequence[str] | None = None,
    data_root: str | Path | None = None,
    check_images: bool = True,
    registry: CultureRegistry | None = None,
    field_map: FieldMap | None = None,
    on_bad_row: str = "fail",
    report: LoadReport | None = None,
) -> list[Sample]:
    """Cedar items (see the module docstring) as samples; `languages` / `modalities` keep only those."""
    sch, reg, root = load_context(scheme, registry, data_root)
    keep_langs = {reg.resolve(lang).id for lang in languages} if languages else None
    keep_mods = {_modality(m, None) for m in modalities} if modalities else None

    def sample(row: Row) -> Sample | None:
        sid = row.item_id()
        lang_value = row.text("language", required=True)
        if _LANG_SEPARATORS.search(lang_value.lower()):
            raise DataError(
                f"{row.where}: language {lang_value!r} names more than one language; give each language's "
                "version of an item as its own row with one language"
            )
        culture = row_culture(reg, lang_value, row, "language")
        image_value = row.text("image")
        modality = _modality(row.get("modality"), row) if row.get("modality") is not None else (
            "multimodal" if image_value else "text")
        if modality == "multimodal" and not image_value:
            raise DataError(f"{row.where}: a multimodal item needs an image; give 'image' or set modality 'text'")
        if modality == "text" and image_value:
            raise DataError(f"{row.where}: modality 'text' but an image is given; set modality 'multimodal' or "
                            "drop the image")
        narrative = row.text("narrative")
        question = row.text("question", required=True, what=" (Cedar asks a question about each narrative)")
        if not narrative and modality == "text":
            raise DataError(f"{row.where}: a text-only item needs a narrative")
        label = canonical_label(sch, row.get("label"), f"{row.where}, field 'label'", "label")
        if keep_langs is not None and culture.id not in keep_langs:
            return None
        if keep_mods is not None and modality not in keep_mods:
            return None
        image = resolve_image(row, image_value, root, check_images) if image_value else None
        used = ("id", "language", "modality", "image", "narrative", "question", "label")
        meta = {**row.extra(used), "language": culture.id, "modality": modality, "source": row.source,
                "source_line": row.line}
        return Sample(id=sid, culture=culture.id, image=image, text=narrative or None, question=question,
                      label=label, split="test", metadata=meta)

    out = load_rows(path, "Cedar data", sample, field_map=field_map, on_bad_row=on_bad_row, report=report)
    if not out:
        raise DataError(f"{path}: no item is left after keeping languages {sorted(keep_langs or [])} and modalities "
                        f"{sorted(keep_mods or [])}; check --languages and --modality against the file")
    return out


def _modality(value: Any, row: Row | None) -> str:
    key = str(value).strip().lower()
    if key in _MULTIMODAL:
        return "multimodal"
    if key in _TEXT:
        return "text"
    where = f"{row.where}: " if row is not None else ""
    raise DataError(f"{where}unknown modality {value!r}; use 'multimodal' or 'text' (or an alias: "
                    f"{sorted(_MULTIMODAL | _TEXT)})")


# -- RICE-VL ------------------------------------------------------------------------------------------------------
