"""Dataset formats, files and record checks (recipes/data/datasets.py)."""
from __future__ import annotations

import json

import pytest

from recipes.data import datasets as data
from wizard import i18n

CONV = [{"role": "user", "content": "What is LoRA?"}, {"role": "assistant", "content": "Low-rank adapters."}]


def bad(loaded) -> list[str]:
    """The malformed records as the user reads them (English): "file:line (why)"."""
    return [i18n.render(m) for m in loaded.bad]


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("row,fmt", [
    ({"instruction": "What is LoRA?", "input": "", "output": "Low-rank adapters."}, "alpaca"),
    ({"conversations": [{"from": "human", "value": "What is LoRA?"}, {"from": "gpt", "value": "Low-rank adapters."}]},
     "sharegpt"),
    ({"messages": CONV}, "messages"),
    ({"prompt": "What is LoRA?", "completion": "Low-rank adapters."}, "prompt_completion"),
    ({"prompt": CONV[:1], "completion": CONV[1:]}, "prompt_completion"),
])
def test_every_format_becomes_the_same_conversation(tmp_path, row, fmt):
    loaded = data.read(write(tmp_path / "d.jsonl", [row]))
    assert loaded.format == fmt and loaded.conversations == [CONV] and not loaded.bad


def test_json_csv_and_parquet_files(tmp_path):
    rows = [{"instruction": f"q{i}", "input": "", "output": f"a{i}"} for i in range(5)]
    (tmp_path / "d.json").write_text(json.dumps(rows))
    import pandas as pd

    pd.DataFrame(rows).to_csv(tmp_path / "d.csv", index=False)
    pd.DataFrame(rows).to_parquet(tmp_path / "d.parquet")
    for name in ("d.json", "d.csv", "d.parquet"):
        loaded = data.read(tmp_path / name)
        assert loaded.format == "alpaca" and len(loaded.conversations) == 5, name
    pd.DataFrame([{"messages": json.dumps(CONV)}]).to_csv(tmp_path / "m.csv", index=False)
    assert data.read(tmp_path / "m.csv").conversations == [CONV]  # JSON cells decoded


def test_malformed_records_are_listed_by_line_then_skipped_or_refused(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join([
        json.dumps({"instruction": "a", "output": "b"}),
        '{"instruction": "broken json',
        json.dumps({"instruction": "", "output": "b"}),          # empty instruction
        json.dumps({"instruction": 3, "output": None}),           # not text
        json.dumps({"messages": CONV}),                           # another format
        json.dumps({"instruction": "c", "output": "d"}),
    ]) + "\n")
    loaded = data.read(path)
    assert bad(loaded) == ["d.jsonl:2 (not JSON)", "d.jsonl:3 ('instruction' is empty or missing)",
                           "d.jsonl:4 ('instruction' is not text)",
                           "d.jsonl:5 (format messages in a file of format alpaca (keys messages): one format per file)"]
    assert len(loaded.conversations) == 2
    with pytest.raises(data.DataError) as e:
        data.load_records(path)
    assert e.value.key == "data.bad_records" and e.value.params["count"] == 4
    line = i18n.t(e.value.key, **e.value.params)  # the one line a --yes run prints: the reasons and the way on
    assert "d.jsonl:3 ('instruction' is empty or missing)" in line and "bad_records=skip" in line
    i18n.set_lang("zh")
    try:
        assert "d.jsonl:3（“instruction”为空或缺失）" in i18n.t(e.value.key, **e.value.params)
    finally:
        i18n.set_lang("en")
    assert len(data.load_records(path, skip_bad=True)) == 2
    # issue 46 trial G: a turn with no role was "role 'None' is not one of …", a record of no format "format ?"
    other = tmp_path / "m.jsonl"
    other.write_text("\n".join(json.dumps(r) for r in (
        {"messages": CONV}, {"messages": [{"content": "hi"}, CONV[-1]]}, {"foo": "bar"})) + "\n")
    assert bad(data.read(other)) == ["m.jsonl:2 (a turn without 'role')",
                                     "m.jsonl:3 (keys foo: not a record of format messages (nor of another format "
                                     "yichui reads))"]


