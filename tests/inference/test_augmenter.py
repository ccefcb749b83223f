import pytest

from culturekb.errors import ConfigError
from culturekb.inference.augmenter import Augmenter, Budget
from culturekb.kb import Sample


def _s(concepts, culture="zh", **kw):
    return Sample(id=kw.pop("id", "s1"), culture=culture, concepts=concepts, **kw)


def test_know_retrieves_target_culture_exact_then_semantic(augmenter):
    aug = augmenter.augment(_s(["bamboo grove", "full moon", "spaceship"]), mode="know")
    assert {t.id for t in aug.tuples} == {"zh::bamboo", "zh::full moon"}
    assert aug.culture == "zh"
    kinds = {m.tuple.concept: m.kind for m in aug.matches}
    assert kinds == {"full moon": "exact", "bamboo": "semantic"}
    assert aug.scores[0] == 1.0  # exact first
    # block in the culture's language: Chinese label names and the rationales
    assert "悲伤" in aug.block and "满月让人思念远方的亲人" in aug.block
    assert aug.tuple_ids == [t.id for t in aug.tuples]


def test_modes(augmenter):
    sample = _s(["bamboo", "full moon"])
    assert not augmenter.augment(sample, mode="orig")
    assert augmenter.augment(sample, mode="internal-know").block == ""
    cross = augmenter.augment(sample, mode="cross-culture-know")
    assert {t.culture for t in cross.tuples} == {"en"}
    r1 = augmenter.augment(sample, mode="random-know", seed=1)
    r2 = augmenter.augment(sample, mode="random-know", seed=1)
    assert r1.tuple_ids == r2.tuple_ids and all(t.culture == "zh" for t in r1.tuples)
    assert len(r1.tuples) == 2  # as many as know retrieved
    with pytest.raises(ConfigError, match="unknown mode"):
        augmenter.augment(sample, mode="telepathy")


def test_budget_and_dedup(small_retriever):
    aug = Augmenter(small_retriever, budget=Budget(max_tuples=1)).augment(_s(["full moon", "full moon", "bamboo"]))
    assert aug.tuple_ids == ["zh::full moon"]
    # a line is about 85 characters before its rationale ("- crane: mostly awe (3/4), contentment (1/4); 95% CI
    # for awe: 30-95%. ..."), so 100 characters hold one or two lines, never three
    tight = Augmenter(small_retriever, budget=Budget(max_tuples=5, max_rationales=1, max_chars=100))
    aug = tight.augment(_s(["full moon", "bamboo", "crane"]), language="en")
    assert len(aug.block) <= 100
    for line in aug.block.splitlines():  # whole lines only
        assert line.startswith("- ")
    assert len(aug.block.splitlines()) == len(aug.tuples) >= 1
    with pytest.raises(ConfigError):
        Budget(max_tuples=0)


def test_prompt_culture_concepts_form(augmenter):
    aug = augmenter.augment(prompt="What do you feel about the storm?", culture="English")
    assert aug.tuple_ids == ["en::storm"]
    assert aug.prompt.endswith("What do you feel about the storm?") and aug.prompt.startswith(aug.block)
    aug = augmenter.augment(culture="en", concepts=["bamboo"])
    assert aug.tuple_ids == ["en::bamboo"]
    with pytest.raises(ConfigError, match="not in this KB"):
        augmenter.augment(culture="ar", concepts=["bamboo"])
    with pytest.raises(ConfigError, match="needs a sample"):
        augmenter.augment(prompt="hi")


def test_non_leaky_concepts_come_from_title_and_style(augmenter):
    s = Sample(id="x", culture="zh", title="crane under the full moon", explanations=["a skull, scary"],
               metadata={"art_style": "Ukiyo_e"})
    concepts = augmenter.concepts_for([s])[0]
    assert "crane" in concepts and "full moon" in concepts
    assert "skull" not in concepts  # never the test explanations
    assert "ukiyo e" in concepts


def test_cross_culture_on_a_single_culture_kb_gives_no_knowledge(default_embedder):
    from culturekb.kb import KnowledgeBase, KnowledgeTuple
    from culturekb.retrieval.retriever import open_retriever

    kb = KnowledgeBase([KnowledgeTuple(concept="storm", culture="en", label="fear", distribution={"fear": 1.0},
                                       support=2)])
    aug = Augmenter(open_retriever(kb, default_embedder, backend="numpy"))
    assert aug.augment(_s(["storm"], culture="en"), mode="know").tuple_ids == ["en::storm"]
    assert aug.augment(_s(["storm"], culture="en"), mode="cross-culture-know").tuple_ids == []
