"""A workshop that forgives: answers read kindly, wrong ones answered with a hint, no traceback on the screen.

:class:`Workshop` checks the answers of notebooks/04-workshop.ipynb.  An answer
is normalised before it is compared (:func:`read_number`, :func:`read_choice`):
case and spaces do not matter, ``"about 0.5"``, ``"~0.5"``, ``"0,5"`` and
``"50%"`` are read as the number 0.5 where a number is asked, ``"Non aligned"``
is ``"non-aligned"``.  A wrong answer gets the exercise's hint -- pointing at the
idea, not at the value -- and the measured value stays hidden until the answer
is right (or :meth:`Workshop.reveal` is called).  An answer that cannot be read
says what is expected instead of raising.  :meth:`Workshop.quiet` runs a step
with its warnings, progress bars and stray library output caught and reduced
to one plain note each (no file path, no traceback).

Layer: widgets (a teaching front end; it computes nothing).

Example
-------
>>> ws = Workshop({"random": "about 0.5", "tier": "Great ", "gap": "below"})
>>> ws.check("random", 0.503, tolerance=0.05, hint="compare a translation with a random word")
[random] ✓ correct: you said 0.5; measured 0.503
Checked(ok=True)
>>> ws.check("tier", "great", choices=("great", "good", "non-aligned"))
[tier] ✓ correct: you said great; measured great
Checked(ok=True)
>>> ws.check("gap", "above", choices=("below", "at", "above"), hint="is the gap's interval above 0?")
[gap] ✗ not quite (you said below). Hint: is the gap's interval above 0? Change ANSWERS["gap"] and run this cell again.
Checked(ok=False)
>>> ws.summary()
'score: 2/3 correct (0 unanswered)'
"""

from __future__ import annotations

import contextlib
import io
import logging
import math
import os
import re
import warnings
from typing import Any, Iterator, Mapping, Sequence

#: words around a number that do not change it ("about 0.5", "roughly 0.5", "~0.5")
_HEDGES = re.compile(r"\b(about|around|roughly|approximately|approx|circa|ca|nearly|almost|close to|maybe|i think|"
                     r"probably|guess)\b\.?|[~≈±]", re.IGNORECASE)
_NUMBER = re.compile(r"[-+]?(?:\d+(?:[.,]\d*)?|[.,]\d+)(?:[eE][-+]?\d+)?")


class AnswerNotUnderstood(ValueError):
    """An answer that cannot be read as what the exercise asks (the message says what to write)."""


def read_number(answer: Any) -> float:
    """``answer`` as a number: a number, or text holding one number ("about 0.5", "0,5", "50%").

    >>> read_number("about 0.5"), read_number(" ~0,42 "), read_number("50%"), read_number(1)
    (0.5, 0.42, 0.5, 1.0)
    >>> read_number("half")
    Traceback (most recent call last):
    ...
    semanscope_nb.widgets.workshop.AnswerNotUnderstood: 'half' holds no number; write one, e.g. 0.5
    """
    if isinstance(answer, bool):
        raise AnswerNotUnderstood(f"{answer!r} is not a number; write one, e.g. 0.5")
    if isinstance(answer, (int, float)):
        if not math.isfinite(float(answer)):
            raise AnswerNotUnderstood(f"{answer!r} is not a finite number")
        return float(answer)
    text = _HEDGES.sub(" ", str(answer)).strip()
    found = _NUMBER.findall(text)
    if len(found) != 1:
        what = "holds no number" if not found else f"holds {len(found)} numbers"
        raise AnswerNotUnderstood(f"{str(answer).strip()!r} {what}; write one, e.g. 0.5")
    value = float(found[0].replace(",", "."))
    if "%" in text:
        value /= 100.0
    return value


def _key(text: str) -> str:
    return re.sub(r"[\s_\-]+", "-", str(text).strip().lower()).strip("-")


def read_choice(answer: Any, choices: Sequence[str]) -> str:
    """``answer`` as one of ``choices``, ignoring case, spaces, hyphens and words around it.

    >>> read_choice("  Non aligned", ("great", "good", "non-aligned")), read_choice("ABOVE its chance level", ("below", "at", "above"))
    ('non-aligned', 'above')
    >>> read_choice("excellent", ("great", "good", "non-aligned"))
    Traceback (most recent call last):
    ...
    semanscope_nb.widgets.workshop.AnswerNotUnderstood: 'excellent' is not one of: great, good, non-aligned
    """
    key = _key(answer)
    by_key = {_key(c): c for c in choices}
    if key in by_key:
        return by_key[key]
    joined = {k.replace("-", ""): c for k, c in by_key.items()}  # "nonaligned" is "non-aligned"
    if key.replace("-", "") in joined:
        return joined[key.replace("-", "")]
    words = set(key.split("-"))
    hits = [c for k, c in by_key.items() if k in words or (("-" in k) and k in key)]
    longest = max(hits, key=len, default=None)
    if longest is not None and all(h == longest or _key(h) in _key(longest) for h in hits):
        return longest
    raise AnswerNotUnderstood(f"{str(answer).strip()!r} is not one of: {', '.join(choices)}")