def test_conversation_rules(tmp_path):
    """Issue 46 item 21: a malformed record was named by its line only; now with the reason."""
    for row, why in (
            ({"messages": [{"role": "user", "content": "hi"}]}, "the last turn is the user's, not the assistant's"),
            ({"messages": [{"role": "assistant", "content": "hi"}]}, "no user turn"),
            ({"messages": [{"role": "system", "content": "be brief"}]}, "no user turn"),  # system-only
            ({"messages": [{"role": "robot", "content": "hi"}, CONV[1]]},
             "role 'robot' is not one of system, user, assistant"),
            ({"messages": [{"role": "user", "content": None}, CONV[1]]}, "'content' is empty or missing"),
            ({"messages": [{"role": "user", "content": "  "}, CONV[1]]}, "'content' is empty or missing"),
            ({"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": 5}]}, "'value' is not text"),
            ({"instruction": "q", "output": None}, "'output' is empty or missing"),
            ([1, 2], "not a JSON object")):
        path = write(tmp_path / "d.jsonl", [{"instruction": "ok", "output": "fine"}, row]) if isinstance(row, list) \
            else write(tmp_path / "d.jsonl", [row])
        at = "d.jsonl:2" if isinstance(row, list) else "d.jsonl:1"
        assert bad(data.read(path)) == [f"{at} ({why})"], row
    # the key itself missing in an alpaca file was "format ? in a file of format alpaca" (the tester's 21-9)
    path = write(tmp_path / "d.jsonl", [{"instruction": "ok", "output": "fine"}, {"instruction": "q", "input": ""}])
    assert bad(data.read(path)) == ["d.jsonl:2 (a record of format alpaca without output)"]


def test_sampling_and_validation_split_are_seeded(tmp_path):
    path = write(tmp_path / "d.jsonl", [{"instruction": f"q{i}", "output": f"a{i}"} for i in range(50)])
    a = data.read(f"{path}#10").conversations
    assert len(a) == 10 and a == data.read(f"{path}#10").conversations
    assert len(data.read(f"{path}#500").conversations) == 50
    train, val = data.train_validation(data.load_records(path), 0.2)
    assert (len(train), len(val)) == (40, 10) and not {str(c) for c in train} & {str(c) for c in val}
    assert data.train_validation(data.load_records(path), 0.0) == (data.load_records(path), [])


@pytest.mark.parametrize("content,key", [(b"", "data.empty"), (b"\xff\xfe", "data.not_text_at"),
                                         (b'{"foo": 1}\n', "data.unknown_format")])
def test_unusable_files_are_named(tmp_path, content, key):
    path = tmp_path / "d.jsonl"
    path.write_bytes(content)
    with pytest.raises(data.DataError) as e:
        data.read(path)
    assert e.value.key == key


# -- image-text records (issue 22) -------------------------------------------------------------------------------

def _png(path, colour=(200, 30, 30)):
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (8, 8), colour).save(path)
    return path


Q = "What colour is the shape?"


