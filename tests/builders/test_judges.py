from __future__ import annotations

import json
from typing import Any

import pytest

from culturekb.builders.base import Judge, JudgeInput
from culturekb.builders.judges import DIRECT_HIT_WEIGHT, LexiconJudge, LLMJudge, PrototypeJudge, make_judge
from culturekb.errors import ConfigError, ModelOutputError

SAD = JudgeInput(
    concept="wilted flower",
    culture="en",
    rationales=(
        "A wilted flower reminds viewers of loss and mourning.",
        "Fallen petals suggest grief for a life that has ended.",
    ),
    label="sadness",
)
FEAR = JudgeInput(
    concept="skeleton",
    culture="en",
    rationales=(
        "The skeleton is a menacing omen of death that fills viewers with dread.",
        "Its empty eye sockets are terrifying and threatening.",
    ),
    label="fear",
)
SAD_ZH = JudgeInput(
    concept="白菊花",
    culture="zh",
    rationales=("白菊花常用于葬礼，寄托对逝者的哀思，令人悲伤。", "看到白菊会想起离别和失去亲人的痛苦，令人难过。"),
    label="sadness",
)
FEAR_ZH = JudgeInput(concept="骷髅", culture="zh", rationales=("骷髅让人害怕，黑暗中的骷髅令人恐惧。",), label="fear")
AMUSED = JudgeInput(
    concept="clown", culture="en", rationales=("The clown's silly face is funny and makes people laugh.",),
    label="amusement",
)
NEUTRAL = JudgeInput(concept="chair", culture="en", rationales=("It is a chair.",), label="awe")
EMPTY = JudgeInput(concept="chair", culture="en", rationales=(), label="awe")


# ---------------------------------------------------------------------------------------------------- lexicon
def test_lexicon_judge_english_and_chinese() -> None:
    judge = LexiconJudge("artemis9")
    assert isinstance(judge, Judge)
    sad, fear, sad_zh, fear_zh, amused = judge.judge([SAD, FEAR, SAD_ZH, FEAR_ZH, AMUSED])
    assert (sad.label, sad.agrees) == ("sadness", True)
    assert (fear.label, fear.agrees) == ("fear", True)
    assert (sad_zh.label, sad_zh.agrees) == ("sadness", True)
    assert (fear_zh.label, fear_zh.agrees) == ("fear", True)
    assert (amused.label, amused.agrees) == ("amusement", True)
    assert "mourning" in sad.detail and "悲伤" in sad_zh.detail
    assert set(sad.scores) == set(judge.scheme.labels)
    assert sad.judge == judge.id


def test_lexicon_judge_disagreement_flags() -> None:
    wrong = JudgeInput(SAD.concept, SAD.culture, SAD.rationales, label="amusement")
    (v,) = LexiconJudge("artemis9").judge([wrong])
    assert v.label == "sadness" and v.agrees is False


def test_lexicon_judge_no_evidence() -> None:
    neutral, empty = LexiconJudge("artemis9").judge([NEUTRAL, EMPTY])
    for v in (neutral, empty):
        assert v.label is None and v.agrees is False and v.detail == "no lexicon evidence"


def test_lexicon_judge_direct_hits_weigh_double_and_negation() -> None:
    judge = LexiconJudge("artemis9")
    total, direct, _ = judge.scores(JudgeInput("x", "en", ("amused",), "amusement"))
    assert direct == {"amusement": DIRECT_HIT_WEIGHT}
    total, direct, _ = judge.scores(JudgeInput("x", "en", ("in awe",), "awe"))  # a multi-word synonym
    assert direct == {"awe": DIRECT_HIT_WEIGHT}
    (v,) = judge.judge([JudgeInput("x", "en", ("It is not sad and not frightening at all.",), "sadness")])
    assert v.label is None
    (v,) = judge.judge([JudgeInput("x", "zh", ("并不悲伤",), "sadness")])
    assert v.label is None


def test_lexicon_judge_maps_to_cedar14() -> None:
    judge = LexiconJudge("cedar14")
    (v,) = judge.judge([JudgeInput("x", "en", ("mourning",), "sadness")])
    # mourning -> sadness (Plutchik), mapped by plutchik8.json to 0.7 sadness + 0.3 pain
    assert v.label == "sadness"
    assert v.scores["sadness"] == pytest.approx(0.7) and v.scores["pain"] == pytest.approx(0.3)