class Checked:
    """What :meth:`Workshop.check` returns: truthy when the answer was right; shows nothing in a notebook.

    >>> bool(Checked(True)), bool(Checked(None)), Checked(False)
    (True, False, Checked(ok=False))
    """

    __slots__ = ("ok",)

    def __init__(self, ok: bool | None) -> None:
        self.ok = ok

    def __bool__(self) -> bool:
        return bool(self.ok)

    def __repr__(self) -> str:
        return f"Checked(ok={self.ok})"

    def _ipython_display_(self) -> None:  # the printed verdict says it all: no "True" under the cell
        pass


class Workshop:
    """The answers of one workshop run and their checks (see the module doc).

    ``answers``: exercise name -> the student's answer (None: not answered yet).
    """

    def __init__(self, answers: Mapping[str, Any]) -> None:
        self.answers = dict(answers or {})
        #: exercise -> True (right), False (wrong) or None (unanswered or unreadable)
        self.score: dict[str, bool | None] = {}
        self._truth: dict[str, Any] = {}

    def check(self, name: str, truth: Any, *, tolerance: float | None = None, choices: Sequence[str] | None = None,
              hint: str = "", explain: str = "") -> Checked:
        """Compare ``ANSWERS[name]`` with the measured ``truth``; print the verdict; return it (:class:`Checked`).

        A number is asked when ``tolerance`` is given (right within it), else one of
        ``choices`` (or an exact match).  Right: the measured value and ``explain``.
        Wrong: ``hint``, not the value.  Unreadable or missing: what to write.
        """
        self._truth[name] = truth
        answer = self.answers.get(name)
        if answer is None or (isinstance(answer, str) and not answer.strip()):
            print(f"[{name}] no answer yet -- the measured value is hidden until you answer")
            self.score[name] = None
            return Checked(None)
        try:
            if tolerance is not None:
                given: Any = read_number(answer)
                ok = abs(given - float(truth)) <= tolerance
                shown, measured = f"{given:g}", f"{float(truth):.3f}"
            elif choices is not None:
                given = read_choice(answer, choices)
                ok = given == read_choice(truth, choices)
                shown, measured = given, str(truth)
            else:
                given = str(answer).strip()
                ok = _key(given) == _key(truth)
                shown, measured = given, str(truth)
        except AnswerNotUnderstood as exc:
            print(f"[{name}] ? I could not read your answer: {exc}. Change ANSWERS[\"{name}\"] and run this cell again.")
            self.score[name] = None
            return Checked(None)
        if ok:
            print(f"[{name}] ✓ correct: you said {shown}; measured {measured}" + (f". {explain}" if explain else ""))
        else:
            tip = f" Hint: {hint}" if hint else ""
            print(f"[{name}] ✗ not quite (you said {shown}).{tip} Change ANSWERS[\"{name}\"] and run this cell again.")
        self.score[name] = bool(ok)
        return Checked(bool(ok))

    def reveal(self, name: str) -> Any:
        """Print (and return) the measured value of a checked exercise, when you want to see it anyway."""
        truth = self._truth.get(name)
        print(f"[{name}] measured: {truth:.3f}" if isinstance(truth, float) else f"[{name}] measured: {truth}")
        return truth

    def summary(self) -> str:
        """``"score: k/n correct (m unanswered)"`` over the exercises checked so far."""
        answered = [v for v in self.score.values() if v is not None]
        return f"score: {sum(answered)}/{len(self.score)} correct ({len(self.score) - len(answered)} unanswered)"

    @staticmethod
    @contextlib.contextmanager
    def quiet() -> Iterator[list[str]]:
        """Run a step with warnings, progress bars and library output caught; print each distinct warning once, plainly.

        Yields the list of notes (the warning messages, without file names or line numbers).
        """
        notes: list[str] = []
        saved = {k: os.environ.get(k) for k in ("TQDM_DISABLE", "HF_HUB_DISABLE_PROGRESS_BARS", "TRANSFORMERS_VERBOSITY",
                                                 "TRANSFORMERS_NO_ADVISORY_WARNINGS")}
        os.environ.update({"TQDM_DISABLE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1", "TRANSFORMERS_VERBOSITY": "error",
                           "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1"})
        loggers = [logging.getLogger(n) for n in ("transformers", "sentence_transformers", "huggingface_hub", "torch")]
        levels = [lg.level for lg in loggers]
        bars = _transformers_bars(False)  # transformers draws its "Loading weights" bar as a notebook widget
        for lg in loggers:
            lg.setLevel(logging.ERROR)
        err = io.StringIO()
        try:  # stderr is where progress bars and library chatter go; what the step prints itself stays
            with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stderr(err):
                warnings.simplefilter("always")
                yield notes
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            for lg, level in zip(loggers, levels):
                lg.setLevel(level)
            if bars:
                _transformers_bars(True)
        for w in caught:
            text = " ".join(str(w.message).split())
            if text not in notes:
                notes.append(text)
        for text in notes:
            print(f"note: {text}")


def _transformers_bars(on: bool) -> bool:
    """Switch transformers' progress bars on or off (when it is installed); returns whether they were on before."""
    import importlib.util

    if importlib.util.find_spec("transformers") is None:
        return False
    try:
        from transformers.utils import logging as tlog
    except Exception:  # a broken transformers installation: nothing to switch
        return False
    before = bool(tlog.is_progress_bar_enabled())
    (tlog.enable_progress_bar if on else tlog.disable_progress_bar)()
    return before