@pytest.mark.parametrize("row", [
    # messages with the file in the part (a path relative to the dataset's folder)
    {"messages": [{"role": "user", "content": [{"type": "image", "image": "img/a.png"}, {"type": "text", "text": Q}]},
                  {"role": "assistant", "content": "red"}]},
    # OpenAI's image_url part
    {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "img/a.png"}},
                                               {"type": "text", "text": Q}]},
                  {"role": "assistant", "content": "red"}]},
    # trl's form: bare placeholders, the files in an images column
    {"images": ["img/a.png"], "messages": [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": Q}]},
                                           {"role": "assistant", "content": "red"}]},
    # LLaMA-Factory's / sharegpt's: "<image>" in the text, an images column
    {"images": ["img/a.png"], "messages": [{"role": "user", "content": "<image>" + Q},
                                           {"role": "assistant", "content": "red"}]},
    {"images": ["img/a.png"], "conversations": [{"from": "human", "value": "<image>" + Q}, {"from": "gpt", "value": "red"}]},
    # an images column and no placeholder: the image goes before the first question (ms-swift's rule), alpaca too
    {"images": ["img/a.png"], "messages": [{"role": "user", "content": Q}, {"role": "assistant", "content": "red"}]},
    {"images": "img/a.png", "instruction": Q, "output": "red"},
])
def test_every_image_text_form_becomes_the_same_conversation(tmp_path, row, monkeypatch):
    png = _png(tmp_path / "data" / "img" / "a.png")
    monkeypatch.chdir(tmp_path)  # relative paths are the dataset folder's, not the working directory's
    loaded = data.read(write(tmp_path / "data" / "d.jsonl", [row]))
    assert not loaded.bad
    (conv,) = loaded.conversations
    assert conv == [{"role": "user", "content": [{"type": "image", "image": str(png.resolve())},
                                                 {"type": "text", "text": Q}]},
                    {"role": "assistant", "content": "red"}]
    (rec,) = data.to_prompt_completion([conv])  # trl's image-text form for the trainer
    assert rec["images"] == [str(png.resolve())]
    assert rec["prompt"][0]["content"] == [{"type": "image"}, {"type": "text", "text": Q}]


def test_an_image_folder_with_its_metadata_file(tmp_path):
    """Hugging Face's ImageFolder layout: images beside a metadata.jsonl whose file_name names each record's image."""
    a, b = _png(tmp_path / "pics" / "a.png"), _png(tmp_path / "pics" / "sub" / "b.png", (30, 30, 200))
    write(tmp_path / "pics" / "metadata.jsonl", [
        {"file_name": "a.png", "messages": [{"role": "user", "content": Q}, {"role": "assistant", "content": "red"}]},
        {"file_name": "sub/b.png", "instruction": Q, "output": "blue"},
        {"file_name": "gone.png", "messages": [{"role": "user", "content": Q}, {"role": "assistant", "content": "x"}]}])
    loaded = data.read(tmp_path / "pics")
    assert [c[0]["content"][0]["image"] for c in loaded.conversations] == [str(a.resolve())] and bad(loaded) == [
        "metadata.jsonl:2 (format alpaca in a file of format messages (keys instruction, output, images): one "
        "format per file)",
        "metadata.jsonl:3 (image gone.png not found)"]  # one format per file (messages here)
    assert data.read(f"{tmp_path / 'pics'}#1").conversations  # a sample of a folder
    with pytest.raises(data.DataError) as e:
        data.read(tmp_path / "pics" / "sub")  # a folder without a metadata file
    assert e.value.key == "data.is_folder"


def test_parquet_with_image_bytes(tmp_path):
    """A parquet file as the datasets library writes an Image column (the bytes inside the file)."""
    import io

    from datasets import Dataset, Features, Image, List, Value
    from PIL import Image as PILImage

    buf = io.BytesIO()
    PILImage.new("RGB", (8, 8), (30, 30, 200)).save(buf, format="PNG")
    feats = Features({"images": List(Image()), "messages": List({"role": Value("string"), "content": Value("string")})})
    Dataset.from_dict({"images": [[{"bytes": buf.getvalue(), "path": None}]],
                       "messages": [[{"role": "user", "content": "<image>" + Q}, {"role": "assistant", "content": "blue"}]]},
                      features=feats).to_parquet(str(tmp_path / "d.parquet"))
    loaded = data.read(tmp_path / "d.parquet")
    assert not loaded.bad, loaded.bad
    part = loaded.conversations[0][0]["content"][0]
    assert part["type"] == "image" and PILImage.open(io.BytesIO(part["image"])).getpixel((0, 0)) == (30, 30, 200)