def test_lexicon_judge_tie_break_and_scheme_without_mapping(caplog: pytest.LogCaptureFixture) -> None:
    from culturekb.kb.schemes import scheme_from_labels

    scheme = scheme_from_labels(["calm", "storm"], name="weather")
    with caplog.at_level("WARNING"):
        judge = LexiconJudge(scheme)
    assert "no plutchik8 -> weather mapping" in caplog.text
    (tie,) = judge.judge([JudgeInput("x", "en", ("A storm, then calm.",), "storm")])
    assert tie.scores == {"calm": DIRECT_HIT_WEIGHT, "storm": DIRECT_HIT_WEIGHT}
    assert tie.label == "calm"  # equal evidence: the label listed first in the scheme
    (win,) = judge.judge([JudgeInput("x", "en", ("A storm, then calm, then storms.",), "storm")])
    assert (win.label, win.agrees) == ("storm", True)


def test_lexicon_judge_language_choice() -> None:
    judge = LexiconJudge("artemis9", language_of=lambda c: "zh")
    (v,) = judge.judge([JudgeInput("x", "anything", ("令人恐惧",), "fear")])
    assert v.label == "fear"
    assert LexiconJudge("artemis9", language="en").id != LexiconJudge("artemis9").id
    with pytest.raises(ConfigError, match="unknown culture"):
        LexiconJudge("artemis9").judge([JudgeInput("x", "klingon", ("sad",), "sadness")])


# Written for these tests (by their author): rationales with no label word of the scheme, only EmoLex words in
# inflected forms, in the three languages whose EmoLex translation is packaged.
@pytest.mark.parametrize("culture, text, label, matched", [
    ("de", "Die Kinder feierten den Geburtstag mit Freunden im Garten.", "joy", "geburtstag"),
    ("es", "Lloramos en el funeral de mi abuelo, la muerte nos dejó solos.", "sadness", "funeral"),
    ("ru", "Ночью мы слышали выстрелы, взрывы и сирены.", "fear", "сирены"),
])
def test_lexicon_judge_reads_the_emolex_translations(culture: str, text: str, label: str, matched: str) -> None:
    from culturekb.demo import demo_dataset
    from culturekb.kb.schemes import load_scheme

    brighter = load_scheme(demo_dataset().scheme)  # Ekman's six and neutral, mapped from Plutchik-8 (plutchik8.json)
    judge = LexiconJudge(brighter, language_of=lambda c: c)
    total, direct, hits = judge.scores(JudgeInput("x", culture, (text,), label))
    assert not direct and matched in hits
    (v,) = judge.judge([JudgeInput("x", culture, (text,), label)])
    assert v.label == label, (v.scores, hits)
    assert "+de+es+ru" in judge.id  # verdicts cached before the translations were read are not reused


def test_emolex_stems_and_multiword_entries() -> None:
    from culturekb.builders._emolex import crude_stem, lexicon_hits

    assert crude_stem("tristes", "es") == crude_stem("triste", "es") == "trist"
    assert crude_stem("страха", "ru") == "страх" and crude_stem("страх", "ru") == "страх"
    hits = dict(lexicon_hits("мы праздновали день рождения".split(), "ru", set()))
    assert "день рождения" in hits  # a multi-word entry, stored under a code in the emoatlas file
    assert lexicon_hits("не боюсь".split(), "ru", {1}) == []  # a negated position counts nothing


def test_plutchik8_maps_onto_brighter7() -> None:
    from culturekb.demo import demo_dataset
    from culturekb.kb.schemes import get_scheme, load_scheme, map_distribution

    p8, brighter = get_scheme("plutchik8"), load_scheme(demo_dataset().scheme)
    table = p8.mapping_to("brighter7")
    assert set(table) == set(p8.labels)
    assert all(set(w) <= set(brighter.labels) and sum(w.values()) == pytest.approx(1.0) for w in table.values())
    assert map_distribution({"trust": 1.0, "fear": 1.0}, p8, brighter) == {
        "anger": 0.0, "disgust": 0.0, "fear": 1.0, "joy": 0.0, "sadness": 0.0, "surprise": 0.0, "neutral": 1.0}


