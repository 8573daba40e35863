"""Plots layer: projections of embeddings to 2-D/3-D, Altair charts per metric, and export.

Rooms:

* :mod:`~semanscope_nb.plots.projection` -- PHATE / UMAP / t-SNE / PCA coordinates, cached on disk.
* :mod:`~semanscope_nb.plots.maps` -- Semantic Affinity alignment maps (2-D, linked 3-D views, grids), navigable.
* :mod:`~semanscope_nb.plots.legend` -- the SA legend text and its box on a map.
* :mod:`~semanscope_nb.plots.sa_figures` -- tier bars (Figure 1), model x dataset and language-pair heatmaps, worst concepts.
* :mod:`~semanscope_nb.plots.leaderboard` -- the leaderboard table (Tables D.1 / D.2) as a pandas Styler.
* :mod:`~semanscope_nb.plots.chart_kit` -- what those share: lazy Altair, inline data, the language colour scale.
* :mod:`~semanscope_nb.plots.charts` -- deprecated: the old single module; its names resolve with a warning.
* :mod:`~semanscope_nb.plots.csc_charts` -- Concept Separation Curve charts.
* :mod:`~semanscope_nb.plots.word_similarity_charts` -- paper 001's Figure 1: BCWS rho vs parallel sentences.
* :mod:`~semanscope_nb.plots.retrieval_charts` -- retrieval and classification charts.
* :mod:`~semanscope_nb.plots.compare` -- 2-4 maps side by side (models, datasets, languages, methods).
* :mod:`~semanscope_nb.plots.palette` -- fixed colour-blind-safe colours per language code and per tier.
* :mod:`~semanscope_nb.plots.paper` -- paper 000's Figures 1 and 2: the published numbers beside ours.
* :mod:`~semanscope_nb.plots.export` -- PNG/SVG/PDF/HTML export with CJK fonts, offline notebook setup.

Every chart function takes results and returns an ``alt.Chart``; nothing displays as a side effect.
Altair, PHATE and UMAP are imported inside the functions that need them.
May import: the metrics, models and data layers, :mod:`semanscope_nb.errors`,
:mod:`semanscope_nb.provenance` and itself.  A new chart goes into the module of its metric.

Example
-------
>>> import semanscope_nb as snb
>>> snb.plots.alignment_map is snb.plots.maps.alignment_map, snb.plots.ProjectionSettings("pca").method
(True, 'pca')
"""

from semanscope_nb._api import public_names as _public_names
from semanscope_nb.plots import (
    chart_kit,
    charts,
    compare,
    csc_charts,
    export,
    leaderboard,
    legend,
    maps,
    palette,
    paper,
    projection,
    retrieval_charts,
    sa_figures,
    word_similarity_charts,
)
from semanscope_nb.plots.chart_kit import language_scale
from semanscope_nb.plots.compare import compare_maps
from semanscope_nb.plots.csc_charts import csc_chart, csc_grid, csc_heatmap, csc_length_chart
from semanscope_nb.plots.export import (
    chart_bytes,
    chart_to_html,
    download_link,
    register_cjk_fonts,
    save_chart,
    save_figures,
    setup_notebook,
)
from semanscope_nb.plots.leaderboard import leaderboard_table, leaderboard_wide
from semanscope_nb.plots.legend import sa_legend_text
from semanscope_nb.plots.maps import alignment_map, map_3d, map_frame, map_grid
from semanscope_nb.plots.palette import language_colour, language_colours
from semanscope_nb.plots.paper import comparison_frame, paper_error_bars, paper_gap_chart, paper_heatmap, paper_tier_chart
from semanscope_nb.plots.projection import (
    Projection,
    ProjectionCache,
    ProjectionSettings,
    default_projection_cache,
    default_projection_folder,
    project,
    project_dataset,
)
from semanscope_nb.plots.retrieval_charts import sentence_map
from semanscope_nb.plots.sa_figures import pair_heatmap, sa_heatmap, tier_bar_chart, worst_concepts_chart
from semanscope_nb.plots.word_similarity_charts import word_similarity_sweep_chart

__all__ = _public_names(globals(), modules=('chart_kit', 'compare', 'csc_charts', 'export', 'leaderboard', 'legend', 'maps',
                                            'palette', 'paper', 'projection', 'retrieval_charts', 'sa_figures',
                                            'word_similarity_charts'))