def test_bad_image_records_are_named_with_their_line_and_reason(tmp_path):
    _png(tmp_path / "ok.png")
    (tmp_path / "not-an-image.png").write_text("hello")
    user = lambda content: [{"role": "user", "content": content}, {"role": "assistant", "content": "red"}]  # noqa: E731
    rows = [{"images": ["ok.png"], "messages": user("<image>" + Q)},
            {"images": ["missing.png"], "messages": user("<image>" + Q)},
            {"images": ["not-an-image.png"], "messages": user("<image>" + Q)},
            {"images": ["ok.png", "ok.png"], "messages": user("<image>" + Q)},
            {"images": [], "messages": user("<image>" + Q)},
            {"messages": user([{"type": "image", "image": "https://example.com/a.png"}, {"type": "text", "text": Q}])},
            {"images": ["ok.png"], "messages": user([{"type": "image"}, {"type": "video"}])}]
    loaded = data.read(write(tmp_path / "d.jsonl", rows))
    assert len(loaded.conversations) == 1
    assert bad(loaded) == ["d.jsonl:2 (image missing.png not found)",
                          "d.jsonl:3 (image not-an-image.png unreadable (UnidentifiedImageError))",
                          "d.jsonl:4 (1 image(s) more than placeholders)",
                          "d.jsonl:5 (more image placeholders than images)",
                          "d.jsonl:6 (remote image https://example.com/a.png (download it and give the file))",
                          "d.jsonl:7 (a content part of type 'video' (text or image only))"]
    with pytest.raises(data.DataError) as e:
        data.load(tmp_path / "d.jsonl")
    assert "d.jsonl:2 (image missing.png not found)" in i18n.t(e.value.key, **e.value.params)


def test_the_bundled_shapes_keep_each_image_with_its_answer_through_sampling_and_splits(tmp_path):
    from PIL import Image

    from recipes.data import shapes

    path = shapes.build(tmp_path, 18)
    convs = data.load_records(f"{path}#20", images=True)
    train, held = data.train_validation(convs, 0.25)
    for conv in train + held:  # the answer is still the one drawn in that record's image
        img = Image.open(conv[0]["content"][0]["image"]).convert("RGB")
        colours = {c for c, rgb in shapes.COLOURS.items() if rgb in {px for _, px in img.getcolors(4096)}}
        if conv[0]["content"][1]["text"] == shapes.QUESTIONS["colour"]:
            assert colours == {conv[1]["content"]}


def test_image_records_of_every_shape_make_one_table_for_the_trainer(tmp_path):
    """A system turn, several turns and text-only records beside image ones: one table (trl's image-text form for all),
    which Arrow refuses when some contents are strings and others lists. Also trl's prompt/completion image form, an
    inline data: URL, and parquet bytes PIL cannot read (a bad record, not a crash)."""
    import base64
    import io

    from datasets import Dataset, Features, Image, List, Value
    from PIL import Image as PILImage

    from recipes.model import vision

    png = _png(tmp_path / "a.png")
    inline = "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode()
    rows = [
        {"images": ["a.png"], "messages": [{"role": "system", "content": "Answer in one word."},
                                           {"role": "user", "content": "<image>" + Q}, {"role": "assistant", "content": "red"},
                                           {"role": "user", "content": "And again?"}, {"role": "assistant", "content": "red"}]},
        {"messages": CONV},  # text only
        {"images": ["a.png"], "prompt": [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": Q}]}],
         "completion": [{"role": "assistant", "content": "red"}]},
        {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": inline}},
                                                   {"type": "text", "text": Q}]}, {"role": "assistant", "content": "red"}]},
    ]
    for i, row in enumerate(rows):
        loaded = data.read(write(tmp_path / f"d{i}.jsonl", [row]))
        assert not loaded.bad, (i, loaded.bad)
    convs = [data.read(tmp_path / f"d{i}.jsonl").conversations[0] for i in range(len(rows))]
    assert data.has_images(convs[3]) and convs[3][0]["content"][0]["image"] == png.read_bytes()
    table = vision.image_dataset(data.to_prompt_completion(convs))
    assert len(table) == 4 and [len(x) for x in table["images"]] == [1, 0, 1, 1]
    assert table[0]["prompt"][0] == {"role": "system", "content": [{"type": "text", "text": "Answer in one word."}]}
    with pytest.raises(data.DataError) as e:  # a step that takes text only names them
        data.load(tmp_path / "d0.jsonl")
    assert e.value.key == "data.has_images"
    feats = Features({"images": List(Image()), "messages": List({"role": Value("string"), "content": Value("string")})})
    buf = io.BytesIO()
    PILImage.new("RGB", (4, 4)).save(buf, format="PNG")
    msgs = [{"role": "user", "content": "<image>" + Q}, {"role": "assistant", "content": "red"}]
    Dataset.from_dict({"images": [[{"bytes": buf.getvalue(), "path": None}], [{"bytes": b"not a picture", "path": None}]],
                       "messages": [msgs, msgs]}, features=feats).to_parquet(str(tmp_path / "p.parquet"))
    loaded = data.read(tmp_path / "p.parquet")
    assert len(loaded.conversations) == 1 and bad(loaded) == ["p.parquet:2 (image bytes unreadable (UnidentifiedImageError))"]
    assert loaded.conversations[0][0]["content"][0]["image"] == buf.getvalue()  # the file's own bytes, not re-encoded


