"""RICE-VL runs: cultural VQA scored with SEA-LAVE, and visual grounding scored with IoU.

Modules by job: `common` (the region, its countries and their names, question formats, prompt loading), `vqa`
(the VQA runner, its prompts and the offline kb-prior answerer, tables), `judges` (SEA-LAVE judges: offline
reference matching and a judge model), `grounding` (the grounding runner, box scaling, tables). The regional cue
KB is built by `culturekb.builders.cue_kb` (through `culturekb.workflows.build_ricevl_cue_kb`), not here.
"""

from culturekb.evals.ricevl.common import SEA_COUNTRIES, Region, region_from_samples
from culturekb.evals.ricevl.grounding import (
    GroundingPrediction,
    RiceVLGroundingRunner,
    grounding_plots,
    grounding_tables,
)
from culturekb.evals.ricevl.judges import JudgeScores, ReferenceJudge, SeaLaveJudge, parse_judge_scores, token_f1
from culturekb.evals.ricevl.vqa import (
    VQA_SETTINGS,
    KBPriorAnswerer,
    RiceVLVQARunner,
    VQAPrediction,
    vqa_plots,
    vqa_tables,
)

__all__ = [
    "SEA_COUNTRIES",
    "VQA_SETTINGS",
    "Region",
    "region_from_samples",
    "VQAPrediction",
    "GroundingPrediction",
    "JudgeScores",
    "ReferenceJudge",
    "SeaLaveJudge",
    "parse_judge_scores",
    "token_f1",
    "KBPriorAnswerer",
    "RiceVLVQARunner",
    "RiceVLGroundingRunner",
    "vqa_tables",
    "vqa_plots",
    "grounding_tables",
    "grounding_plots",
]
