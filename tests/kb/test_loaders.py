"""Loaders: the shipped real demo samples, and every bad-input case made in tmp_path."""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path

import pytest

from culturekb.errors import ConfigError, DataError
from culturekb.kb import Sample
from culturekb.kb.artemis import is_western_style, parse_painting_slug, split_by_image
from culturekb.kb.loaders import LoadResult, load_artemis_csv, load_samples_jsonl

DEMO = resources.files("culturekb.data").joinpath("demo")
VASNETSOV = "viktor-vasnetsov_ivan-tsarevich-riding-the-grey-wolf-1889"
HEADER = "painting,art_style,emotion,language,utterance\n"


def demo_path(name: str) -> Path:
    return Path(str(DEMO.joinpath(name)))


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    p = tmp_path / name
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8")
    return p


# -- the shipped real samples ------------------------------------------------------------------------------
def test_artelingo_demo_majority_per_culture() -> None:
    res = load_artemis_csv(demo_path("artelingo_demo.csv"))
    assert isinstance(res, LoadResult)
    assert res.layout == "per-annotation"
    assert res.rows_read == 48
    by_id = {s.id: s for s in res.samples}
    # hand-counted from the file: Arabic Havana harbour is awe/excitement/amusement, one vote each -> dropped
    assert res.dropped_no_majority == {"en": 0, "ar": 1, "zh": 0}
    assert res.dropped_ids["ar"] == ("willard-metcalf_havana-harbor",)
    assert "willard-metcalf_havana-harbor::ar" not in by_id
    assert len(res.samples) == 8
    assert by_id["toyen_crying::ar"].label == "sadness"  # 3 of 5
    assert by_id[f"{VASNETSOV}::en"].label == "awe"  # awe 4, fear 3
    assert by_id[f"{VASNETSOV}::ar"].label == "contentment"  # 2 of 5, the rest one each
    assert by_id["willard-metcalf_havana-harbor::zh"].label == "contentment"
    s = by_id[f"{VASNETSOV}::en"]
    assert s.culture == "en" and s.split == "train"
    assert s.title == "ivan tsarevich riding the grey wolf"
    assert s.metadata["artist"] == "viktor vasnetsov"
    assert s.metadata["image_id"] == VASNETSOV
    assert s.metadata["art_style"] == "Romanticism" and s.metadata["western"] is True
    assert s.metadata["label_counts"] == {"awe": 4, "fear": 3}
    assert len(s.explanations) == 7 == len(s.metadata["explanation_labels"])
    assert Counter(s.metadata["explanation_labels"]) == Counter({"awe": 4, "fear": 3})
    assert s.image is None and s.metadata["image_relpath"] == f"Romanticism/{VASNETSOV}.jpg"
    # the samples of one image share its image_id across cultures
    assert {x.image_id for x in res.samples if x.id.startswith(VASNETSOV)} == {VASNETSOV}


def test_artelingo_demo_culture_filter_and_data_root(tmp_path: Path) -> None:
    res = load_artemis_csv(demo_path("artelingo_demo.csv"), data_root=tmp_path, cultures=["Chinese"])
    assert {s.culture for s in res.samples} == {"zh"}
    assert len(res.samples) == 3
    s = next(x for x in res.samples if x.id.startswith(VASNETSOV))
    assert s.image == str(tmp_path / "Romanticism" / f"{VASNETSOV}.jpg")


def test_artemis_demo_one_row_per_image() -> None:
    res = load_artemis_csv(demo_path("artemis_demo.csv"))
    assert res.layout == "per-image"
    assert res.rows_read == 200 and len(res.samples) == 200
    assert {s.culture for s in res.samples} == {"en"}
    assert len({s.id for s in res.samples}) == 200
    assert all(s.split is None and len(s.explanations) == 1 for s in res.samples)
    assert all(s.metadata["n_annotators"] >= 1 for s in res.samples)
    assert all(s.label != "something else" for s in res.samples)  # dropped upstream
    styles = {s.metadata["art_style"]: s.metadata["western"] for s in res.samples}
    assert styles["Baroque"] is True
    if "Ukiyo_e" in styles:
        assert styles["Ukiyo_e"] is False


def test_layout_override_and_bad_layout(tmp_path: Path) -> None:
    p = write(tmp_path, "a.csv", HEADER + "a_x,Realism,sadness,english,one\nb_y,Realism,awe,english,two\n")
    assert load_artemis_csv(p).layout == "per-image"  # no (painting, culture) repeats
    assert load_artemis_csv(p, layout="per-annotation").layout == "per-annotation"
    with pytest.raises(ConfigError, match="layout"):
        load_artemis_csv(p, layout="rows")  # type: ignore[arg-type]


