"""User-given text reaches the report page, the exports and the terminal with its controls visible, never obeyed.

A dataset file named ``evil<U+202E>lmth.exe.csv`` reversed the report's own
sentence in the browser; a CSV header cell holding ``ESC ]0;...BEL ESC [2J``
retitled and cleared the terminal through the CLI's ``reader:`` line.  The one
rule, :func:`semanscope_nb.provenance.visible_text`, is checked on a table of
inputs, then at both sinks end to end.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from semanscope_nb.provenance import visible_text

#: every character the rule escapes, written out here (not taken from the module under test)
ESCAPED = ([chr(c) for c in range(0x20)] + [chr(c) for c in range(0x7F, 0xA0)]
           + ["\u061c", "\u200b", "\u200e", "\u200f", "\u2028", "\u2029"] + [chr(c) for c in range(0x202A, 0x202F)]
           + [chr(c) for c in range(0x2060, 0x2070)] + ["\ufeff", "\ufff9", "\ufffa", "\ufffb", "\udc9b"])
#: what may not appear raw in a page or on a terminal (the markup's own newlines and tabs may)
RAW = re.compile("[" + "".join(re.escape(c) for c in ESCAPED if c not in "\n\t\r") + "]")

HOSTILE = "evil\u202elmth.exe \x1b]0;PWNED\x07\x1b[2J\u2066x\u2069\ufeff\u200b\x85"


@pytest.mark.parametrize(("text", "expected"), [
    ("plain text, 0.5 & <b>", "plain text, 0.5 & <b>"),
    ("水 火 日 月", "水 火 日 月"),
    ("ماء", "ماء"),  # Arabic
    ("पानी", "पानी"),  # Hindi
    ("می\u200cخواهم", "می\u200cخواهم"),  # Persian with ZWNJ: part of the word, kept
    ("क्\u200dष", "क्\u200dष"),  # Devanagari with ZWJ: kept
    ("👩\u200d💻", "👩\u200d💻"),  # an emoji ZWJ sequence: kept
    ("soft\u00adhyphen", "soft\u00adhyphen"),
    ("evil\u202elmth.exe", "evil\\u202elmth.exe"),
    ("\u202a\u202b\u202c\u202d\u202e", "\\u202a\\u202b\\u202c\\u202d\\u202e"),
    ("\u2066\u2067\u2068\u2069", "\\u2066\\u2067\\u2068\\u2069"),
    ("a\u200eb\u200fc\u061cd", "a\\u200eb\\u200fc\\u061cd"),
    ("zero\u200bwidth\u2060joiner\ufeffbom", "zero\\u200bwidth\\u2060joiner\\ufeffbom"),
    ("line\u2028para\u2029end", "line\\u2028para\\u2029end"),
    ("\x1b]0;PWNED\x07\x1b[2J\x1b[31mRED", "\\u001b]0;PWNED\\u0007\\u001b[2J\\u001b[31mRED"),
    ("\x00nul\x7fdel\rcr", "\\u0000nul\\u007fdel\\u000dcr"),
    ("c1\x85\x9b31m", "c1\\u0085\\u009b31m"),
    ("tab\there\nline", "tab\\u0009here\\u000aline"),
    ("not utf-8 \udc9b", "not utf-8 \\udc9b"),
])
def test_visible_text_escapes_exactly_the_controls(text, expected):
    assert visible_text(text) == expected


def test_visible_text_keep_and_every_escaped_character():
    assert visible_text("tab\there\nline\r", keep="\n\t") == "tab\there\nline\\u000d"
    for c in ESCAPED:
        assert visible_text(c) == f"\\u{ord(c):04x}", repr(c)
    assert json.loads(json.dumps(visible_text(json.dumps({"w": HOSTILE}, ensure_ascii=False)))) is not None
    assert json.loads(visible_text(json.dumps({"w": HOSTILE}, ensure_ascii=False)))["w"] == HOSTILE  # JSON stays JSON


def test_report_html_shows_hostile_names_and_never_holds_them_raw(tmp_path):
    from semanscope_nb.data.bitext import ParallelCorpus
    from semanscope_nb.models import get_model_info, registry
    from semanscope_nb.runs.model_report import model_report

    model = "null\u202eevil\x1b[2J"
    registry.register_model(dataclasses.replace(get_model_info("random-null"), id=model), replace=True)
    data = tmp_path / "data" / f"{HOSTILE}.csv"
    data.parent.mkdir()
    data.write_text(f"english,chinese,{HOSTILE}\nwater,水,a\nfire,火,b\nsun,日,c\nmoon,月,d\ntree,树,e\n", encoding="utf-8")
    corpus = ParallelCorpus(f"par{HOSTILE}", "en", "zh", ("water", "fire", "sun", "moon"), ("水", "火", "日", "月"),
                            "<memory>", "sha-1")
    try:
        r = model_report([model, "tfidf-char"], languages=["en", "zh"], datasets=[str(data)], parallel=[corpus], n_boot=10,
                         tatoeba=False, sib200=False, csc=False, contextual=False, work_dir=tmp_path / "work",
                         cache=False, progress=False)
        paths = r.to_html(tmp_path / "out" / f"rep{HOSTILE[:12]}.html", title=f"Title {HOSTILE}")
    finally:
        registry._REGISTRY.pop(model, None)
        registry._LOADED.pop(model, None)
    html = Path(paths["html"]).read_text(encoding="utf-8")
    raw = sorted({f"U+{ord(c):04X}" for c in RAW.findall(html)})
    assert not raw, f"raw control/bidi characters in the report HTML: {raw}"
    assert "evil\\u202elmth.exe" in html and "null\\u202eevil\\u001b[2J" in html  # shown, visibly
    # the numbers' ids stay exact: an attribute holds character references the browser reads back as the characters
    import html as html_lib

    ids = {html_lib.unescape(k) for k in re.findall(r"data-id='([^']*)'", html)}
    assert any("|null\u202eevil\\u001b[2J|" in i for i in ids), "data-id keeps a bidi character exactly, shows a control"


def _cli(*commands: tuple, cwd: Path) -> list[subprocess.CompletedProcess]:
    """Run CLI commands at once (each a tuple of arguments) as ``python -m semanscope_nb``; their results (bytes) in order."""
    env = {**os.environ, "SEMANSCOPE_CACHE": str(cwd / "cache"), "HF_HUB_OFFLINE": "1"}
    procs = [subprocess.Popen([sys.executable, "-m", "semanscope_nb", *map(str, c)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, cwd=cwd, env=env) for c in commands]
    done = []
    for p in procs:
        out, err = p.communicate(timeout=240)
        done.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
    return done


def test_cli_prints_no_terminal_escapes_from_a_hostile_csv(tmp_path):
    header = "\x1b]0;PWNED-TITLE\x07\x1b[2J\x1b[31mRED\u202etxt.exe"
    data = tmp_path / "esc\u202evsc.csv"
    data.write_text(f"english,chinese,{header}\nwater,水,a\nfire,火,b\nsun,日,c\nmoon,月,d\n", encoding="utf-8")
    plain, as_json, missing = _cli(
        ("sa", "--model", "random-null", "--dataset", data, "--n-boot", "0"),
        ("sa", "--model", "random-null", "--dataset", data, "--n-boot", "0", "--json"),
        ("sa", "--model", "random-null", "--dataset", tmp_path / "no\x1b[2J\u202ex.csv"),
        cwd=tmp_path)
    assert plain.returncode == 0 and as_json.returncode == 0, plain.stderr.decode(errors="replace")[-1500:]
    assert missing.returncode == 2
    for out in (plain, as_json, missing):
        for stream in (out.stdout, out.stderr):
            for bad in (b"\x1b", b"\x07", "\u202e".encode()):
                assert bad not in stream, (bad, stream[-800:])
    err = plain.stderr.decode()
    assert "reader: esc\\u202evsc.csv: column '\\u001b]0;PWNED-TITLE\\u0007\\u001b[2J\\u001b[31mRED\\u202etxt.exe'" in err, err
    assert "dataset esc\\u202evsc " in plain.stdout.decode()
    report = json.loads(as_json.stdout)["provenance"]["reader_report"]  # stdout stays JSON, the values exact
    assert any(header in line for line in report), report
    assert "semanscope: error: " in missing.stderr.decode() and "no\\u001b[2J\\u202ex.csv" in missing.stderr.decode()


def test_the_progress_bar_shows_a_hostile_model_id_visibly(tmp_path, capsys):
    # tqdm writes "embedding with <model id>" to stderr: an id holding ESC or U+202E reached the terminal raw
    import numpy as np

    from semanscope_nb.models.cache import EmbeddingCache
    from semanscope_nb.models.encoders import Encoder

    class Hostile(Encoder):
        model_id = "evil\u202e\x1b[2Jid"

        def _encode(self, texts):
            return np.ones((len(texts), 4), dtype=np.float32)

    EmbeddingCache(tmp_path / "cache").embed(Hostile(), ["water", "fire"], progress=True)
    err = capsys.readouterr().err
    assert "embedding with evil\\u202e\\u001b[2Jid" in err
    assert "\u202e" not in err and "\x1b[2J" not in err
