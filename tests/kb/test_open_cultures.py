"""Open cultures: codes registered from the data (once, with a warning), strict errors for non-codes, cultures
files (JSON and TOML), and a KB manifest that keeps its cultures so that reading it needs no file."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from culturekb.errors import ConfigError, DataError
from culturekb.kb import Culture, CultureRegistry, KnowledgeBase, KnowledgeTuple, load_samples_jsonl
from culturekb.kb.cultures import (
    code_shape,
    declare_cultures,
    default_registry,
    language_name,
    load_cultures_file,
    reset_default_registry,
    resolve_culture,
)


@pytest.fixture(autouse=True)
def _fresh_process_registry() -> Iterator[None]:
    reset_default_registry()
    yield
    reset_default_registry()


@pytest.mark.parametrize(
    ("value", "shape"),
    [("de", ("de", "de", False)), ("AMH", ("amh", "amh", False)), ("pt-br", ("pt-BR", "pt", False)),
     ("pt_BR", ("pt-BR", "pt", False)), ("zh-hant", ("zh-Hant", "zh", False)),
     ("zh-Hant-TW", ("zh-Hant-TW", "zh", False)),
     ("es-419", ("es-419", "es", False)), ("SG", ("SG", "und", True)), ("xx-YY", ("xx-YY", "xx", False)),
     ("klingon", None), ("Chinese!", None), ("de-", None), ("12", None), ("", None), ("d e", None)],
)
def test_code_shapes(value: str, shape: tuple[str, str, bool] | None) -> None:
    assert code_shape(value) == shape


def test_country_shape_only_for_two_letters() -> None:
    assert code_shape("fr", country=True) == ("FR", "und", True)
    assert code_shape("France", country=True) is None and code_shape("pt-BR", country=True) is None


def test_new_codes_register_once_with_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    reg = CultureRegistry.from_package()
    with caplog.at_level(logging.WARNING, logger="culturekb.kb.cultures"):
        first = reg.register_code("de", where="d.csv, line 2")
        again = [reg.register_code(v, where=f"d.csv, line {i}") for i, v in enumerate(["de", "DE", "German"], 3)]
    assert first == Culture(id="de", name="German", language="de")
    assert all(c is not None and c.id == "de" for c in again)
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1
    assert warnings[0].startswith("d.csv, line 2: new culture 'de' registered from the data as German")
    assert "--cultures-file" in warnings[0] and "\n" not in warnings[0]


def test_language_names_and_bcp47_tags_register() -> None:
    reg = CultureRegistry.from_package()
    amharic = reg.register_code("Amharic")
    assert amharic is not None and (amharic.id, amharic.language, amharic.aliases) == ("am", "am", ("Amharic",))
    brazil = reg.register_code("pt-br")
    assert brazil is not None and (brazil.id, brazil.name, brazil.language) == ("pt-BR", "Portuguese (BR)", "pt")
    made_up = reg.register_code("xx-YY")
    assert made_up is not None and (made_up.name, made_up.language) == ("xx-YY", "xx")
    assert reg.register_code("zh-CN") == reg.resolve("zh")  # a packaged alias, not a new culture
    france = reg.register_code("FR")
    assert france is not None and (france.language, france.western) == ("und", False)
    assert language_name("am") == "Amharic" and language_name("tlh") is None


def test_typo_like_values_are_not_registered() -> None:
    reg = CultureRegistry.from_package()
    before = reg.ids()
    for value in ("klingon", "Chinese!", "en glish", "12", ""):
        assert reg.register_code(value) is None
    assert reg.ids() == before
    assert reg.register_code("India", country=True) is None  # countries: codes only


def test_exact_id_beats_a_case_insensitive_alias(caplog: pytest.LogCaptureFixture) -> None:
    reg = CultureRegistry.from_package()
    with caplog.at_level(logging.WARNING, logger="culturekb.kb.cultures"):
        assert reg.register_code("bn").id == "BN"  # type: ignore[union-attr]  # as before: Brunei ...
        reg.register_code("bn")
    assert len(caplog.records) == 1 and "not the language Bengali" in caplog.records[0].getMessage()
    reg.declare(Culture(id="tl", name="Tagalog", language="tl"))
    assert reg.resolve("tl").name == "Tagalog" and reg.resolve("TL").name == "Timor-Leste"


def test_resolve_stays_strict() -> None:
    reg = CultureRegistry.from_package()
    with pytest.raises(ConfigError, match="unknown culture 'de'.*cultures file"):
        reg.resolve("de")
    assert "de" not in reg


def test_loaders_register_new_codes_and_reject_typos(tmp_path: Path) -> None:
    rows = [{"id": f"a{i}::{c}", "culture": c, "label": "awe"} for i, c in enumerate(["de", "am", "pt-BR", "en"])]
    p = tmp_path / "s.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    res = load_samples_jsonl(p, cultures=["de", "Amharic", "pt-br"])
    assert [s.culture for s in res.samples] == ["de", "am", "pt-BR"]
    assert resolve_culture("German") == "de"  # registered in the process registry the loader used
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "x", "culture": "Chinese!", "label": "awe"}) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"line 1, field 'culture': unknown culture 'Chinese!'.*BCP-47 'pt-BR'"):
        load_samples_jsonl(bad)


# -- cultures files ----------------------------------------------------------------------------------------------
_TOML = """
[[cultures]]
id = "xx-YY"
name = "Xanadu"
aliases = ["xanadu", "xan"]
language = "xx"
western = true

