"""The knowledge report: does the KB help, where and how much (coverage, hit precision, calibration, kb-prior
accuracy with intervals and paired tests).

One folder, one benchmark: `spec`, `command` (``culturekb eval knowledge``), `runner` (the sections), `report`
(tables and plots).
"""

from culturekb.evals.knowledge.command import knowledge_options
from culturekb.evals.knowledge.report import knowledge_plots, knowledge_tables
from culturekb.evals.knowledge.runner import (
    KNOWLEDGE_MODES,
    MAJORITY,
    KnowledgeRunner,
    annotator_agreement,
    annotator_counts,
    calibration_summary,
    concept_effects,
    coverage_summary,
    hit_precision,
)
from culturekb.evals.knowledge.spec import KnowledgeSpec

__all__ = [
    "KnowledgeSpec",
    "knowledge_options",
    "KNOWLEDGE_MODES",
    "MAJORITY",
    "KnowledgeRunner",
    "annotator_counts",
    "annotator_agreement",
    "calibration_summary",
    "concept_effects",
    "coverage_summary",
    "hit_precision",
    "knowledge_tables",
    "knowledge_plots",
]