def test_language_column_optional_and_utf8_bom(tmp_path: Path) -> None:
    p = write(tmp_path, "a.csv", "\ufeffPainting,Art_Style,Emotion,Utterance\nx_y-1900,Cubism,sad,so sad\n")
    (s,) = load_artemis_csv(p).samples
    assert (s.culture, s.label, s.title, s.metadata["artist"]) == ("en", "sadness", "y", "x")


def test_multiline_quoted_rows_keep_file_line_numbers(tmp_path: Path) -> None:
    text = HEADER + 'a_x,Realism,awe,english,"two\nlines"\nb_y,Realism,bliss,english,bad\n'
    with pytest.raises(DataError, match=r"line 4"):
        load_artemis_csv(write(tmp_path, "m.csv", text))


# -- bad input -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "text", "said"), [
    # a missing column: the file, the column, the columns expected
    ("m.csv", "painting,art_style,utterance\na_b,Realism,hi\n", ("m.csv", "'emotion'", "expected columns",
                                                                  "utterance")),
    # an unknown label: the file and line, the label, the scheme's labels
    ("l.csv", HEADER + "a_b,Realism,awe,english,x\na_b,Realism,bliss,english,y\n",
     ("l.csv, line 3", "'bliss'", "contentment", "something else")),
])
def test_bad_csv_says_where_and_what_is_expected(tmp_path: Path, name: str, text: str, said: tuple[str, ...]) -> None:
    with pytest.raises(DataError) as e:
        load_artemis_csv(write(tmp_path, name, text))
    msg = str(e.value)
    assert all(part in msg for part in said), (said, msg)


def test_unknown_culture(tmp_path: Path) -> None:
    p = write(tmp_path, "c.csv", HEADER + "a_b,Realism,awe,klingon,x\n")
    with pytest.raises(DataError, match=r"c.csv, line 2.*unknown culture 'klingon'.*known cultures: .*zh"):
        load_artemis_csv(p)


@pytest.mark.parametrize("text", ["", "\n\n  \n"])
def test_empty_file(tmp_path: Path, text: str) -> None:
    with pytest.raises(DataError, match="empty"):
        load_artemis_csv(write(tmp_path, "e.csv", text))
    with pytest.raises(DataError, match="empty"):
        load_samples_jsonl(write(tmp_path, "e.jsonl", text))


def test_header_only(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="header but no data rows"):
        load_artemis_csv(write(tmp_path, "h.csv", HEADER))


def test_non_utf8_names_byte_offset(tmp_path: Path) -> None:
    raw = (HEADER + "a_b,Realism,awe,english,caf").encode() + b"\xe9\n"
    offset = raw.index(b"\xe9")
    with pytest.raises(DataError, match=rf"byte offset {offset} \(line 2\).*re-save the file as UTF-8"):
        load_artemis_csv(write(tmp_path, "latin1.csv", raw))
    with pytest.raises(DataError, match="byte offset 8 "):
        load_samples_jsonl(write(tmp_path, "latin1.jsonl", b'{"id": "\xff"}\n'))


def test_per_image_duplicate_painting_same_culture(tmp_path: Path) -> None:
    text = (
        "painting,art_style,emotion,repetition,utterance\n"
        "a_b,Realism,awe,5,x\nc_d,Realism,awe,5,y\na_b,Realism,fear,5,z\n"
    )
    with pytest.raises(DataError, match=r"d.csv, line 4: painting 'a_b' appears again .*\(first on line 2\)"):
        load_artemis_csv(write(tmp_path, "d.csv", text))


@pytest.mark.parametrize(
    ("style", "painting"), [("Realism", "../../etc/passwd"), ("/abs", "a_b"), ("..", "a_b"), ("C:", "a_b")]
)
def test_csv_path_escaping_data_root(tmp_path: Path, style: str, painting: str) -> None:
    p = write(tmp_path, "p.csv", HEADER + f"{painting},{style},awe,english,x\n")
    with pytest.raises(DataError, match=r"p.csv, line 2: image path .* escapes the data root"):
        load_artemis_csv(p, data_root=tmp_path / "images")


