"""CulturalToM-VQA runs: cross-cultural theory of mind as four-option visual questions (PAPERS.md section 4).

Modules by job: `data` (the file format, the task x complexity matrix, the loader), `runner` (the settings:
zero-shot, chain of thought, compositional chain of thought, each with KB cues, the blind run and the positivity
baseline), `positivity` (what "positive" means, the baseline, Excess Positivity Drift), `scoring` (accuracy and
macro-F1 per setting and group, the diagnostics, the report's tables and plots). Answers are read by the shared
multiple-choice parser `culturekb.inference.choices`.
"""

from culturekb.evals.culturaltom.command import culturaltom_options
from culturekb.evals.culturaltom.data import (
    HUMAN_ACCURACY,
    TaskMatrix,
    item_groups,
    load_culturaltom,
    load_matrix,
)
from culturekb.evals.culturaltom.positivity import (
    excess_positivity_drift,
    option_positivity,
    positivity_pick,
)
from culturekb.evals.culturaltom.runner import (
    CUE_SUFFIX,
    STRATEGIES,
    CulturalToMPrediction,
    CulturalToMRunner,
    SceneGraph,
    culturaltom_settings,
)
from culturekb.evals.culturaltom.scoring import (
    culturaltom_plots,
    culturaltom_tables,
    macro_f1,
    score_culturaltom,
)
from culturekb.evals.culturaltom.spec import CulturalToMSpec

__all__ = [
    "CulturalToMSpec",
    "culturaltom_options",
    "HUMAN_ACCURACY",
    "TaskMatrix",
    "item_groups",
    "load_culturaltom",
    "load_matrix",
    "excess_positivity_drift",
    "option_positivity",
    "positivity_pick",
    "CUE_SUFFIX",
    "STRATEGIES",
    "CulturalToMPrediction",
    "CulturalToMRunner",
    "SceneGraph",
    "culturaltom_settings",
    "culturaltom_plots",
    "culturaltom_tables",
    "macro_f1",
    "score_culturaltom",
]
