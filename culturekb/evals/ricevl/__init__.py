"""RICE-VL runs: cultural VQA scored with SEA-LAVE, and visual grounding scored with IoU.

Modules by job: `common` (the region, its countries and their names, question formats, prompt loading), `vqa`
(the VQA runner, its prompts and the offline kb-prior answerer, tables), `judges` (SEA-LAVE judges: offline
reference matching and a judge model), `metrics` (SEA-LAVE, box IoU), `grounding` (the grounding runner, box
scaling, tables). The regional cue KB is built by `culturekb.builders.cue_kb` (through
`culturekb.workflows.build_ricevl_cue_kb`), not here.
"""

from culturekb.evals.ricevl.command import ricevl_grounding_options, ricevl_vqa_options
from culturekb.evals.ricevl.common import SEA_COUNTRIES, Region, region_from_samples
from culturekb.evals.ricevl.data import (
    QUESTION_FORMATS,
    country_names,
    load_cue_metadata,
    load_ricevl_grounding,
    load_ricevl_vqa,
    normalise_format,
)
from culturekb.evals.ricevl.grounding import (
    GroundingPrediction,
    RiceVLGroundingRunner,
    grounding_plots,
    grounding_tables,
)
from culturekb.evals.ricevl.judges import JudgeScores, ReferenceJudge, SeaLaveJudge, parse_judge_scores, token_f1
from culturekb.evals.ricevl.metrics import Box, box_iou, box_ious, iou_accuracy, mean_iou_by_group, sea_lave
from culturekb.evals.ricevl.spec import RiceVLGroundingSpec, RiceVLVQASpec
from culturekb.evals.ricevl.vqa import (
    VQA_SETTINGS,
    KBPriorAnswerer,
    RiceVLVQARunner,
    VQAPrediction,
    vqa_plots,
    vqa_tables,
)

__all__ = [
    "RiceVLVQASpec",
    "RiceVLGroundingSpec",
    "ricevl_vqa_options",
    "ricevl_grounding_options",
    "QUESTION_FORMATS",
    "load_ricevl_vqa",
    "load_ricevl_grounding",
    "load_cue_metadata",
    "normalise_format",
    "country_names",
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
    "Box",
    "sea_lave",
    "box_iou",
    "box_ious",
    "mean_iou_by_group",
    "iou_accuracy",
]