# -------------------------------------------------------------------------------------------------- prototype
def test_prototype_judge(default_embedder: Any) -> None:
    judge = PrototypeJudge(default_embedder, "artemis9")
    assert isinstance(judge, Judge)
    sad, fear, amused, wrong, empty = judge.judge(
        [SAD, FEAR, AMUSED, JudgeInput(FEAR.concept, "en", FEAR.rationales, "contentment"), EMPTY]
    )
    assert (sad.label, sad.agrees) == ("sadness", True)
    assert (fear.label, fear.agrees) == ("fear", True)
    assert (amused.label, amused.agrees) == ("amusement", True)
    assert (wrong.label, wrong.agrees) == ("fear", False)
    assert empty.label is None and empty.agrees is False
    assert set(sad.scores) == set(judge.scheme.labels)
    assert max(sad.scores, key=sad.scores.__getitem__) == "sadness"
    assert judge.prototypes().shape == (9, default_embedder.dim)
    assert not (judge.prototypes("zh") == judge.prototypes("en")).all()  # translations averaged in for zh


def test_prototype_judge_batches_rationales(default_embedder: Any) -> None:
    calls: list[int] = []

    class Counting:
        id = default_embedder.id
        dim = default_embedder.dim

        def encode(self, texts: Any, batch_size: int = 64) -> Any:
            calls.append(len(texts))
            return default_embedder.encode(texts, batch_size=batch_size)

    judge = PrototypeJudge(Counting(), "artemis9")
    judge.judge([SAD, FEAR, AMUSED])
    judge.judge([SAD, FEAR])
    assert calls == [5, 18, 4]  # rationales, prototypes (9 descriptions + 9 names) once, rationales


# -------------------------------------------------------------------------------------------------------- LLM
def test_llm_judge_over_scripted_server(openai_server: Any) -> None:
    from culturekb.models.chat import OpenAICompatClient

    def responder(body: dict[str, Any]) -> str:
        prompt = body["messages"][0]["content"]
        if "skeleton" in prompt:
            return json.dumps({"emotion": "Fear", "reason": "death and dread"})
        return '```json\n{"emotion": "sad", "reason": "loss"}\n```'

    with openai_server(responder) as server:
        client = OpenAICompatClient("judge-model", base_url=server.base_url)
        judge = LLMJudge(client, "artemis9")
        assert isinstance(judge, Judge)
        wrong = JudgeInput(SAD.concept, "en", SAD.rationales, "awe")
        fear, sad, wrong_v, empty = judge.judge([FEAR, SAD, wrong, EMPTY])
        assert (fear.label, fear.agrees, fear.detail) == ("fear", True, "death and dread")
        assert (sad.label, sad.agrees) == ("sadness", True)  # a synonym goes through scheme.match
        assert (wrong_v.label, wrong_v.agrees) == ("sadness", False)
        assert empty.label is None and empty.agrees is False
        assert server.calls == 3  # the item without rationales is not sent
        prompt = next(b["messages"][0]["content"] for b in server.requests if "skeleton" in b["messages"][0]["content"])
    assert "- The skeleton is a menacing omen" in prompt
    assert "- something else" in prompt and "English" in prompt
    assert '{"emotion":' in prompt
    assert judge.id.startswith("llm-judge:openai:judge-model:judge.en@")


def test_llm_judge_retries_unknown_label_then_fails(openai_server: Any) -> None:
    from culturekb.models.chat import OpenAICompatClient

    with openai_server(['{"emotion": "nostalgia"}', '{"emotion": "awe", "reason": "vast"}']) as server:
        client = OpenAICompatClient("judge-model", base_url=server.base_url)
        (v,) = LLMJudge(client, "artemis9").judge([SAD])
        assert v.label == "awe" and v.agrees is False
        assert server.calls == 2
        assert "nostalgia" in server.requests[-1]["messages"][-1]["content"]
    with openai_server(["I think it is sad."]) as server:
        client = OpenAICompatClient("judge-model", base_url=server.base_url)
        with pytest.raises(ModelOutputError):
            LLMJudge(client, "artemis9", retries=1).judge([SAD])
        assert server.calls == 2


def test_make_judge(openai_server: Any, default_embedder: Any) -> None:
    assert isinstance(make_judge("lexicon", scheme="cedar14"), LexiconJudge)
    assert isinstance(make_judge("prototype", embedder=default_embedder), PrototypeJudge)
    with openai_server([json.dumps({"emotion": "fear", "reason": "r"})]) as server:
        judge = make_judge("openai:judge-model", base_url=server.base_url)
        assert isinstance(judge, LLMJudge)
        assert judge.judge([FEAR])[0].label == "fear"
    with pytest.raises(ConfigError, match="unknown judge"):
        make_judge("oracle")
