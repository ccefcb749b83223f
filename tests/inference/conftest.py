import pytest
from PIL import Image, ImageFile

from culturekb.inference.augmenter import Augmenter
from culturekb.kb import KnowledgeBase, KnowledgeTuple
from culturekb.retrieval.retriever import open_retriever

# importing a harness changes PIL's process-wide settings (lmms-eval: LOAD_TRUNCATED_IMAGES; VLMEvalKit:
# MAX_IMAGE_PIXELS). pytest imports this conftest before any test module of this folder, so these are PIL's
# settings before any harness: the adapter tests call `restore_pil_globals` right after importing theirs, and the
# fixture below puts them back after each module, so the rest of the suite sees PIL's defaults.
_PIL_GLOBALS = (Image.MAX_IMAGE_PIXELS, ImageFile.LOAD_TRUNCATED_IMAGES)


def restore_pil_globals() -> None:
    Image.MAX_IMAGE_PIXELS, ImageFile.LOAD_TRUNCATED_IMAGES = _PIL_GLOBALS


@pytest.fixture(scope="module", autouse=True)
def pil_globals_restored():
    yield
    restore_pil_globals()


def _t(concept, culture, dist, support=4, rationales=("a reason",)):
    label = max(dist, key=dist.get)
    return KnowledgeTuple(concept=concept, culture=culture, label=label, distribution=dist, support=support,
                          rationales=list(rationales))


@pytest.fixture(scope="session")
def small_kb():
    tuples = [
        _t("bamboo", "zh", {"contentment": 0.7, "awe": 0.3}, rationales=["竹子象征气节与宁静", "竹林让人平静"]),
        _t("full moon", "zh", {"sadness": 0.6, "contentment": 0.4}, rationales=["满月让人思念远方的亲人"]),
        _t("crane", "zh", {"awe": 0.8, "contentment": 0.2}),
        _t("skull", "zh", {"fear": 0.9, "sadness": 0.1}),
        _t("bamboo", "en", {"amusement": 0.6, "contentment": 0.4}, rationales=["pandas eat it, funny"]),
        _t("full moon", "en", {"fear": 0.5, "awe": 0.3, "contentment": 0.2}, rationales=["werewolves and night"]),
        _t("storm", "en", {"fear": 0.7, "excitement": 0.3}, support=9),
    ]
    return KnowledgeBase(tuples, extra_counts={"label_prior": {"zh": {"contentment": 5, "awe": 2},
                                                               "en": {"sadness": 4, "fear": 1}}})


@pytest.fixture(scope="session")
def small_retriever(small_kb, default_embedder):
    return open_retriever(small_kb, default_embedder, backend="faiss")


@pytest.fixture
def augmenter(small_retriever):
    return Augmenter(small_retriever)