def test_split_column_respected_and_consistent(tmp_path: Path) -> None:
    ok = HEADER.strip() + ",split\na_b,Realism,awe,english,x,val\na_b,Realism,awe,chinese,y,validation\n"
    res = load_artemis_csv(write(tmp_path, "s.csv", ok))
    assert {s.split for s in res.samples} == {"valid"}
    bad = HEADER.strip() + ",split\na_b,Realism,awe,english,x,train\na_b,Realism,awe,chinese,y,test\n"
    with pytest.raises(DataError, match="more than one split"):
        load_artemis_csv(write(tmp_path, "s2.csv", bad))
    unknown = HEADER.strip() + ",split\na_b,Realism,awe,english,x,holdout\n"
    with pytest.raises(DataError, match="unknown split 'holdout'"):
        load_artemis_csv(write(tmp_path, "s3.csv", unknown))


def test_ragged_row(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="line 2: 6 fields but the header has 5"):
        load_artemis_csv(write(tmp_path, "r.csv", HEADER + "a_b,Realism,awe,english,x,extra\n"))


# -- JSONL -----------------------------------------------------------------------------------------------------
def jsonl(tmp_path: Path, rows: Sequence[Mapping[str, object]], name: str = "s.jsonl") -> Path:
    return write(tmp_path, name, "\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n")


def test_jsonl_roundtrip_fields(tmp_path: Path) -> None:
    rows: list[dict[str, object]] = [
        {"id": "w::zh", "image": "Ukiyo_e/w.jpg", "culture": "Chinese", "label": "悲伤",
         "explanations": ["海浪", " "], "concepts": ["wave"], "title": "the wave", "split": "train",
         "metadata": {"image_id": "w", "western": False}},
        {"id": "w::en", "image": "Ukiyo_e/w.jpg", "culture": "en", "label": "sad", "explanation": "big wave"},
        {"id": "u", "image": "https://example.org/u.jpg", "culture": "ar", "label": "awe"},
    ]
    res = load_samples_jsonl(jsonl(tmp_path, rows))
    a, b, c = res.samples
    assert (a.culture, a.label, a.explanations, a.concepts, a.title, a.split) == (
        "zh", "sadness", ["海浪"], ["wave"], "the wave", "train"
    )
    assert a.image == str(tmp_path / "Ukiyo_e/w.jpg")  # relative to the JSONL folder without data_root
    assert a.image_id == "w" and a.metadata["western"] is False
    assert b.label == "sadness" and b.explanations == ["big wave"] and b.image_id == "Ukiyo_e/w.jpg"
    assert c.image == "https://example.org/u.jpg" and c.image_id == "https://example.org/u.jpg"
    assert res.rows_read == 3 and res.layout == "jsonl"
    (d,) = load_samples_jsonl(jsonl(tmp_path, [{"id": "p1::ar", "culture": "ar", "label": "awe"}], "d.jsonl")).samples
    assert d.image_id == "p1" and d.image is None
    res2 = load_samples_jsonl(jsonl(tmp_path, rows), data_root=tmp_path / "root", cultures=["zh"])
    assert [s.id for s in res2.samples] == ["w::zh"]
    assert res2.samples[0].image == str(tmp_path / "root" / "Ukiyo_e/w.jpg")


def test_jsonl_duplicate_ids(tmp_path: Path) -> None:
    rows = [{"id": "a", "culture": "en", "label": "awe"}, {"id": "b", "culture": "en", "label": "awe"},
            {"id": "a", "culture": "zh", "label": "awe"}]
    with pytest.raises(DataError, match=r"s.jsonl, line 3: duplicate id 'a' \(first on line 1\)"):
        load_samples_jsonl(jsonl(tmp_path, rows))


@pytest.mark.parametrize(
    ("row", "pattern"),
    [
        ({"id": "a", "culture": "en", "label": "bliss"}, r"line 1, field 'label': unknown label 'bliss'.*awe"),
        ({"id": "a", "culture": "vulcan", "label": "awe"}, r"line 1, field 'culture': unknown culture 'vulcan'"),
        ({"id": "a", "culture": "en"}, r"field 'label' is missing"),
        ({"culture": "en", "label": "awe"}, r"field 'id' is missing"),
        ({"id": "a", "label": "awe"}, r"field 'culture' is missing"),
        ({"id": "a", "culture": "en", "label": "awe", "colour": 1}, r"unknown field\(s\) \['colour'\].*metadata"),
        ({"id": "a", "culture": "en", "label": "awe", "explanations": "x"}, r"'explanations' must be a list"),
        ({"id": "a", "culture": "en", "label": "awe", "explanations": [], "explanation": "x"}, "not both"),
        ({"id": "a", "culture": "en", "label": "awe", "metadata": []}, r"'metadata' must be an object"),
    ],
)
def test_jsonl_bad_rows(tmp_path: Path, row: dict[str, object], pattern: str) -> None:
    with pytest.raises(DataError, match=pattern):
        load_samples_jsonl(jsonl(tmp_path, [row]))


