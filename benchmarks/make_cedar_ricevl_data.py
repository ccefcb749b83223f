"""Make a Cedar-format and RICE-VL-format data set from the real data under ../shared/data (for the measurement).

Nothing made here is shipped; it is written under ``--out`` (default ``.culturekb-cache/bench-data``, ignored by
git) and can be remade at any time. The mappings below are explicit data, documented where they are defined.

Cedar (``cedar/``):
- ``cedar_test.jsonl`` (Cedar format). Text-only English items from FindingEmo (the scene's image-search query gives
  the people and the setting of a short narrative; the gold label is the annotator's Plutchik-24 emotion mapped to
  cedar14 by ``FINDINGEMO_TO_CEDAR14``), plus ArtELingo items in English, Arabic and Chinese (the per-language
  majority label of each painting, mapped by ``ARTEMIS_TO_CEDAR14``; ties and "something else" are dropped and
  counted). The two ArtELingo paintings whose public-domain image is in ``wikiart_pd_images`` are multimodal.
- ``cedar_kb_train.jsonl``: other FindingEmo scenes as culturekb sample JSONL (concepts: the people and the
  setting; explanation: the annotation itself in words), to build a cedar14 KB with
  ``culturekb build --scheme cedar14 --concepts precomputed``.

RICE-VL (``ricevl/``), from VULCA-Bench expert critiques (no ASEAN data exists here, so the countries are those of
the VULCA subsets, loaded with ``--any-country``): each artwork's art style is its sub-culture, its country comes
from the subset (``VULCA_COUNTRY``), its category from its form/genre (``vulca_category``), and the first sentences
of its English critique are its facts; salient words of its English title are further cue concepts. Split 70/30
by a hash of ``pair_id``:
- ``cue_metadata.jsonl``: the 70% as RICE-VL-style training metadata (cue KB);
- ``vqa_test.jsonl``: from the 30%, questions in the three formats (qa: name the tradition and country; fill: the
  tradition's name; tf: a true or a false claim of tradition and country);
- ``grounding.jsonl`` + ``collages/``: two- and three-panel collages of the public-domain WikiArt images, the phrase
  naming one painting's artist, the gold box exactly that panel (pixels, xyxy); countries are the artists'.

Usage: python benchmarks/make_cedar_ricevl_data.py [--shared ../shared/data] [--out .culturekb-cache/bench-data]
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import logging
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, TypedDict

log = logging.getLogger("make_cedar_ricevl_data")

# FindingEmo's 24 Plutchik emotions -> cedar14: each basic emotion and its milder/stronger forms as in the
# plutchik8 -> cedar14 table of culturekb/data/schemes/plutchik8.json (argmax), except where a form has a closer
# cedar14 label: serenity -> contentment, admiration -> awe, amazement -> awe, pensiveness -> sadness.
FINDINGEMO_TO_CEDAR14 = {
    "joy": "happiness", "ecstasy": "happiness", "serenity": "contentment",
    "trust": "contentment", "acceptance": "contentment", "admiration": "awe",
    "fear": "fear", "terror": "fear", "apprehension": "fear",
    "surprise": "surprise", "amazement": "awe", "distraction": "surprise",
    "sadness": "sadness", "grief": "sadness", "pensiveness": "sadness",
    "disgust": "disgust", "loathing": "disgust", "boredom": "disgust",
    "anger": "anger", "rage": "anger", "annoyance": "anger",
    "anticipation": "desire", "vigilance": "desire", "interest": "desire",
}
# ArtEmis 9 -> cedar14: same-named labels map to themselves; excitement (pleasant, active) -> happiness (Q1);
# "something else" has no cedar14 counterpart and is dropped.
ARTEMIS_TO_CEDAR14 = {
    "contentment": "contentment", "awe": "awe", "amusement": "amusement", "sadness": "sadness", "fear": "fear",
    "excitement": "happiness", "disgust": "disgust", "anger": "anger",
}
ARTELINGO_LANGUAGE = {"english": "en", "arabic": "ar", "chinese": "zh"}
NARRATIVE = {
    "en": ("You are looking at the painting \"{title}\" by {artist} ({style}).",
           "Which emotion does this painting stir in you?"),
    "zh": ("你正在观看{artist}的画作《{title}》（{style}）。", "这幅画让你产生了哪种情绪？"),
    "ar": ("أنت تنظر إلى لوحة \"{title}\" للفنان {artist} ({style}).", "ما العاطفة التي تثيرها فيك هذه اللوحة؟"),
}
VULCA_COUNTRY = {"japanese": "Japan", "korean": "Korea", "indian": "India", "islamic": "Iran", "mural": "China"}
STYLE_NAMES = {
    "ukiyo-e": "ukiyo-e", "nihonga": "nihonga", "rinpa": "rinpa", "zen": "zen ink painting",
    "suiboku": "suiboku ink painting", "buddhist": "buddhist painting", "mughal": "mughal painting",
    "rajput": "rajput painting", "rajasthani": "rajasthani painting", "pahari": "pahari painting",
    "pala": "pala painting", "manipuri_folk": "manipuri folk painting", "persian_miniature": "persian miniature",
    "muninhwa": "munninhwa literati painting", "minhwa": "minhwa folk painting", "daoist": "daoist mural",
    "buddhist_mural": "buddhist mural", "fresco": "fresco",
}
RELIGIOUS_STYLES = {"buddhist", "daoist", "zen", "buddhist_mural"}
# Title words too generic to serve as cue concepts (they would match every question about an artwork).
GENERIC_TITLE_WORDS = {"painting", "artwork", "work", "detail", "picture", "scroll", "screen", "page", "folio",
                       "image", "art", "leaf", "album", "manuscript", "fragment", "section", "part", "copy"}
# Nationality of the WikiArt artists (general knowledge), for the grounding items' country.
ARTIST_COUNTRY = {
    "Wassily Kandinsky": "Russia", "Edgar Degas": "France", "Giuseppe De Nittis": "Italy", "Hoca Ali Riza": "Turkey",
    "Konstantin Korovin": "Russia", "Nikolay Bogdanov-Belsky": "Russia", "Paul Gauguin": "France",
    "Periklis Pantazis": "Greece", "Raoul Dufy": "France", "Willard Metcalf": "United States",
    "Albrecht Durer": "Germany", "Jan van Eyck": "Belgium", "Robert Campin": "Belgium",
    "Theo van Rysselberghe": "Belgium", "Vincent van Gogh": "Netherlands", "Jean-Francois Millet": "France",
    "Theodor Kittelsen": "Norway", "Vasily Surikov": "Russia", "Vasily Vereshchagin": "Russia",
    "William Merritt Chase": "United States", "N. C. Wyeth": "United States", "Paul Cezanne": "France",
    "Viktor Vasnetsov": "Russia", "J. M. W. Turner": "United Kingdom",
}


def _h(text: str) -> int:
    return int(hashlib.sha1(text.encode("utf-8")).hexdigest()[:12], 16)


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    log.info("wrote %d rows to %s", len(rows), path)


# -- Cedar ---------------------------------------------------------------------------------------------------------


def findingemo_scene(image_path: str) -> tuple[str, str, str, str] | None:
    """(query, adjective, people, setting) of a FindingEmo image path, or None when the query has no setting."""
    parts = image_path.strip("/").split("/")
    if len(parts) < 3:
        return None
    query = parts[1].strip()
    words = query.split()
    adj_len = 2 if len(words) > 1 and words[1].lower() in ("up", "out") else 1
    if len(words) < adj_len + 2:
        return None
    adjective = " ".join(words[:adj_len]).lower()
    people = words[adj_len].lower()
    setting = " ".join(words[adj_len + 1:]).lower()
    return query, adjective, people, setting


class _SceneItem(TypedDict):
    """One FindingEmo scene turned into a narrative, before the test/train split."""

    key: str
    index: str
    narrative: str
    label: str
    concepts: list[str]
    why: str


def make_cedar(shared: Path, out: Path, n_test: int, n_train: int) -> dict[str, Any]:
    rows = list(csv.DictReader(open(shared / "findingemo/annotations_single.ann", encoding="utf-8")))
    items: list[_SceneItem] = []
    skipped: Counter[str] = Counter()
    for r in rows:
        scene = findingemo_scene(r["image_path"])
        label = FINDINGEMO_TO_CEDAR14.get(r["emotion"].strip().lower())
        if scene is None:
            skipped["no setting in query"] += 1
            continue
        if label is None:
            skipped[f"unmapped emotion {r['emotion']}"] += 1
            continue
        query, _adj, people, setting = scene
        narrative = (f"A photograph shows {people} at a {setting}. It was found with the image search "
                     f"\"{query}\".")
        cues = " and ".join(re.sub(r"(?<=[a-z])(?=[A-Z])", " ", c).lower() for c in r["dec_factors"].split(",")
                            if c.strip()) or "the scene as a whole"
        why = (f"An annotator saw {r['emotion'].lower()} in this scene (valence {r['valence']} on -3..3, arousal "
               f"{r['arousal']} on 0..6), judging by {cues}.")
        items.append({"key": r["image_path"], "index": r["index"], "narrative": narrative, "label": label,
                      "concepts": [people, setting], "why": why})
    items.sort(key=lambda x: _h(x["key"]))
    seen: set[str] = set()
    unique: list[_SceneItem] = []
    for it in items:
        if it["key"] not in seen:
            seen.add(it["key"])
            unique.append(it)
    test_items, train_items = unique[:n_test], unique[n_test:n_test + n_train]
    cedar = [{"id": f"findingemo-{it['index']}", "language": "en", "modality": "text", "narrative": it["narrative"],
              "question": "Which emotion would people feel on seeing this scene?", "label": it["label"],
              "source": "FindingEmo annotations_single.ann", "image_path_source": it["key"]} for it in test_items]
    train = [{"id": f"findingemo-{it['index']}", "culture": "en", "label": it["label"], "text": it["narrative"],
              "concepts": it["concepts"], "explanations": [it["why"]], "split": "train",
              "metadata": {"image_id": it["key"], "source": "FindingEmo"}} for it in train_items]

    # ArtELingo: per-language majority label of each painting
    art = list(csv.DictReader(open(shared / "artelingo_sample/artelingo_release_sample.csv", encoding="utf-8")))
    images = {Path(r["image_file"]).stem: r["image_file"]
              for r in csv.DictReader(open(shared / "wikiart_pd_images/images_metadata.csv", encoding="utf-8"))}
    votes: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    style: dict[str, str] = {}
    for r in art:
        lang = ARTELINGO_LANGUAGE[r["language"].strip().lower()]
        style[r["painting"]] = r["art_style"]
        mapped = ARTEMIS_TO_CEDAR14.get(r["emotion"].strip().lower())
        if mapped is None:
            skipped["artelingo 'something else' vote"] += 1
            continue
        votes[(r["painting"], lang)][mapped] += 1
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from culturekb.kb.artemis import parse_painting_slug

    for (painting, lang), counts in sorted(votes.items()):
        top = counts.most_common()
        if len(top) > 1 and top[0][1] == top[1][1]:
            skipped["artelingo tie"] += 1
            continue
        artist, title = parse_painting_slug(painting)
        narrative, question = NARRATIVE[lang]
        row: dict[str, Any] = {
            "id": f"artelingo-{painting}::{lang}", "language": lang,
            "narrative": narrative.format(title=title, artist=artist.title(), style=style[painting].replace("_", " ")),
            "question": question, "label": top[0][0], "source": "ArtELingo sample", "painting": painting,
            "votes": dict(counts)}
        if painting in images:
            row["modality"], row["image"] = "multimodal", images[painting]
        else:
            row["modality"] = "text"
        cedar.append(row)
    _write(out / "cedar/cedar_test.jsonl", cedar)
    _write(out / "cedar/cedar_kb_train.jsonl", train)
    return {"cedar_test": len(cedar), "cedar_kb_train": len(train), "skipped": dict(skipped),
            "labels": dict(Counter(r["label"] for r in cedar)),
            "languages": dict(Counter(r["language"] for r in cedar)),
            "modalities": dict(Counter(r["modality"] for r in cedar))}


# -- RICE-VL ---------------------------------------------------------------------------------------------------------


def vulca_category(row: dict[str, Any]) -> str:
    """A RICE-VL category for a VULCA artwork, from its form, genre and style."""
    form = (row.get("art_form") or "").lower()
    genre = (row.get("art_genre") or "").lower()
    style = (row.get("art_style") or "").lower()
    if form in ("calligraphy", "manuscript_illumination") or genre == "manuscript_illustration":
        return "language signs and literature"
    if form == "sculpture":
        return "architecture and heritage"
    if form == "textile":
        return "clothing"
    if style in RELIGIOUS_STYLES or genre in ("religious", "religious_narrative", "mythological"):
        return "religious practices"
    return "painting"


def _sentences(text: str, max_chars: int = 240) -> list[str]:
    parts = re.split(r"(?<=[.!?])\s+", " ".join(text.split()))
    return [p for p in parts if 20 <= len(p) <= max_chars and not re.search(r"\b[A-Z]{2}_L\d", p)]


def make_ricevl(shared: Path, out: Path, n_test_per_country: int) -> dict[str, Any]:
    rows = []
    for subset, country in VULCA_COUNTRY.items():
        for line in open(shared / f"vulca_bench_subsets/{subset}.jsonl", encoding="utf-8"):
            r = json.loads(line)
            style = (r.get("art_style") or "").strip().lower()
            title = (r.get("title") or "").strip()
            if style not in STYLE_NAMES or not title or title.startswith("Title"):
                continue
            rows.append({**r, "country": country, "sub_culture": STYLE_NAMES[style], "category": vulca_category(r)})
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from culturekb.kb.schema import Sample
    from culturekb.text.concepts import TextConceptExtractor

    title_concepts = TextConceptExtractor(fields=("title",), max_concepts=4)
    train = [r for r in rows if _h(r["pair_id"]) % 10 < 7]
    test = [r for r in rows if _h(r["pair_id"]) % 10 >= 7]
    meta = []
    for r in train:
        facts = _sentences(r.get("critique_en") or "")[:4]
        if facts:
            found = title_concepts.extract_one(Sample(id=r["pair_id"], culture="en", title=r.get("title") or ""))
            keywords = [c for c in found if c.isascii() and c not in GENERIC_TITLE_WORDS]
            meta.append({"id": r["pair_id"], "country": r["country"], "category": r["category"],
                         "sub_culture": r["sub_culture"], "concepts": keywords, "facts": facts,
                         "source": "VULCA-Bench"})
    by_country: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in sorted(test, key=lambda r: _h("q" + r["pair_id"])):
        if len(by_country[r["country"]]) < n_test_per_country:
            by_country[r["country"]].append(r)
    all_subs = sorted({(r["country"], r["sub_culture"]) for r in rows})
    vqa = []
    for country in sorted(by_country):
        for i, r in enumerate(by_country[country]):
            artist = (r.get("artist") or "").strip()
            work = f"\"{r['title']}\"" + ("" if not artist or artist.lower().startswith("unknown") else f" by {artist}")
            fmt = ("qa", "fill", "tf")[i % 3]
            base = {"id": f"vulca-{r['pair_id']}-{fmt}", "country": country, "category": r["category"],
                    "sub_culture": r["sub_culture"], "format": fmt, "source": "VULCA-Bench"}
            if fmt == "qa":
                q = f"Which painting tradition does the artwork {work} belong to, and which country is it from?"
                vqa.append({**base, "question": q, "answer": f"{r['sub_culture']}, {country}"})
            elif fmt == "fill":
                q = f"The artwork {work} is an example of the ___ tradition."
                vqa.append({**base, "question": q, "answer": r["sub_culture"]})
            else:
                truthful = _h("tf" + r["pair_id"]) % 2 == 0
                if truthful:
                    claim_country, claim_sub = country, r["sub_culture"]
                else:
                    others = [x for x in all_subs if x[0] != country]
                    claim_country, claim_sub = others[_h("o" + r["pair_id"]) % len(others)]
                q = f"True or false: the artwork {work} is a work of {claim_sub} from {claim_country}."
                vqa.append({**base, "question": q, "answer": truthful})
    _write(out / "ricevl/cue_metadata.jsonl", meta)
    _write(out / "ricevl/vqa_test.jsonl", vqa)
    grounding = make_collages(shared, out)
    return {"cue_metadata": len(meta), "vqa_test": len(vqa), "grounding": len(grounding),
            "countries": dict(Counter(r["country"] for r in vqa)),
            "categories": dict(Counter(r["category"] for r in vqa)),
            "formats": dict(Counter(r["format"] for r in vqa)),
            "grounding_countries": dict(Counter(r["country"] for r in grounding))}


def make_collages(shared: Path, out: Path, height: int = 360, gap: int = 12) -> list[dict[str, Any]]:
    """Collages of 2 or 3 paintings side by side; each painting is the target once."""
    from PIL import Image

    meta = list(csv.DictReader(open(shared / "wikiart_pd_images/images_metadata.csv", encoding="utf-8")))
    meta.sort(key=lambda r: _h(r["image_file"]))
    folder = out / "ricevl/collages"
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for i, target in enumerate(meta):
        pool = [m for m in meta if m["artist"] != target["artist"]]
        n_others = 1 + (i % 2)
        others = [pool[(_h(target["image_file"]) + 7 * k) % len(pool)] for k in range(n_others)]
        panels = [target, *others]
        order = sorted(range(len(panels)), key=lambda k: _h(f"{i}:{k}"))
        panels = [panels[k] for k in order]
        scaled = []
        for p in panels:
            with Image.open(shared / "wikiart_pd_images" / p["image_file"]) as im:
                rgb = im.convert("RGB")
                w = max(1, round(rgb.width * height / rgb.height))
                scaled.append(rgb.resize((w, height)))
        width = sum(s.width for s in scaled) + gap * (len(scaled) + 1)
        canvas = Image.new("RGB", (width, height + 2 * gap), (255, 255, 255))
        x = gap
        box = None
        for p, s in zip(panels, scaled, strict=True):
            canvas.paste(s, (x, gap))
            if p is target:
                box = [x, gap, x + s.width, gap + height]
            x += s.width + gap
        name = f"collage-{i:02d}.jpg"
        canvas.save(folder / name, quality=88)
        rows.append({"id": f"collage-{i:02d}", "country": ARTIST_COUNTRY[target["artist"]], "category": "painting",
                     "image": f"collages/{name}", "phrase": f"the painting by {target['artist']}", "bbox": box,
                     "bbox_format": "xyxy", "width": canvas.width, "height": canvas.height,
                     "source": "wikiart_pd_images", "target_image": target["image_file"],
                     "panels": [p["image_file"] for p in panels]})
    _write(out / "ricevl/grounding.jsonl", rows)
    return rows


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    ap.add_argument("--out", type=Path, default=Path(".culturekb-cache/bench-data"))
    ap.add_argument("--cedar-test", type=int, default=150)
    ap.add_argument("--cedar-train", type=int, default=6000)
    ap.add_argument("--vqa-per-country", type=int, default=24)
    args = ap.parse_args()
    summary = {"cedar": make_cedar(args.shared, args.out, args.cedar_test, args.cedar_train),
               "ricevl": make_ricevl(args.shared, args.out, args.vqa_per_country)}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False), encoding="utf-8")
    print(json.dumps(summary, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
