"""The knowledge-injection service: selection per mode, budget, rendering, provenance, and one block for every
caller (Augmenter, Cedar and RICE-VL cue paths, the three harness adapters, the HTTP route)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from culturekb.errors import ConfigError
from culturekb.inference.augmenter import Augmenter
from culturekb.inference.injection import (
    CUES,
    HARNESS,
    KNOWLEDGE,
    REGIONAL_CUES,
    BlockTemplate,
    Budget,
    KnowledgeRequest,
    KnowledgeService,
)
from culturekb.kb import KnowledgeBase, KnowledgeTuple, Sample
from culturekb.retrieval.index import build_index
from culturekb.retrieval.retriever import Match, Retriever, open_retriever


def _t(concept: str, culture: str, dist: dict[str, float], support: int = 4,
       rationales: tuple[str, ...] = ("a reason",), status: str = "accepted") -> KnowledgeTuple:
    return KnowledgeTuple(concept=concept, culture=culture, label=max(dist, key=dist.__getitem__), distribution=dist,
                          support=support, rationales=list(rationales), status=status)  # type: ignore[arg-type]


TUPLES = [
    _t("full moon", "zh", {"sadness": 0.6, "contentment": 0.4}, 5, ("满月让人思念远方的亲人", "月圆人团圆")),
    _t("bamboo", "zh", {"contentment": 0.7, "awe": 0.3}, rationales=("竹子象征气节与宁静",)),
    _t("crane", "zh", {"awe": 0.8, "contentment": 0.2}),
    _t("skull", "zh", {"fear": 0.9, "sadness": 0.1}, status="rejected"),
    _t("full moon", "en", {"fear": 0.5, "awe": 0.3, "contentment": 0.2}, rationales=("werewolves and night", "cold")),
    _t("ocean", "en", {"contentment": 0.8, "awe": 0.2}, 6, ("calm blue water",)),
    _t("bamboo", "en", {"amusement": 0.6, "contentment": 0.4}, rationales=("pandas eat it, funny",)),
    _t("storm", "en", {"fear": 0.7, "excitement": 0.3}, 9, ("a storm at sea is frightening",)),
    _t("skull", "en", {"fear": 0.9, "sadness": 0.1}, status="rejected"),
    _t("lantern", "zh", {"contentment": 0.5, "awe": 0.5}, 2, ("灯笼让人想起节日",), status="pending"),
    _t("crane", "en", {"awe": 0.8, "contentment": 0.2}, 10, ("cranes fly high",), status="approved"),
]
CONCEPTS = ["full moon", "sea", "bamboo grove", "skull", "spaceship"]
"""Already normalised (the benchmark paths normalise their concepts): exact, semantic, semantic, rejected, none."""


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory: pytest.TempPathFactory, default_embedder: Any) -> Path:
    kb = KnowledgeBase(TUPLES, build_config={"cultures": ["en", "zh"]},
                       extra_counts={"label_prior": {"en": {"fear": 3, "awe": 1}, "zh": {"contentment": 2}}})
    path = tmp_path_factory.mktemp("injection") / "kb"
    kb.save(path)
    build_index(kb, default_embedder, "faiss")
    return path


@pytest.fixture(scope="module")
def retriever(kb_dir: Path, default_embedder: Any) -> Retriever:
    return open_retriever(KnowledgeBase.load(kb_dir), default_embedder, backend="faiss")


@pytest.fixture(scope="module")
def service(retriever: Retriever) -> KnowledgeService:
    return KnowledgeService(retriever)


# -- the service on its own -------------------------------------------------------------------------------------
def test_know_block_and_provenance(service: KnowledgeService) -> None:
    b = service.inject(CONCEPTS, "zh")
    assert b.status == "matched" and b.language == "zh" and b.kb_version == service.kb_version
    assert b.tuple_ids == ["zh::full moon", "zh::bamboo"]  # skull was rejected by a reviewer: never served
    assert [m.kind for m in b.matches] == ["exact", "semantic"] and b.scores[0] == 1.0 > b.scores[1]
    assert b.text.splitlines() == [
        "- full moon：多为悲伤 (3/5), 满足 (2/5)；悲伤占比的95%置信区间为23-88%。满月让人思念远方的亲人 月圆人团圆",
        "- bamboo：多为满足 (3/4), 敬畏 (1/4)；满足占比的95%置信区间为30-95%。竹子象征气节与宁静",
    ]
    p = b.provenance()
    assert p["template_id"].startswith("knowledge_item.zh@") and len(p["template_sha"]) == 64
    assert p["tuples"][1] == {"id": "zh::bamboo", "query": "bamboo grove", "kind": "semantic",
                              "score": round(b.scores[1], 6), "review": "accepted"}
    assert p["status_filter"] == "all" and b.unreviewed == []
    assert p["scope"] == ["zh"] and p["concepts"] == CONCEPTS and p["mode"] == "know"


def test_modes_and_statuses(service: KnowledgeService) -> None:
    orig = service.inject(CONCEPTS, "en", mode="orig")
    assert orig.text == "" and orig.status == "not-used" and orig.template_id.startswith("knowledge_item.en@")
    assert service.inject([], "en").status == "no-concepts"
    assert service.inject(["spaceship"], "en").status == "no-match"
    cross = service.inject(CONCEPTS, "zh", mode="cross-culture-know")
    assert {t.culture for t in cross.tuples} == {"en"} and cross.scope == ("en",)
    r1 = service.inject(CONCEPTS, "zh", mode="random-know", seed=4, key="item-1")
    assert r1.tuple_ids == service.inject(CONCEPTS, "zh", mode="random-know", seed=4, key="item-1").tuple_ids
    # one per match; the rejected skull is hidden by the retriever, so it is not a match either
    assert len(r1.tuples) == 2 and all(t.culture == "zh" for t in r1.tuples)
    assert "zh::skull" not in r1.tuple_ids  # rejected tuples are not drawn either
    with pytest.raises(ConfigError, match="not in this KB"):
        service.inject(CONCEPTS, "klingon")
    skipped = service.inject(CONCEPTS, "klingon", on_unknown_culture="skip")
    assert skipped.status == "culture-not-in-kb" and skipped.text == ""
    with pytest.raises(ConfigError, match="unknown mode"):
        service.inject(CONCEPTS, "en", mode="telepathy")
    with pytest.raises(ConfigError, match="mode 'know' only"):
        service.inject(CONCEPTS, "en", mode="random-know", scope=["zh"])


def test_budget_rank_and_characters(service: KnowledgeService) -> None:
    concepts = ["bamboo grove", "sea", "full moon", "storm"]
    by_score = service.inject(concepts, "en", budget=Budget(max_tuples=3))
    assert [m.kind for m in by_score.matches] == ["exact", "exact", "semantic"]
    salience = service.inject(concepts, "en", budget=Budget(max_tuples=3, rank="salience"))
    assert salience.tuple_ids == ["en::bamboo", "en::ocean", "en::full moon"]
    tight = service.inject(concepts, "en", budget=Budget(max_rationales=0, max_chars=90))
    assert len(tight.text) <= 90 and len(tight.text.splitlines()) == len(tight.matches) >= 1
    assert all(line.endswith("%.") for line in tight.text.splitlines())  # whole lines, no rationale
    # one match per tuple: the best one, at its first position
    dup = service.inject(["moonlight", "full moon"], "en", budget=Budget(rank="salience"))
    assert dup.tuple_ids == ["en::full moon"] and dup.matches[0].kind == "exact"
    for bad in ({"max_tuples": 0}, {"max_chars": 10}, {"rank": "random"}):
        with pytest.raises(ConfigError, match="invalid knowledge budget"):
            Budget(**bad)  # type: ignore[arg-type]


def test_frames_languages_and_template_checks(service: KnowledgeService, tmp_path: Path) -> None:
    harness = service.inject(CONCEPTS, "en", template=HARNESS)
    assert harness.text.startswith("Notes from the annotations of people of the English-speaking culture")
    assert harness.template_id.startswith("harness_knowledge.en@") and "+knowledge_item.en@" in harness.template_id
    cues = service.inject(CONCEPTS, "zh", template=CUES, language="en")
    assert cues.language == "en" and cues.text.startswith("Cultural cues for people from the Chinese culture")
    assert "- full moon -> sadness (60% of 5 examples). 满月让人思念远方的亲人" in cues.text
    assert "月圆人团圆" not in cues.text  # {rationale} is the first one only
    zh = service.inject(CONCEPTS, "zh", template=CUES)  # the culture's language: every part exists in Chinese
    assert zh.language == "zh" and zh.text.startswith("中华文化背景人群的文化线索")
    assert "- full moon -> 悲伤（5个例子中占60%）。满月让人思念远方的亲人" in zh.text
    # one part missing in a language (no Chinese regional_cues): the whole block in English
    mixed = service.inject(CONCEPTS, "zh", template=BlockTemplate("knowledge_item", "regional_cues"))
    assert mixed.language == "en" and mixed.template_id.startswith("regional_cues.en@")
    regional = service.inject(CONCEPTS, "en", template=REGIONAL_CUES, scope=["zh", "en"])
    assert [line for line in regional.text.splitlines() if line.startswith("Notes on")] == \
        ["Notes on Chinese:", "Notes on English:"]  # one note per source culture, named by the registry
    frame = tmp_path / "frame.txt"
    frame.write_text("For {culture_id} ({culture}):\n{items}\n", encoding="utf-8")
    mine = service.inject(["storm"], "en", template=BlockTemplate("cue_item", frame))
    assert mine.text == "For en (English-speaking):\n- storm -> fear (70% of 9 examples). a storm at sea is frightening"
    no_items = tmp_path / "noitems.txt"
    no_items.write_text("Notes for {culture}.\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="no \\{items\\}"):
        service.inject(["storm"], "en", template=BlockTemplate("cue_item", no_items))
    with pytest.raises(ConfigError, match="frame_names"):
        BlockTemplate("cue_item", "cues", frame_names="nobody")  # type: ignore[arg-type]


def test_render_given_matches_and_batch(service: KnowledgeService, retriever: Retriever) -> None:
    storm = next(t for t in retriever.kb.tuples if t.id == "en::storm")
    fallback = service.render([Match("", storm, 0.0, "exact")], "en", template=CUES, status="fallback")
    assert fallback.status == "fallback" and fallback.tuple_ids == ["en::storm"]
    requests = [KnowledgeRequest(CONCEPTS, "zh"), KnowledgeRequest(CONCEPTS, "en", mode="cross-culture-know"),
                KnowledgeRequest(["storm"], "en", language="zh")]
    batch = service.inject_many(requests)
    assert [b.text for b in batch] == [service.inject(r.concepts, r.culture, mode=r.mode, language=r.language).text
                                       for r in requests]
    assert batch[2].language == "zh" and "恐惧" in batch[2].text  # labels follow the block's language


# -- one block for every caller -------------------------------------------------------------------------------
_API_KEYS = ("kb_version", "culture", "mode", "status", "status_filter", "language", "template_id", "template_sha",
             "concepts", "tuples")


def _api_provenance(body: dict[str, Any]) -> dict[str, Any]:
    return {"kb_version": body["kb_version"], "culture": body["culture"], "mode": body["mode"],
            "status": body["status"], "status_filter": body["status_filter"], "language": body["language"],
            "template_id": body["template_id"], "template_sha": body["template_sha"], "concepts": body["concepts"],
            "tuples": [{"id": t["id"], "query": m["query"], "kind": m["kind"], "score": m["score"],
                        "review": m["review"]} for t, m in zip(body["tuples"], body["matches"], strict=True)]}


def _lmms_eval(kb_dir: Path, culture: str, version: str, concepts: list[str] = CONCEPTS,
               **options: Any) -> tuple[str, Any]:
    pytest.importorskip("lmms_eval")
    import sys
    import types

    from lmms_eval.api.instance import Instance
    from lmms_eval.api.model import lmms
    from lmms_eval.models import MODEL_REGISTRY_V2
    from lmms_eval.models.registry_v2 import ModelManifest

    from culturekb.inference.adapters.lmms_eval import CultureKBSimple

    class Echo(lmms):  # type: ignore[misc]
        is_simple = True

        def __init__(self, **kwargs: Any) -> None:
            super().__init__()

        def generate_until(self, requests: list[Any]) -> list[str]:
            return [r.args[0] for r in requests]

        def generate_until_multi_round(self, requests: list[Any]) -> list[str]:
            return self.generate_until(requests)

        def loglikelihood(self, requests: list[Any]) -> list[tuple[float, bool]]:
            return [(0.0, False)] * len(requests)

    module = types.ModuleType("ckb_same_block_models")
    module.Echo = Echo  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    manifest = ModelManifest("ckb_same_block_echo", simple_class_path=f"{module.__name__}.Echo")
    MODEL_REGISTRY_V2.register_manifest(manifest, overwrite=True)
    model = CultureKBSimple(inner_model="ckb_same_block_echo", kb=str(kb_dir), kb_version=version, template="none",
                            **options)
    model.task_dict = {"toy": {"test": [{"culture": culture, "concepts": concepts}]}}
    request = Instance("generate_until", ("What do you feel?", {}, None, 0, "toy", "test"), idx=0,
                       metadata={"task": "toy", "doc_id": 0, "repeats": 1})
    [context] = model.generate_until([request])
    return context, model.injections[("toy", "test", 0)].knowledge


def _vlmevalkit(kb_dir: Path, culture: str, version: str, concepts: list[str] = CONCEPTS,
                **options: Any) -> tuple[str, Any]:
    pytest.importorskip("vlmeval")
    from vlmeval.vlm.base import BaseModel

    from culturekb.inference.adapters.vlmevalkit import CultureKBVLM

    class Custom(BaseModel):  # type: ignore[misc]
        def use_custom_prompt(self, dataset: str) -> bool:
            return True

        def build_prompt(self, line: Any, dataset: str | None = None) -> list[dict[str, str]]:
            return [{"type": "text", "value": str(line["question"])}]

        def generate_inner(self, message: Any, dataset: str | None = None) -> str:
            return "A"

    wrapped = CultureKBVLM(Custom(), kb=kb_dir, kb_version=version, template=None, **options)
    line = {"index": 7, "question": "What do you feel?", "culture": culture, "concepts": "; ".join(concepts)}
    message = wrapped.build_prompt(line, dataset="toy")
    return message[0]["value"], wrapped.injections[("toy", "7")].knowledge


def _inspect_ai(kb_dir: Path, culture: str, version: str, concepts: list[str] = CONCEPTS,
                **options: Any) -> tuple[str, dict[str, Any]]:
    pytest.importorskip("inspect_ai")
    from inspect_ai.model import ChatMessageUser, ModelName
    from inspect_ai.solver import TaskState

    from culturekb.inference.adapters.inspect_ai import STORE_KEY, culturekb_knowledge

    solve = culturekb_knowledge(kb=str(kb_dir), template=None, kb_version=version, **options)
    question = "What do you feel?"
    state = TaskState(ModelName("mockllm/model"), "s1", 1, question, [ChatMessageUser(content=question)],
                      metadata={"culture": culture, "concepts": concepts})

    async def generate(state: TaskState, **kwargs: Any) -> TaskState:
        return state

    state = asyncio.run(solve(state, generate))  # type: ignore[arg-type]
    return state.messages[0].text, state.store.get(STORE_KEY)["provenance"]


@pytest.mark.slow
@pytest.mark.parametrize("culture", ["en", "zh"])
def test_same_inputs_give_the_same_block_through_every_caller(kb_dir: Path, retriever: Retriever,
                                                               default_embedder: Any, culture: str) -> None:
    from PIL import Image, ImageFile

    from culturekb.evals._cues import cue_block_for
    from culturekb.evals.cedar import CedarPredictor
    from culturekb.evals.ricevl import Region, RiceVLVQARunner
    from culturekb.text.concepts import PrecomputedConcepts

    pil = (Image.MAX_IMAGE_PIXELS, ImageFile.LOAD_TRUNCATED_IMAGES)  # the harnesses change these; put them back
    ref = KnowledgeService(retriever).inject(CONCEPTS, culture)
    assert ref.status == "matched" and {m.kind for m in ref.matches} == {"exact", "semantic"} and ref.text
    expected = ref.provenance()
    version = retriever.kb.version
    blocks: dict[str, tuple[str, dict[str, Any]]] = {}

    aug = Augmenter(retriever).augment(culture=culture, concepts=CONCEPTS)
    blocks["augmenter"] = (aug.block, aug.knowledge.provenance())
    sample = Sample(id="item-1", culture=culture, text="What do you feel?", question="Which emotion?",
                    concepts=CONCEPTS, label="x", metadata={"format": "qa"})
    cedar = CedarPredictor("artemis9", retriever, concept_extractor=PrecomputedConcepts(), cue_template=KNOWLEDGE,
                           cue_budget=Budget())
    [(block, status)] = cedar.cue_blocks([sample], [CONCEPTS], [ref.language])
    blocks["cedar"] = (block.text, block.provenance())
    [pred] = cedar.predict([sample], "know")  # the kb-prior Cedar answer records the same tuples and template
    assert pred.tuples_used == ref.tuple_ids and pred.template_id == ref.template_id and status == "matched"
    block, _ = cue_block_for(CONCEPTS, culture, retriever, language=ref.language, template=KNOWLEDGE, budget=Budget())
    blocks["cedar cue_block_for"] = (block.text, block.provenance())
    if culture == "en":  # RICE-VL prompts are English only, so its blocks are always English
        runner = RiceVLVQARunner([sample], retriever=retriever, region=Region("test", ("en", "zh")),
                                 cue_scope="country", fallback_cues=0, concept_extractor=PrecomputedConcepts(),
                                 cue_template=KNOWLEDGE, cue_budget=Budget(), setting_names=["kb-cues"], progress=False)
        [(block, _)] = runner.cue_blocks([sample])
        blocks["ricevl"] = (block.text, block.provenance())
    try:
        for name, adapter in (("lmms-eval", _lmms_eval), ("vlmevalkit", _vlmevalkit), ("inspect_ai", _inspect_ai)):
            prompt, provenance = adapter(kb_dir, culture, version)
            block_text, _, question = prompt.rpartition("\n")  # the block, then the harness's own text
            assert question == "What do you feel?", name
            blocks[name] = (block_text, provenance if isinstance(provenance, dict) else provenance.provenance())
    finally:
        Image.MAX_IMAGE_PIXELS, ImageFile.LOAD_TRUNCATED_IMAGES = pil

    from fastapi.testclient import TestClient

    from culturekb.api import create_app

    with TestClient(create_app(kb_dir, embedder=default_embedder)) as client:
        body = client.post("/v1/augment", json={"culture": culture, "concepts": CONCEPTS}).json()
    assert _api_provenance(body) == {k: expected[k] for k in _API_KEYS}
    assert body["provenance"] == expected
    assert body["block"] == ref.text

    assert len(blocks) == (7 if culture == "en" else 6)
    for name, (text, provenance) in blocks.items():
        assert text == ref.text, name
        assert provenance == expected, name


# -- review status: the filter, the unreviewed marker, the distribution -----------------------------------------
LANTERN = ["full moon", "lantern"]
"""zh: an accepted tuple (full moon) and a pending one (lantern) that a judge disagreed with."""


def test_pending_tuples_are_marked_unreviewed_in_every_language(service: KnowledgeService) -> None:
    from culturekb.text.prompts import PROMPT_LANGUAGES

    zh = service.inject(LANTERN, "zh")
    assert zh.tuple_ids == ["zh::full moon", "zh::lantern"] and zh.unreviewed == ["zh::lantern"]
    moon, lantern = zh.text.splitlines()
    assert lantern.startswith("- lantern（未经审核）：多为满足 (1/2), 敬畏 (1/2)（并列：满足、敬畏；"
                              "取该文化中最常见的满足）；") and "未经审核" not in moon
    assert [t["review"] for t in zh.provenance()["tuples"]] == ["accepted", "pending"]
    en = service.inject(LANTERN, "zh", language="en")
    assert en.text.splitlines()[1].startswith(
        "- lantern (unreviewed): mostly contentment (1/2), awe (1/2) (tied: contentment, awe; contentment chosen as "
        "the most frequent in the culture); 95% CI for contentment: 9-91%.")
    markers = {"ar": "(غير مُراجَع)", "hi": "(समीक्षा बाकी)", "ja": "（未審査）", "es": "(sin revisar)",
               "sw": "(haijakaguliwa)"}
    for language in PROMPT_LANGUAGES:
        lines = service.inject(LANTERN, "zh", language=language, template=HARNESS).text.splitlines()
        assert lines[-1].startswith("- lantern") and lines[-2].startswith("- full moon")
        if language in markers:
            assert markers[language] in lines[-1] and markers[language] not in lines[-2], language
    approved = service.inject(["crane"], "en")  # a person approved it: reviewed, no marker
    assert approved.text.startswith("- crane: mostly awe (8/10), contentment (2/10); 95% CI for awe: 49-94%.")
    assert approved.provenance()["tuples"][0]["review"] == "approved"


def test_status_filter_per_service_and_per_call(service: KnowledgeService, retriever: Retriever) -> None:
    accepted = KnowledgeService(retriever, status="accepted")
    assert accepted.status == "accepted" and service.status == "all"
    reviewed = accepted.inject(LANTERN, "zh")
    assert reviewed.tuple_ids == ["zh::full moon"] and reviewed.provenance()["status_filter"] == "accepted"
    assert "未经审核" not in reviewed.text
    only_pending = service.inject(LANTERN, "zh", status_filter="pending")
    assert only_pending.tuple_ids == ["zh::lantern"] and only_pending.status_filter == "pending"
    assert service.inject(LANTERN, "zh").tuple_ids == ["zh::full moon", "zh::lantern"]  # the service's own again
    assert accepted.inject(LANTERN, "zh", status_filter="all").tuple_ids == ["zh::full moon", "zh::lantern"]
    assert accepted.inject(["crane"], "en").tuple_ids == ["en::crane"]  # approved by a person counts as reviewed
    # random-know draws from what the filter serves
    drawn = {tid for seed in range(12) for tid in
             service.inject(["x"], "zh", mode="random-know", seed=seed, status_filter="pending").tuple_ids}
    assert drawn == {"zh::lantern"}
    assert service.retriever_for("pending") is service.retriever_for("pending")  # made once per filter
    for bad in ("reviewed", "ALL", ""):
        with pytest.raises(ConfigError, match="unknown status filter"):
            service.inject(LANTERN, "zh", status_filter=bad)
        with pytest.raises(ConfigError, match="unknown status filter"):
            KnowledgeService(retriever, status=bad)  # type: ignore[arg-type]


def test_augmenter_status(retriever: Retriever) -> None:
    aug = Augmenter(retriever, status="accepted")
    assert aug.status == "accepted" and aug.retriever.tuple_filter.status == "accepted"
    assert aug.augment(culture="zh", concepts=LANTERN).tuple_ids == ["zh::full moon"]
    every = aug.augment(culture="zh", concepts=LANTERN, status="all")
    assert every.tuple_ids == ["zh::full moon", "zh::lantern"] and every.status_filter == "all"
    assert Augmenter(retriever).status == "all"
    batch = Augmenter(retriever).augment_many([Sample(id="a", culture="zh", concepts=LANTERN)], status="pending")
    assert batch[0].tuple_ids == ["zh::lantern"]
    with pytest.raises(ConfigError, match="unknown status filter"):
        aug.augment(culture="zh", concepts=LANTERN, status="approved")


def test_cues_take_a_status(retriever: Retriever) -> None:
    from culturekb.inference.injection import cues

    assert cues(LANTERN, "zh", retriever).tuple_ids == ["zh::full moon", "zh::lantern"]
    assert cues(LANTERN, "zh", retriever, status="accepted").tuple_ids == ["zh::full moon"]


def test_evidence_numbers(retriever: Retriever) -> None:
    from culturekb.inference.evidence import format_interval, tuple_evidence
    from culturekb.kb.distribution import wilson_interval

    storm = next(t for t in retriever.kb.tuples if t.id == "en::storm")
    e = tuple_evidence(storm, retriever.kb.scheme)
    assert e.counts == {"fear": 6, "excitement": 3} and e.summary == "fear (6/9), excitement (3/9)"
    assert e.interval == wilson_interval(6, 9) and e.interval_text == format_interval(e.interval) == "35-88%"
    lo, hi = e.interval
    assert 0.35 < lo < 0.36 and 0.87 < hi < 0.88  # Wilson, by hand: (p + z²/2n ± z√(p(1-p)/n + z²/4n²)) / (1 + z²/n)
    assert tuple_evidence(storm, retriever.kb.scheme, "zh").summary == "恐惧 (6/9), 兴奋 (3/9)"
    assert not e.unreviewed and e.to_dict()["interval"] == [round(lo, 4), round(hi, 4)]
    lantern = next(t for t in retriever.kb.tuples if t.id == "zh::lantern")
    assert tuple_evidence(lantern).unreviewed and tuple_evidence(lantern).review == "pending"


@pytest.mark.slow
@pytest.mark.parametrize("adapter", ["lmms-eval", "vlmevalkit", "inspect_ai"])
def test_each_adapter_takes_a_status(kb_dir: Path, retriever: Retriever, adapter: str) -> None:
    from PIL import Image, ImageFile

    run = {"lmms-eval": _lmms_eval, "vlmevalkit": _vlmevalkit, "inspect_ai": _inspect_ai}[adapter]
    version = retriever.kb.version
    pil = (Image.MAX_IMAGE_PIXELS, ImageFile.LOAD_TRUNCATED_IMAGES)
    try:
        every, every_prov = run(kb_dir, "zh", version, LANTERN)
        reviewed, reviewed_prov = run(kb_dir, "zh", version, LANTERN, status="accepted")
        with pytest.raises(ConfigError, match="unknown status filter"):
            run(kb_dir, "zh", version, LANTERN, status="reviewed")
    finally:
        Image.MAX_IMAGE_PIXELS, ImageFile.LOAD_TRUNCATED_IMAGES = pil
    as_dict = [p if isinstance(p, dict) else p.provenance() for p in (every_prov, reviewed_prov)]
    assert "- lantern（未经审核）" in every and as_dict[0]["status_filter"] == "all"
    assert [t["review"] for t in as_dict[0]["tuples"]] == ["accepted", "pending"]
    assert "lantern" not in reviewed and "- full moon" in reviewed and as_dict[1]["status_filter"] == "accepted"
    assert [t["id"] for t in as_dict[1]["tuples"]] == ["zh::full moon"]


def test_cross_culture_on_a_one_culture_kb_warns_once_per_batch(default_embedder: Any,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    kb = KnowledgeBase([KnowledgeTuple(concept="storm", culture="en", label="fear", distribution={"fear": 1.0},
                                       support=3)])
    service = KnowledgeService(open_retriever(kb, default_embedder, backend="numpy"))
    requests = [KnowledgeRequest(["storm"], "en", "cross-culture-know", None, f"s{i}") for i in range(3)]
    with caplog.at_level("WARNING", logger="culturekb.inference.injection"):
        blocks = service.inject_many(requests)
    assert all(not b.tuples for b in blocks)
    warned = [r for r in caplog.records if "one culture only" in r.getMessage()]
    assert len(warned) == 1 and "3 request(s)" in warned[0].getMessage()