def test_jsonl_invalid_json_line(tmp_path: Path) -> None:
    p = write(tmp_path, "j.jsonl", '{"id": "a", "culture": "en", "label": "awe"}\n\n{"id": \n')
    with pytest.raises(DataError, match=r"j.jsonl, line 3: invalid JSON"):
        load_samples_jsonl(p)


def test_jsonl_unlabelled_allowed_when_asked(tmp_path: Path) -> None:
    res = load_samples_jsonl(jsonl(tmp_path, [{"id": "a", "culture": "en"}]), require_label=False)
    assert res.samples[0].label is None


@pytest.mark.parametrize("image", ["../outside.jpg", "/etc/passwd", "a/../../b.jpg"])
def test_jsonl_image_escaping_data_root(tmp_path: Path, image: str) -> None:
    p = jsonl(tmp_path, [{"id": "a", "culture": "en", "label": "awe", "image": image}])
    with pytest.raises(DataError, match=r"line 1, field 'image': image path .* escapes the data root"):
        load_samples_jsonl(p, data_root=tmp_path)


# -- split_by_image ------------------------------------------------------------------------------------------
def _samples(n_images: int, cultures: tuple[str, ...] = ("en", "zh", "ar")) -> list[Sample]:
    return [
        Sample(id=f"img{i}::{c}", culture=c, label="awe", metadata={"image_id": f"img{i}"})
        for i in range(n_images)
        for c in cultures
    ]


def test_split_exact_ratios_same_for_every_culture() -> None:
    out = split_by_image(_samples(100))
    per_image: dict[str, set[str | None]] = {}
    for s in out:
        per_image.setdefault(s.image_id, set()).add(s.split)
    assert all(len(v) == 1 for v in per_image.values())
    assert Counter(next(iter(v)) for v in per_image.values()) == {"train": 80, "valid": 10, "test": 10}


def test_split_independent_of_order_and_seeded() -> None:
    samples = _samples(50)
    shuffled = samples[:]
    random.Random(1).shuffle(shuffled)
    a = {s.id: s.split for s in split_by_image(samples, seed=3)}
    b = {s.id: s.split for s in split_by_image(shuffled, seed=3)}
    assert a == b
    c = {s.id: s.split for s in split_by_image(samples, seed=4)}
    assert a != c
    assert [s.id for s in split_by_image(shuffled)] == [s.id for s in shuffled]  # order kept


def test_split_keeps_existing_and_rejects_conflicts() -> None:
    samples = _samples(10)
    samples[0] = samples[0].model_copy(update={"split": "test"})  # img0::en
    out = split_by_image(samples)
    assert {s.split for s in out if s.image_id == "img0"} == {"test"}
    bad = samples[:]
    bad[1] = bad[1].model_copy(update={"split": "train"})  # img0::zh
    with pytest.raises(DataError, match="img0"):
        split_by_image(bad)
    with pytest.raises(ConfigError, match="ratios"):
        split_by_image(samples, ratios=(1, -1, 1))
    assert Counter(s.split for s in split_by_image(_samples(10, ("en",)), ratios=(1, 1, 0))) == {
        "train": 5, "valid": 5
    }


# -- small helpers ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("slug", "artist", "title"),
    [
        ("agostino-carracci_venus-and-mars-1600", "agostino carracci", "venus and mars"),
        ("diego-velazquez_self-portrait-1", "diego velazquez", "self portrait"),
        ("francois-boucher_triumph-of-venus-1740(1)", "francois boucher", "triumph of venus"),
        ("wassily-kandinsky_composition-no-3", "wassily kandinsky", "composition no 3"),
        ("n.c.-wyeth_merlin-taking-away-the-infant-arthur", "n.c. wyeth", "merlin taking away the infant arthur"),
        ("untitled", "", "untitled"),
    ],
)
def test_parse_painting_slug(slug: str, artist: str, title: str) -> None:
    assert parse_painting_slug(slug) == (artist, title)


def test_is_western_style() -> None:
    assert is_western_style("Post_Impressionism") is True
    assert is_western_style("post impressionism") is True
    assert is_western_style("Ukiyo_e") is False
    assert is_western_style("Mughal") is False
    assert is_western_style("Made_Up_Style") is None
    assert is_western_style(None) is None
