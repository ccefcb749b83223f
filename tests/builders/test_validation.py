import pytest

from culturekb.builders.validation import apply_verdicts, cohen_kappa
from culturekb.errors import ConfigError
from culturekb.kb.schema import JudgeVerdict, KnowledgeTuple


def _t(concept: str, label: str = "sadness") -> KnowledgeTuple:
    return KnowledgeTuple(concept=concept, culture="en", label=label, distribution={label: 1.0}, support=3,
                          rationales=["a grave in the rain"])


def _v(judge: str, label: str | None, truth: str = "sadness") -> JudgeVerdict:
    return JudgeVerdict(judge=judge, label=label, agrees=label == truth)


def test_kappa_by_hand():
    # 2x2 table: a=[x,x,y,y], b=[x,y,y,y]: p_o = 3/4; p_e = (2/4*1/4) + (2/4*3/4) = 0.5; kappa = 0.5
    assert cohen_kappa(["x", "x", "y", "y"], ["x", "y", "y", "y"]) == pytest.approx(0.5)
    assert cohen_kappa(["a", "b"], ["a", "b"]) == pytest.approx(1.0)
    assert cohen_kappa(["a", "b"], ["b", "a"]) == pytest.approx(-1.0)
    assert cohen_kappa([], []) is None
    assert cohen_kappa(["a", "a"], ["a", "a"]) == 1.0  # no chance of disagreement
    # None is a category of its own
    assert cohen_kappa([None, "a"], [None, "a"]) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        cohen_kappa(["a"], ["a", "b"])


@pytest.mark.parametrize(
    ("policy", "n_out", "statuses"),
    [("pending", 3, ["accepted", "pending", "pending"]), ("keep", 3, ["accepted"] * 3), ("drop", 1, ["accepted"])],
)
def test_flag_when_either_judge_disagrees(policy, n_out, statuses):
    tuples = [_t("grave"), _t("rain"), _t("clown")]
    verdicts = [
        [_v("j1", "sadness"), _v("j2", "sadness")],
        [_v("j1", "sadness"), _v("j2", "fear")],
        [_v("j1", "amusement"), _v("j2", None)],
    ]
    res = apply_verdicts(tuples, verdicts, policy)
    assert res.flagged == 2
    assert len(res.tuples) == n_out
    assert [t.status for t in res.tuples] == statuses
    assert res.tuples[0].flagged is False
    assert res.dropped == (2 if policy == "drop" else 0)
    # kappa over judge labels: j1=[s,s,a], j2=[s,f,None]
    assert res.kappa == pytest.approx(cohen_kappa(["sadness", "sadness", "amusement"], ["sadness", "fear", None]))


def test_unknown_policy():
    with pytest.raises(ConfigError, match="policy"):
        apply_verdicts([], [], "maybe")
