"""CSC panel: pick a model, a corpus, a language, terms, X, a bandwidth and a length filter; see the curves.

Thin, as every panel here: the widgets gather a :class:`CSCPanelState`, and
:func:`run_csc` (pure, no widgets) turns a state into a
:class:`~semanscope_nb.CSCResult`; the panel then shows
:func:`~semanscope_nb.csc_chart` and the most negation-insensitive sentences.
Building the panel loads no model (the model picker reads registry metadata).
No callback raises: every error (an unknown corpus or language, a bad
bandwidth, a cache folder that is a file) is shown in ``status``, and the next
Run works.

>>> from semanscope_nb.widgets.csc_panel import CSCPanel
>>> p = CSCPanel(model="random-null", corpus="csc-skills-en")
>>> p.state().model, p.state().language, p.state().bandwidth
('random-null', 'en', None)
>>> p.fuzz_terms.value, p.negation_terms.value = 'the | a', 'not'
>>> p.state().fuzz_terms, p.state().negation_terms
('the | a', 'not')
"""

from __future__ import annotations

import html
import os
from dataclasses import dataclass
from typing import Any, Literal

import ipywidgets as W

from semanscope_nb.data.sentences import (
    SentenceCorpus,
    ess_folder,
    list_sentence_corpora,
    load_sentence_corpus,
)
from semanscope_nb.metrics.csc.languages import supported_languages
from semanscope_nb.metrics.csc.preview import PerturbationPreview, perturbation_preview
from semanscope_nb.metrics.csc.separation import CSCResult
from semanscope_nb.models.cache import EmbeddingCache
from semanscope_nb.runs.tasks import run_task
from semanscope_nb.widgets.pickers import ModelPicker
from semanscope_nb.widgets.warm_up import import_probed_frame_libraries

_DESC = {"description_width": "110px"}
_WIDE = W.Layout(width="420px")


@dataclass(frozen=True)
class CSCPanelState:
    """Everything one CSC run needs (what the panel gathers)."""

    model: str
    corpus: str  # bundled corpus name, "ess-en" / "ess-de", or a one-sentence-per-line file
    language: str | None = None  # None = the corpus's own language
    max_per_sentence: int = 3
    negation: str = "particle"
    bandwidth: float | str | None = None  # None = Scott's rule; "authors-demo" (fixed 0.2); "silverman"; or scipy's scalar factor
    min_words: int | None = None
    max_words: int | None = None
    max_sentences: int | None = 200  # seeded sample, to keep a click quick
    n_boot: int = 500
    seed: int = 0
    fuzz_terms: str | None = None  # "the | a"; None = the language's own
    negation_terms: str | None = None  # "not"; None = the language's own


def corpus_of(state: CSCPanelState) -> SentenceCorpus:
    """The (sampled) corpus a state points at."""
    return load_sentence_corpus(state.corpus, language=state.language).sample(state.max_sentences, seed=state.seed)


def run_csc(state: CSCPanelState, *, cache: Any = None) -> CSCResult:
    """The ``csc`` task (:func:`~semanscope_nb.runs.tasks.run_task`) for a panel state (no widgets involved)."""
    return run_task("csc", corpus_of(state), state.model, cache=cache, progress=False, language=state.language,
                    max_sentences=state.max_sentences, max_per_sentence=state.max_per_sentence, negation=state.negation,
                    bandwidth=state.bandwidth, min_words=state.min_words, max_words=state.max_words, n_boot=state.n_boot,
                    seed=state.seed, fuzz_terms=state.fuzz_terms, negation_terms=state.negation_terms)


def preview_csc(state: CSCPanelState, sentence: str, *, cache: Any = None) -> PerturbationPreview:
    """:func:`~semanscope_nb.metrics.csc.preview.perturbation_preview` of ``sentence`` for a panel state (no widgets)."""
    language = state.language or CSCPanel._corpus_language(state.corpus)
    if not language:
        raise ValueError("pick a language (or a corpus whose language is known) to preview")
    return perturbation_preview(
        sentence, state.model, language=language, fuzz_terms=state.fuzz_terms, negation_terms=state.negation_terms,
        max_per_sentence=state.max_per_sentence, seed=state.seed, negation=state.negation, cache=cache,
    )


def preview_html(preview: PerturbationPreview) -> str:
    """The preview as an HTML table (text, kind, term, cosine to the original)."""
    rows = "".join(
        f"<tr><td>{html.escape(k)}</td><td>{html.escape(t)}</td><td>{html.escape(x)}</td>"
        f"<td style='text-align:right'>{c:.4f}</td></tr>"
        for k, t, x, c in zip(preview.kinds, preview.terms, preview.texts, preview.cosines)
    ) or "<tr><td colspan=4><i>no insertion point</i></td></tr>"
    means = " · ".join(f"mean {k} cosine {preview.mean_cosine(k):.4f}" for k in ("fuzz", "negation"))
    return (f"<div style='font-size:90%'><b>{html.escape(preview.model)}</b> · {html.escape(preview.language)} · {means}"
            f"<table><tr><th>kind</th><th>term</th><th>variant</th><th>cosine</th></tr>{rows}</table></div>")