[[cultures]]
id = "en"
aliases = ["anglo"]
language = "en"
western = true
"""


def test_cultures_file_toml_list_and_json_tables(tmp_path: Path) -> None:
    toml = tmp_path / "c.toml"
    toml.write_text(_TOML, encoding="utf-8")
    xanadu, english = load_cultures_file(toml)
    assert xanadu == Culture(id="xx-YY", name="Xanadu", language="xx", western=True, aliases=("xanadu", "xan"))
    reg = CultureRegistry.from_package()
    declare_cultures([xanadu, english], reg)
    assert reg.resolve("XAN").id == "xx-YY"
    assert reg.resolve("anglo").id == "en" and reg.resolve("english").id == "en"  # aliases added, old ones kept
    keyed = tmp_path / "c.json"
    keyed.write_text(json.dumps({"cultures": {"am": {"name": "Amharic (Ethiopia)"}, "de": {"western": True}}}),
                     encoding="utf-8")
    am, de = load_cultures_file(keyed)
    assert (am.name, am.language, de.name, de.western) == ("Amharic (Ethiopia)", "am", "German", True)
    top = tmp_path / "top.json"
    top.write_text(json.dumps({"_about": "a note", "SG": {"name": "Singapura", "language": "ms"}}), encoding="utf-8")
    assert load_cultures_file(top) == [Culture(id="SG", name="Singapura", language="ms")]


@pytest.mark.parametrize(
    ("content", "message"),
    [('{"cultures": [{"id": "de", "colour": "red"}]}', r"entry 1: unknown key\(s\) \['colour'\]"),
     ('{"cultures": [{"id": "FR"}]}', "entry 1: give 'language' for 'FR'"),
     ('{"cultures": [{"id": "has space", "language": "en"}]}', "'id' must be a code"),
     ('{"cultures": [{"id": "de", "western": "yes"}]}', "'western' must be true or false"),
     ('{"cultures": [{"id": "de", "aliases": "deutsch"}]}', "'aliases' must be a list"),
     ('{"cultures": 3}', "must be a list of entries or a table"),
     ('{"cultures": []}', "describes no culture"),
     ("[1, 2]", "expected an object"),
     ("{not json", "invalid JSON")],
)
def test_cultures_file_errors_name_the_entry_and_the_fix(tmp_path: Path, content: str, message: str) -> None:
    p = tmp_path / "bad.json"
    p.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        load_cultures_file(p)


def test_missing_cultures_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_cultures_file(tmp_path / "nope.toml")


# -- the manifest keeps the cultures ------------------------------------------------------------------------------
def _tuple(culture: str) -> KnowledgeTuple:
    return KnowledgeTuple(concept="moon", culture=culture, label="awe", distribution={"awe": 1.0}, support=2)


def test_manifest_keeps_the_cultures_and_a_reload_resolves_them(tmp_path: Path) -> None:
    declare_cultures([Culture(id="xx-YY", name="Xanadu", language="xx", western=True, aliases=("xanadu",))])
    default_registry().register_code("de")
    kb = KnowledgeBase([_tuple("xx-YY"), _tuple("de"), _tuple("en")])
    kb.save(tmp_path / "kb")
    manifest = json.loads((tmp_path / "kb" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["culture_details"]["xx-YY"] == {"id": "xx-YY", "name": "Xanadu", "language": "xx",
                                                    "western": True, "aliases": ["xanadu"]}
    assert manifest["culture_details"]["de"]["name"] == "German"
    assert manifest["culture_details"]["en"]["western"] is True
    reset_default_registry()  # a new process: neither the file nor the data
    with pytest.raises(ConfigError):
        resolve_culture("xanadu")
    loaded = KnowledgeBase.load(tmp_path / "kb")
    assert loaded.culture("Xanadu").id == "xx-YY" and loaded.culture("German").language == "de"
    assert loaded.culture_details["xx-YY"].western is True
    assert "xx-YY" not in default_registry()  # reading a KB does not change the process registry
    again = loaded.replace(loaded.tuples)
    assert again.manifest().culture_details == loaded.manifest().culture_details


def test_manifest_without_culture_details_still_loads(tmp_path: Path) -> None:
    KnowledgeBase([_tuple("en")]).save(tmp_path / "kb")
    path = tmp_path / "kb" / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    del manifest["culture_details"]  # a KB written before the field existed (and before the manifest was sealed)
    del manifest["manifest_digest"]
    old = KnowledgeBase([_tuple("en")])
    old._legacy_version = True  # its version hashed tuples, scheme and prior only
    manifest["kb_version"] = old.version
    path.write_text(json.dumps(manifest), encoding="utf-8")
    loaded = KnowledgeBase.load(tmp_path / "kb")
    assert loaded.culture("English").id == "en"


def test_a_manifest_whose_digest_was_removed_is_named_not_the_tuples(tmp_path: Path) -> None:
    """Removing the seal of a sealed manifest (issue 24) is blamed on manifest.json, not on tuples.jsonl."""
    KnowledgeBase([_tuple("en")]).save(tmp_path / "kb")
    path = tmp_path / "kb" / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    del manifest["manifest_digest"]
    path.write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(DataError) as info:
        KnowledgeBase.load(tmp_path / "kb")
    assert str(info.value).startswith(f"{path}: its manifest_digest was removed"), info.value
    assert "tuples" not in str(info.value) and "Restore manifest.json" in str(info.value)