def test_a_byte_order_mark_and_a_line_that_is_not_utf8(tmp_path):
    """Issue 46 item 21: a .jsonl starting with a UTF-8 byte-order mark lost its first record (a .json array with one
    was refused); a file with one non-UTF-8 line was "not UTF-8 text" with no line to look at."""
    rec = {"instruction": "a", "output": "b"}
    jl = tmp_path / "bom.jsonl"
    jl.write_bytes(b"\xef\xbb\xbf" + (json.dumps(rec) + "\n").encode() * 3)
    assert len(data.read(jl).conversations) == 3 and not data.read(jl).bad
    js = tmp_path / "bom.json"
    js.write_bytes(b"\xef\xbb\xbf" + json.dumps([rec, rec]).encode())
    assert len(data.read(js).conversations) == 2
    gbk = tmp_path / "gbk.jsonl"
    gbk.write_bytes((json.dumps(rec) + "\n").encode() * 2 + '{"instruction": "你好", "output": "b"}\n'.encode("gbk"))
    with pytest.raises(data.DataError) as e:
        data.read(gbk)
    assert e.value.key == "data.not_text_at" and e.value.params["line"] == 3


def test_raw_line_separators_and_broken_unicode_in_records(tmp_path):
    """Issue 46 (bad input, round four): a record whose text holds U+2028 raw (json.dumps with ensure_ascii=False
    writes it so) was split into two "not JSON" records; a lone surrogate (\\ud800) crashed training with
    UnicodeEncodeError; a 100,000-deep line and a 5,000-digit number crashed the reader."""
    good = {"instruction": "Line\u2028one", "output": "b"}
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join([json.dumps(good, ensure_ascii=False), json.dumps({"instruction": "\ud800", "output": "b"}),
                               "[" * 100_000, '{"instruction": ' + "9" * 5000 + ', "output": "b"}']) + "\n")
    loaded = data.read(path)
    assert loaded.conversations[0][0]["content"] == "Line\u2028one" and len(loaded.conversations) == 1
    assert bad(loaded) == ["d.jsonl:2 ('instruction' holds text that is not valid Unicode (a lone surrogate such as "
                           "\\ud800))", "d.jsonl:3 (not JSON)", "d.jsonl:4 (not JSON)"]
    whole = tmp_path / "deep.json"
    whole.write_text("[" * 100_000)
    with pytest.raises(data.DataError) as e:
        data.read(whole)
    assert e.value.key == "data.bad_json"


def test_a_text_file_named_parquet_is_one_line(tmp_path, capfd):
    """The tester's N17 (issue 46): a text file named .parquet printed the datasets library's "Failed to read schema
    … ArrowInvalid" lines before yichui's own: only the one line, naming the file."""
    path = tmp_path / "fake.parquet"
    path.write_text("hello world\n")
    with pytest.raises(data.DataError) as e:
        data.load(str(path))
    assert e.value.key == "data.bad_table" and "Parquet magic bytes" in e.value.params["error"]
    out, err = capfd.readouterr()
    assert "Failed to read schema" not in out + err, out + err