def _corpus_options() -> list[str]:
    names = list_sentence_corpora()
    folder = ess_folder()
    names += [f"ess-{lang}" for lang in ("en", "de") if (folder / f"ess_requests_unique_{lang}.tsv").exists()]
    return names


class CSCPanel(W.VBox):
    """Model picker (:class:`ModelPicker`), corpus, language, X, bandwidth, length filter, Run.

    ``cache``: an :class:`~semanscope_nb.EmbeddingCache`, a folder path (str or
    Path, opened on the first Run), None (the default cache) or False (none).
    """

    def __init__(
        self, *, model: str | None = None, corpus: str | None = None,
        cache: EmbeddingCache | str | os.PathLike | None | Literal[False] = None, offline_only: bool = False,
    ) -> None:
        import_probed_frame_libraries()  # before any thread of this panel runs (widgets.warm_up)
        if not (cache is None or cache is False or isinstance(cache, (EmbeddingCache, str, os.PathLike))):
            raise TypeError(f"cache must be an EmbeddingCache, a folder path (str or Path), None or False, got {type(cache).__name__}")
        self.cache = cache
        self.model_picker = ModelPicker(value=model, offline_only=offline_only)  # registered offline and API models
        self.other_model = W.Text(value="", description="other model", placeholder="st:<hub-name-or-folder> (overrides)",
                                  continuous_update=False, layout=_WIDE, style=_DESC)
        options = _corpus_options()
        self.corpus = W.Combobox(options=options, value=corpus or (options[0] if options else ""), description="Corpus",
                                 placeholder="bundled name, ess-en, or a .txt path", ensure_option=False, layout=_WIDE, style=_DESC)
        self.language = W.Dropdown(options=[("from the corpus", None)] + [(c, c) for c in supported_languages()],
                                   value=None, description="Language", style=_DESC)
        self.language_code = W.Text(value="", description="other code", placeholder="e.g. sv (give the terms)",
                                    continuous_update=False, style=_DESC)
        self.fuzz_terms = W.Text(value="", description="fuzz terms", placeholder="the | a  (blank: the language's)",
                                 continuous_update=False, style=_DESC)
        self.negation_terms = W.Text(value="", description="negation terms", placeholder="not  (blank: the language's)",
                                     continuous_update=False, style=_DESC)
        self.max_per_sentence = W.BoundedIntText(value=3, min=1, max=50, description="X per sentence", style=_DESC)
        self.negation = W.Dropdown(options=[("insert particle (paper)", "particle"), ("after auxiliary (en)", "grammatical"),
                                            ("ne ... pas (fr)", "wrap")], value="particle", description="Negation", style=_DESC)
        self.bandwidth_rule = W.Dropdown(options=[("Scott (scipy default)", "scott"), ("authors' demo: fixed 0.2 (the paper gives none)", "authors-demo"),
                                                  ("Silverman", "silverman"), ("scalar factor", "factor")],
                                         value="scott", description="Bandwidth", style=_DESC)
        self.bandwidth_factor = W.BoundedFloatText(value=0.3, min=0.0, max=100.0, step=0.05, description="factor",
                                                   disabled=True, style=_DESC)
        self.length_filter = W.Checkbox(value=False, description="filter by sentence length", indent=False)
        self.length_range = W.IntRangeSlider(value=(1, 10), min=1, max=60, description="words", disabled=True, style=_DESC)
        self.max_sentences = W.BoundedIntText(value=200, min=1, max=100_000, description="max sentences", style=_DESC)
        self.run_button = W.Button(description="Run", button_style="primary", icon="play")
        self.preview_sentence = W.Text(value="", description="preview", placeholder="type a sentence, press Enter",
                                       continuous_update=False, layout=_WIDE, style=_DESC)
        self.preview_output = W.HTML()
        self.preview_result: PerturbationPreview | None = None
        self.status = W.HTML()
        self.output = W.Output()
        self.result: CSCResult | None = None
        self.chart: Any = None
        self.bandwidth_rule.observe(lambda _: setattr(self.bandwidth_factor, "disabled", self.bandwidth_rule.value != "factor"),
                                    names="value")
        self.length_filter.observe(lambda _: setattr(self.length_range, "disabled", not self.length_filter.value), names="value")
        self.run_button.on_click(lambda _: self.run())
        for w in (self.preview_sentence, self.fuzz_terms, self.negation_terms, self.model_picker, self.other_model,
                  self.language, self.language_code, self.max_per_sentence, self.negation):
            w.observe(lambda _: self.preview() if self.preview_sentence.value.strip() else None, names="value")
        super().__init__([
            self.model_picker, self.other_model, self.corpus, W.HBox([self.language, self.language_code, self.max_per_sentence]),
            W.HBox([self.fuzz_terms, self.negation_terms]), self.negation,
            W.HBox([self.bandwidth_rule, self.bandwidth_factor]), W.HBox([self.length_filter, self.length_range]),
            W.HBox([self.preview_sentence]), self.preview_output,
            self.max_sentences, W.HBox([self.run_button, self.status]), self.output,
        ])
        self.add_class("snb-csc-panel")

    def state(self) -> CSCPanelState:
        """The current choices as a :class:`CSCPanelState` (no validation: the pure functions do that)."""
        rule = self.bandwidth_rule.value
        bandwidth = None if rule == "scott" else (rule if rule in ("silverman", "authors-demo") else float(self.bandwidth_factor.value))
        lo, hi = self.length_range.value if self.length_filter.value else (None, None)
        corpus = self.corpus.value.strip()
        language = self.language_code.value.strip() or self.language.value or self._corpus_language(corpus)
        return CSCPanelState(
            model=self.other_model.value.strip() or self.model_picker.value, corpus=corpus, language=language,
            max_per_sentence=int(self.max_per_sentence.value), negation=self.negation.value, bandwidth=bandwidth,
            min_words=lo, max_words=hi, max_sentences=int(self.max_sentences.value),
            fuzz_terms=self.fuzz_terms.value.strip() or None, negation_terms=self.negation_terms.value.strip() or None,
        )

    @staticmethod
    def _corpus_language(corpus: str) -> str | None:
        suffix = corpus.rsplit("-", 1)[-1].removesuffix(".txt")
        return suffix if suffix in supported_languages() else None

    def _store(self) -> EmbeddingCache | None | Literal[False]:
        """The cache to embed through: a folder path is opened once, on first use."""
        if isinstance(self.cache, (str, os.PathLike)):
            self.cache = EmbeddingCache(self.cache)
        return self.cache

    def preview(self, sentence: str | None = None) -> PerturbationPreview | None:
        """Perturb the typed (or given) sentence and show each variant's cosine; errors show in the preview box."""
        try:
            text = self.preview_sentence.value if sentence is None else sentence
            state = self.state()
            if not state.model:
                raise ValueError("pick a model")
            result = preview_csc(state, text, cache=self._store())
            shown = preview_html(result)
        except Exception as exc:  # shown to the user, who fixes the input
            self.preview_output.value = f"<span style='color:#b00'>{html.escape(f'{type(exc).__name__}: {exc}')}</span>"
            return None
        self.preview_result = result
        self.preview_output.value = shown
        return result

    def run(self, state: CSCPanelState | None = None) -> CSCResult | None:
        """Run the current (or given) state; errors show in ``status`` instead of raising."""
        try:
            from semanscope_nb.plots.csc_charts import csc_chart, overlap_label

            state = state or self.state()
            if not state.model:
                raise ValueError("pick a model")
            self.status.value = f"<i>running {html.escape(state.model)} on {html.escape(state.corpus)} ...</i>"
            result = run_csc(state, cache=self._store())
            chart = csc_chart(result)
            cases = result.insensitive_cases(5)[["sentence", "mean_fuzz", "mean_negation", "negation_gap", "closest_negation"]]
        except Exception as exc:  # shown to the user, who fixes the input and clicks again
            self.status.value = f"<span style='color:#b00'>{html.escape(f'{type(exc).__name__}: {exc}')}</span>"
            return None
        self.result, self.chart = result, chart
        # the chart's own label (numbers, interval and its confidence), so the panel and the chart say one thing
        self.status.value = f"{html.escape(overlap_label(result))} · {result.n_sentences} sentences"
        self.output.clear_output()
        with self.output:
            from IPython.display import display

            display(chart)
            display(cases)
        return result

    def with_state(self, state: CSCPanelState) -> "CSCPanel":
        """Set the widgets from a state (for notebooks that restore a previous run)."""
        if state.model in self.model_picker.infos:
            self.model_picker.value, self.other_model.value = state.model, ""
        else:
            self.other_model.value = state.model
        self.corpus.value = state.corpus
        self.fuzz_terms.value = state.fuzz_terms or ""
        self.negation_terms.value = state.negation_terms or ""
        self.language.value = state.language if state.language in supported_languages() else None
        custom = state.language is not None and self.language.value is None and (state.fuzz_terms and state.negation_terms)
        self.language_code.value = state.language if custom else ""
        if state.language is not None and self.language.value is None and not custom:
            self.status.value = (f"<span style='color:#b00'>language {html.escape(repr(state.language))} has no CSC rules "
                                 f"(supported: {', '.join(supported_languages())}); using the corpus's language</span>")
        self.max_per_sentence.value = state.max_per_sentence
        self.negation.value = state.negation
        if state.bandwidth is None or state.bandwidth == "scott":
            self.bandwidth_rule.value = "scott"
        elif state.bandwidth in ("silverman", "authors-demo", "paper"):  # "paper": the deprecated alias
            self.bandwidth_rule.value = "authors-demo" if state.bandwidth == "paper" else state.bandwidth
        else:
            self.bandwidth_rule.value, self.bandwidth_factor.value = "factor", float(state.bandwidth)
        self.length_filter.value = state.min_words is not None or state.max_words is not None
        if self.length_filter.value:
            self.length_range.value = (state.min_words or 1, state.max_words or 60)
        self.max_sentences.value = state.max_sentences or 100_000
        return self


__all__ = ["CSCPanel", "CSCPanelState", "corpus_of", "preview_csc", "preview_html", "run_csc"]
