"""CoMMET: multi-turn theory-of-mind stories played as real chats (PAPERS.md section 5).

`load_story_turns` reads the StoryTurns JSONL format (`stories`); `CommetRunner` plays each story turn by turn,
choosing each turn's feedback from the judged previous answer (`runner`); answers are judged by a judge model
(`ModelAnswerJudge`) or offline (`OfflineAnswerJudge`, weaker; `judges`); `report` holds the metrics and tables.
"""

from culturekb.evals.commet.command import commet_options
from culturekb.evals.commet.judges import (
    AnswerJudge,
    JudgeRequest,
    ModelAnswerJudge,
    OfflineAnswerJudge,
    Verdict,
    normalise_answer,
    parse_verdict,
)
from culturekb.evals.commet.report import (
    commet_plots,
    commet_tables,
    feedback_accuracy,
    question_accuracy,
    score_commet,
    story_accuracy,
    turn_outcomes,
)
from culturekb.evals.commet.runner import COMMET_CUES, COMMET_SETTINGS, CommetRunner, StoryPrediction, TurnRecord
from culturekb.evals.commet.spec import CommetSpec
from culturekb.evals.commet.stories import (
    CATEGORIES,
    MODALITIES,
    Branch,
    Outcome,
    Story,
    Turn,
    load_story_turns,
    split_alternatives,
    story_samples,
)

__all__ = [
    "CommetSpec",
    "commet_options",
    "CATEGORIES",
    "MODALITIES",
    "COMMET_CUES",
    "COMMET_SETTINGS",
    "AnswerJudge",
    "Branch",
    "CommetRunner",
    "JudgeRequest",
    "ModelAnswerJudge",
    "OfflineAnswerJudge",
    "Outcome",
    "Story",
    "StoryPrediction",
    "Turn",
    "TurnRecord",
    "Verdict",
    "commet_plots",
    "commet_tables",
    "feedback_accuracy",
    "load_story_turns",
    "normalise_answer",
    "parse_verdict",
    "question_accuracy",
    "score_commet",
    "split_alternatives",
    "story_accuracy",
    "story_samples",
    "turn_outcomes",
]
