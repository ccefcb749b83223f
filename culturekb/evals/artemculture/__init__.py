"""ArtECulture: culture-conditioned emotion prediction over artworks with the KB injected (PAPERS.md section 1).

One folder, one benchmark: `spec` (the run spec), `command` (``culturekb eval artemculture`` options), `runner`
(the runner, its scores, tables and plots).
"""

from culturekb.evals.artemculture.command import artemculture_options
from culturekb.evals.artemculture.runner import (
    ArtECultureRunner,
    artemculture_plots,
    artemculture_tables,
    run_artemculture,
    score_alignment,
)
from culturekb.evals.artemculture.spec import ArtECultureSpec

__all__ = [
    "ArtECultureSpec",
    "artemculture_options",
    "ArtECultureRunner",
    "artemculture_tables",
    "artemculture_plots",
    "score_alignment",
    "run_artemculture",
]
