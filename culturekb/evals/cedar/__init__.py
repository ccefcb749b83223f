"""Cedar: culture-specific emotion answers to narratives (multimodal and text-only), with regional cues
(PAPERS.md section 2).

One folder, one benchmark: `spec`, `command` (``culturekb eval cedar``), `data` (the file format and loader),
`metrics` (propensity, quadrant bias), `runner` (predictor, runner, scores), `report` (tables and plots).
"""

from culturekb.evals.cedar.command import cedar_options
from culturekb.evals.cedar.data import load_cedar
from culturekb.evals.cedar.metrics import (
    prediction_propensity,
    prediction_propensity_by_group,
    quadrant_bias,
    quadrant_bias_by_group,
)
from culturekb.evals.cedar.runner import (
    CEDAR_MODES,
    CedarPrediction,
    CedarPredictor,
    CedarRunner,
    cedar_plots,
    cedar_tables,
    cedar_template,
    cue_block_for,
)
from culturekb.evals.cedar.spec import CedarSpec

__all__ = [
    "CedarSpec",
    "cedar_options",
    "load_cedar",
    "CEDAR_MODES",
    "CedarPrediction",
    "CedarPredictor",
    "CedarRunner",
    "cedar_tables",
    "cedar_plots",
    "cedar_template",
    "cue_block_for",
    "prediction_propensity",
    "prediction_propensity_by_group",
    "quadrant_bias",
    "quadrant_bias_by_group",
]
