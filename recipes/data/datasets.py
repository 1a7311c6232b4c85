"""Instruction datasets → conversations.

Files: json (a list), jsonl, csv and parquet (the last two read with the `datasets` library). Formats, detected from
the first record: alpaca (instruction / input / output [/ system]), sharegpt (conversations: from / value), OpenAI
messages (messages: role / content), prompt/completion (strings, or lists of messages). A path may end in ``#N``: a
seeded random sample of N records.

A conversation is a list of ``{"role": "system"|"user"|"assistant", "content": str}`` dicts ending with an assistant
turn. Training uses trl's conversational prompt-completion form (prompt = every turn but the last, completion = the
last assistant turn), so the loss covers assistant tokens only, whatever the model's chat template.

Image-text records (issue 22), in the forms users have: messages whose content is a list of parts
(``{"type": "image", "image": PATH}``, OpenAI's ``{"type": "image_url", "image_url": {"url": PATH}}``,
``{"type": "text", "text": …}``), or bare ``{"type": "image"}`` parts / ``<image>`` placeholders in the text
(sharegpt, LLaMA-Factory's form) with the files in an ``images`` column (paths, or ``{"bytes", "path"}`` as parquet
files written by the ``datasets`` library hold them). In the conversation such a turn's content becomes a list of
parts and every image part carries its source (``"image"``: an absolute path, or the bytes), so sampling and splits
keep each image with its record. A path is resolved against the dataset file's folder; a missing or unreadable image,
a remote URL, or placeholders that do not match the images make the record malformed, with the reason. Images in an
``images`` column and no placeholder at all go before the first user turn's text (as ms-swift places them), so
alpaca records with images work too. An image folder in Hugging Face's ImageFolder layout (a ``metadata.jsonl`` /
``.json`` / ``.csv`` / ``.parquet`` beside the images, its ``file_name`` column naming each record's image or images)
is read as that file with ``file_name`` as the ``images`` column.
"""
from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from recipes.base import Msg, Refusal

FORMATS = ("alpaca", "sharegpt", "messages", "prompt_completion")
SUFFIXES = (".json", ".jsonl", ".csv", ".parquet")
ROLES = ("system", "user", "assistant")
OPENAI_ROLES = {r: r for r in ROLES}  # messages / prompt-completion turns already use the chat-template roles
SHAREGPT_ROLES = {"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant", "system": "system",
                  "chatgpt": "assistant", "bing": "assistant", "bard": "assistant"}
SAMPLE_SEED = 42


class DataError(Refusal):
    """A dataset that cannot be used."""


class BadRecord(ValueError):
    """A malformed record, with the reason shown beside its line (an image that is missing, the last turn the
    user's, …): a catalogue key (``data.why.*``) and its values."""

    def __init__(self, key: str, /, **params):
        super().__init__(key)
        self.msg = Msg(key, params)


IMAGE = "<image>"  # the text placeholder of sharegpt / LLaMA-Factory records


@dataclass
class Loaded:
    """Conversations read from a file, the detected format, and the records that were malformed (``file:line``)."""

    conversations: list[list[dict]]
    format: str
    bad: list[Msg] = field(default_factory=list)  # data.bad_at: "file:line (why)", in the user's language
    total: int = 0


_R = TypeVar("_R")  # a record: a conversation, or a preference pair


def bundled_dataset_path() -> Path:
    return Path(__file__).parent / "demo_instructions.jsonl"


def split_sample(ref: str | Path) -> tuple[Path, int | None]:
    """``sft.jsonl#200`` → (Path("sft.jsonl"), 200); no suffix → (path, None)."""
    m = re.fullmatch(r"(.+)#(\d+)", str(ref))
    return (Path(m.group(1)), int(m.group(2))) if m else (Path(ref), None)


def _read_rows(path: Path) -> list[tuple[int, object]]:
    """(line or row number, parsed record)."""
    if path.suffix in (".csv", ".parquet"):
        from datasets import load_dataset
        from datasets.utils import logging as ds_logging

        level = ds_logging.get_verbosity()
        # its "Failed to read schema …" lines: the one line below says it (the tester's N17: three lines first)
        ds_logging.set_verbosity(ds_logging.CRITICAL)
        try:
            table = _undecoded(load_dataset(path.suffix[1:], data_files=str(path), split="train"))
        except Exception as e:  # noqa: BLE001 - the library's parse errors, told as one line
            raise DataError("data.bad_table", path=str(path), error=str(e).splitlines()[0][:160]) from None
        finally:
            ds_logging.set_verbosity(level)
        first = 2 if path.suffix == ".csv" else 1  # csv: line 1 is the header
        return [(i + first, {k: _decode(v) for k, v in row.items()}) for i, row in enumerate(table)]
    raw = path.read_bytes()
    try:  # utf-8-sig: a byte-order mark (editors on Windows write one) is not part of the first record
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:  # where, so the user can find it (issue 46 item 21)
        at = raw[:e.start].count(b"\n") + 1
        raise DataError("data.not_text_at", path=str(path), line=at, byte=e.start) from None
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise DataError("data.bad_json", path=str(path), line=e.lineno, error=e.msg) from None
        except (RecursionError, ValueError) as e:  # nested too deep; an integer of more than 4,300 digits
            raise DataError("data.bad_json", path=str(path), line="?", error=type(e).__name__) from None
        if not isinstance(data, list):
            raise DataError("data.not_a_list", path=str(path))
        return list(enumerate(data, 1))
    rows = []
    # JSON lines end at "\n" only: str.splitlines also splits at U+2028 and other separators a record's text may
    # hold raw (json.dumps(ensure_ascii=False) writes them so), which made one good record two "not JSON" ones
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            rows.append((n, json.loads(line)))
        except (json.JSONDecodeError, RecursionError, ValueError):  # also too deep, or 4,300+ digits
            rows.append((n, None))  # a malformed line: listed with the other bad records
    return rows


def _undecoded(table):
    """A table whose Image columns (a parquet file the datasets library wrote) give ``{"bytes", "path"}`` instead
    of decoded pictures: the original bytes, checked like any image (no decode and re-encode, no bad image raising
    while the rows are read)."""
    from datasets import Image, List, Sequence

    for name, feat in table.features.items():
        if isinstance(feat, Image):
            table = table.cast_column(name, Image(decode=False))
        elif isinstance(feat, (List, Sequence)) and isinstance(feat.feature, Image):
            table = table.cast_column(name, type(feat)(Image(decode=False)))
    return table


def _decode(v):
    """csv cells holding JSON lists (conversations, messages) become lists."""
    if isinstance(v, str) and v[:1] == "[":
        try:
            return json.loads(v)
        except ValueError:
            return v
    return v


# the fields each flat format's record must have (detect_format); a record with some of its file's and none of
# another format's is named by the ones it lacks (the tester's 21-9: "format ? in a file of format alpaca")
FORMAT_KEYS = {"alpaca": ("instruction", "output"), "prompt_completion": ("prompt", "completion")}


def detect_format(row: object) -> str | None:
    if not isinstance(row, dict):
        return None
    if isinstance(row.get("messages"), list):
        return "messages"
    if isinstance(row.get("conversations"), list):
        return "sharegpt"
    if "instruction" in row and "output" in row:
        return "alpaca"
    if "prompt" in row and "completion" in row:
        return "prompt_completion"
    return None


def _text(value, required: bool = True, name: str = "content") -> str:
    """A field that must be text (non-empty when required); anything else marks the record malformed (BadRecord,
    naming the field)."""
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise BadRecord("data.why.empty" if value is None else "data.why.not_text", field=name)
    if required and not value.strip():
        raise BadRecord("data.why.empty", field=name)
    if not valid_unicode(value):
        raise BadRecord("data.why.bad_unicode", field=name)
    return value


def valid_unicode(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8: a JSON escape such as \\ud800 decodes to a lone surrogate, which the
    tokenizer and every file write then fail on (a traceback before)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _turns(items, role_key: str, text_key: str, roles: dict, images: list | None = None) -> list[dict]:
    """Turns of ``role_key``/``text_key`` dicts. ``images``: the record's image column, taken in order by its image
    placeholders (a list of parts, or ``<image>`` in the text); None for a record without one."""
    conv = []
    for m in items:
        if not isinstance(m, dict):
            raise BadRecord("data.why.turn_not_object")
        if m.get(role_key) is None:  # said as missing: "role 'None' is not one of …" read as a role named None
            raise BadRecord("data.why.no_role", key=role_key)
        if not isinstance(m.get(role_key), str) or m.get(role_key) not in roles:  # a list is no role (unhashable)
            raise BadRecord("data.why.bad_role", key=role_key, role=str(m.get(role_key))[:40],
                            roles=list(roles))
        role, value = roles[m[role_key]], m.get(text_key)
        if isinstance(value, list) or (images is not None and isinstance(value, str) and IMAGE in value):
            parts = _parts(value, images)
            text_only = all(p["type"] == "text" for p in parts)  # OpenAI's list of text parts: one string
            conv.append({"role": role, "content": "\n".join(p["text"] for p in parts) if text_only else parts})
        else:
            conv.append({"role": role, "content": _text(value, required=role != "system", name=text_key)})
    return conv


def _parts(value, images: list | None) -> list[dict]:
    """A turn's content as parts: ``{"type": "text", "text"}`` and ``{"type": "image", "image": SOURCE}`` with the
    source still as the record gives it (resolved by :func:`_resolve_images`); bare placeholders take the next entry of
    ``images``."""
    pool = images if images is not None else []
    if isinstance(value, str):  # "<image>What is this?" with an images column
        pieces = value.split(IMAGE)
        value = [x for i, t in enumerate(pieces)
                 for x in ([{"type": "image"}] if i else []) + ([{"type": "text", "text": t}] if t.strip() else [])]
    out = []
    for part in value:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            out.append({"type": "text", "text": _text(part.get("text"), name="text")})
        elif kind in ("image", "image_url"):
            if kind == "image_url":  # OpenAI's {"image_url": {"url": …}} (or the URL itself)
                url = part.get("image_url")
                src = url.get("url") if isinstance(url, dict) else url
            else:
                src = part.get("image") or part.get("path")
            if src is None:
                if not pool:
                    raise BadRecord("data.why.placeholders_over_images")
                src = pool.pop(0)
            out.append({"type": "image", "image": src})
        else:
            raise BadRecord("data.why.bad_part", kind=str(kind)[:40])
    if not out:
        raise BadRecord("data.why.empty", field="content")
    return out


def _resolve_images(conv: list[dict], base: Path, left: list) -> None:
    """Each image part's source made an absolute path (relative ones against ``base``) or bytes, and checked: it
    opens as an image (PIL reads its header). Raises BadRecord: a missing or unreadable file, a remote URL, or
    images the placeholders did not take (``left``)."""
    if left:
        raise BadRecord("data.why.images_over_placeholders", n=len(left))
    for turn in conv:
        for part in turn["content"] if isinstance(turn["content"], list) else ():
            if part["type"] != "image":
                continue
            src = part["image"]
            if isinstance(src, dict):  # {"bytes": …, "path": …}: the datasets library's Image feature, undecoded
                src = src.get("bytes") or src.get("path")
            elif hasattr(src, "save"):  # decoded by the datasets library (parquet with an Image column): its bytes
                import io

                buf = io.BytesIO()
                src.save(buf, format=src.format or "PNG")
                src = buf.getvalue()
            if isinstance(src, str) and src.startswith("data:"):  # OpenAI's inline data:image/...;base64,…
                import base64
                import binascii

                try:
                    src = base64.b64decode(src.split(",", 1)[1], validate=True)
                except (IndexError, ValueError, binascii.Error):
                    raise BadRecord("data.why.inline_not_base64") from None
            if isinstance(src, str):
                if src.startswith(("http://", "https://")):
                    raise BadRecord("data.why.remote_image", src=src[:60])
                try:
                    path = Path(src[7:] if src.startswith("file://") else src).expanduser()
                    path = path if path.is_absolute() else base / path
                    found = path.is_file()
                except (OSError, ValueError):  # a name too long for the file system, a NUL byte
                    found = False
                if not found:
                    raise BadRecord("data.why.image_not_found", src=src[:80])
                src = str(path.resolve())
            elif not isinstance(src, (bytes, bytearray)):
                raise BadRecord("data.why.image_not_path")
            _check_image(src)
            part["image"] = src


def _check_image(src: str | bytes) -> None:
    import io

    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(src) if isinstance(src, (bytes, bytearray)) else src) as img:
            img.verify()
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError) as e:
        # DecompressionBombError: over twice PIL's pixel limit (~179 M pixels): a bad record, not a crash
        name = "bytes" if isinstance(src, (bytes, bytearray)) else Path(src).name
        raise BadRecord("data.why.image_unreadable", name=name, error=type(e).__name__) from None


def text_of(content) -> str:
    """A turn's content as text to show: a string as it is; parts joined, each image as ``[image]``."""
    if isinstance(content, str):
        return content
    return " ".join("[image]" if p["type"] == "image" else str(p.get("text", "")) for p in content)


def has_images(conv: list[dict]) -> bool:
    return any(isinstance(m["content"], list) and any(p["type"] == "image" for p in m["content"]) for m in conv)


def _to_conversation(row: dict, fmt: str, base: Path | None = None) -> list[dict]:
    """The record as a conversation; image parts resolved against ``base`` (the dataset file's folder).

    Raises:
        KeyError, TypeError: a malformed record. BadRecord: the same, with its reason.
    """
    column = row.get("images")
    images = None if column is None else list(column) if isinstance(column, list) else [column]
    if fmt == "alpaca":
        user = _text(row.get("instruction"), name="instruction").strip()
        extra = _text(row.get("input"), required=False, name="input").strip()
        if extra:
            user += "\n\n" + extra
        system = _text(row.get("system"), required=False, name="system")
        conv = [{"role": "system", "content": system}] if system else []
        conv += [{"role": "user", "content": user},
                 {"role": "assistant", "content": _text(row.get("output"), name="output")}]
    elif fmt == "sharegpt":
        conv = _turns(row["conversations"], "from", "value", SHAREGPT_ROLES, images)
        if row.get("system"):
            conv = [{"role": "system", "content": _text(row["system"], name="system")}] + conv
    elif fmt == "messages":
        conv = _turns(row["messages"], "role", "content", OPENAI_ROLES, images)
    else:
        p, c = row["prompt"], row["completion"]
        prompt = _turns(p, "role", "content", OPENAI_ROLES, images) if isinstance(p, list) else \
            [{"role": "user", "content": _text(p, name="prompt")}]
        completion = _turns(c, "role", "content", OPENAI_ROLES, images) if isinstance(c, list) else \
            [{"role": "assistant", "content": _text(c, name="completion")}]
        conv = prompt + completion
    if not any(m["role"] == "user" for m in conv):  # nothing to answer: a system-only (or empty) conversation
        raise BadRecord("data.why.no_user_turn")
    if conv[-1]["role"] != "assistant":  # the model would learn nothing of this turn
        raise BadRecord("data.why.last_not_assistant", role=conv[-1]["role"])
    if images and not has_images(conv):  # an images column and no placeholder at all: before the first question
        first: dict = next(m for m in conv if m["role"] == "user")
        text = first["content"] if isinstance(first["content"], str) else ""
        first["content"] = [{"type": "image", "image": src} for src in images] \
            + ([{"type": "text", "text": text}] if text.strip() else [])
        images = []
    if images is not None or has_images(conv):
        _resolve_images(conv, base or Path("."), images or [])
    return conv


def read(ref: str | Path) -> Loaded:
    """Read a dataset (``path`` or ``path#N``) into conversations, listing malformed records instead of stopping.

    Raises:
        DataError: no such file, a folder, not UTF-8, unreadable table, empty, or a first record of no known format.
    """
    path, sample = split_sample(ref)
    head, hash_, tail = str(ref).rpartition("#")
    if hash_ and (sample == 0 or (sample is None and (Path(head).is_file() or Path(head).is_dir()))):
        raise DataError("data.bad_sample", path=head, value=tail)  # file.jsonl#0, #-5, #abc
    folder = path.is_dir()
    if folder:  # an image folder (Hugging Face's ImageFolder layout): its metadata file names each record's image
        path = next((path / f"metadata{s}" for s in SUFFIXES if (path / f"metadata{s}").is_file()), path)
        if path.is_dir():
            raise DataError("data.is_folder", path=str(path))
    if not path.is_file():
        if path.exists():  # a FIFO, a socket or a device: there, but no file to read (it may never end)
            raise DataError("data.not_a_file", path=str(path))
        raise DataError("data.no_file", path=str(path))
    if path.suffix not in SUFFIXES:
        raise DataError("data.bad_suffix", path=str(path), suffixes=list(SUFFIXES))
    rows = _read_rows(path)
    if folder:  # ImageFolder's file_name column (one file, or a list) is the record's images
        rows = [(n, {k: v for k, v in r.items() if k != "file_name"} | {"images": r["file_name"]})
                if isinstance(r, dict) and "file_name" in r else (n, r) for n, r in rows]
    if not rows:
        raise DataError("data.empty", path=str(path))
    _some_json(path, rows)
    fmt = next(filter(None, (detect_format(r) for _, r in rows)), None)
    if fmt is None:
        raise DataError("data.unknown_format", path=str(path), formats=list(FORMATS))
    convs: list[list[dict]] = []
    bad: list[Msg] = []
    for n, row in rows:
        at = f"{path.name}:{n}"
        try:
            if row is None:  # a .jsonl line that is not JSON
                raise BadRecord("data.why.not_json")
            if not isinstance(row, dict):
                raise BadRecord("data.why.not_object")
            if (found := detect_format(row)) != fmt:  # one format per file: the first record's
                lacks = [k for k in FORMAT_KEYS.get(fmt, ()) if k not in row]
                if found is None and lacks:  # the file's format, a field short (an alpaca row without "output")
                    raise BadRecord("data.why.lacks", format=fmt, fields=list(lacks))
                if found is None:  # a record of no format ("format ? in a file of format messages" read as a bug)
                    raise BadRecord("data.why.no_format", format=fmt, keys=", ".join(map(str, row))[:60])
                raise BadRecord("data.why.other_format", found=found, format=fmt, keys=", ".join(map(str, row))[:60])
            convs.append(_to_conversation(row, fmt, path.parent))
        except BadRecord as e:
            bad.append(Msg("data.bad_at", {"at": at, "why": e.msg}))
        except (KeyError, TypeError, AttributeError) as e:  # a shape no check above names: the field at least
            bad.append(Msg("data.bad_at", {"at": at, "why": Msg("data.why.shape", {"error": str(e)[:60]})}))
    return Loaded(seeded_sample(convs, sample), fmt, bad, len(rows))


def file_rows(ref: str | Path) -> tuple[Path, int | None, list[tuple[int, object]]]:
    """(path, sample size or None, its rows with their line numbers) of a record file ``path`` or ``path#N`` — the
    preference and prompt readers' opening (:func:`read` adds the image-folder layout to it).

    Raises:
        DataError: a bad ``#N``, a folder, no such file (or not a regular one), an unknown suffix, not UTF-8, no rows.
    """
    path, sample = split_sample(ref)
    head, hash_, tail = str(ref).rpartition("#")
    if hash_ and (sample == 0 or (sample is None and Path(head).exists())):
        raise DataError("data.bad_sample", path=head, value=tail)  # file.jsonl#0, #-5, #abc
    if path.is_dir():
        raise DataError("data.is_folder", path=str(path))
    if not path.is_file():
        raise DataError("data.not_a_file" if path.exists() else "data.no_file", path=str(path))
    if path.suffix not in SUFFIXES:
        raise DataError("data.bad_suffix", path=str(path), suffixes=list(SUFFIXES))
    rows = _read_rows(path)
    if not rows:
        raise DataError("data.empty", path=str(path))
    _some_json(path, rows)
    return path, sample, rows


def _some_json(path: Path, rows: list[tuple[int, object]]) -> None:
    """Raises DataError ``data.no_json`` when no line of a JSON-lines file is JSON: said as the syntax it is, not as
    "unknown record format" (issue 46 trial J, J7)."""
    if rows and all(r is None for _, r in rows):
        raise DataError("data.no_json", path=str(path), line=rows[0][0])


def seeded_sample(records: list[_R], n: int | None, seed: int = SAMPLE_SEED) -> list[_R]:
    """``n`` of the records, chosen with the dataset seed and kept in file order; all of them when ``n`` is None or
    not fewer."""
    if n is None or n >= len(records):
        return records
    return [records[i] for i in sorted(random.Random(seed).sample(range(len(records)), n))]


def refuse_bad(ref: str | Path, bad: list[Msg], good: int, skip_bad: bool) -> str:
    """The dataset's path, once its malformed records (``bad``) are allowed — none, or ``skip_bad`` — and ``good``
    records are left. Raises DataError ``data.all_bad`` (no good record), ``data.bad_records`` (naming the first
    five) or ``data.empty``."""
    path = str(split_sample(ref)[0])
    if bad and not good:  # every record malformed: said so — neither "no records" (tryout) nor the advice to skip
        raise DataError("data.all_bad", path=path, count=len(bad), where=bad[:3])  # them, which leaves none (trial W)
    if bad and not skip_bad:
        raise DataError("data.bad_records", path=path, count=len(bad), where=bad[:5])
    if not good:
        raise DataError("data.empty", path=path)
    return path


def load(ref: str | Path, skip_bad: bool = False, images: bool = False) -> Loaded:
    """A dataset ready to train on; malformed records abort (naming the first ones) unless ``skip_bad``.
    ``images``: the caller takes image-text records (the vision-language trainer); others refuse them.

    Raises:
        DataError: as :func:`read`, ``data.bad_records`` for malformed records when not skipping, and
            ``data.has_images`` for image-text records where they are not taken.
    """
    loaded = read(ref)
    path = refuse_bad(ref, loaded.bad, len(loaded.conversations), skip_bad)
    if not images and (n := sum(has_images(c) for c in loaded.conversations)):
        raise DataError("data.has_images", path=path, n=n)
    return loaded


def load_records(ref: str | Path, skip_bad: bool = False, images: bool = False) -> list[list[dict]]:
    """The conversations of :func:`load`."""
    return load(ref, skip_bad, images).conversations


def train_validation(convs: list[_R], val_ratio: float, seed: int = SAMPLE_SEED) -> tuple[list[_R], list[_R]]:
    """A seeded split: ``val_ratio`` of the records — conversations, or preference pairs — (at least one when the
    ratio is > 0) held out."""
    if val_ratio <= 0 or len(convs) < 2:
        return convs, []
    n_val = max(1, int(round(len(convs) * val_ratio)))
    order = list(range(len(convs)))
    random.Random(seed).shuffle(order)
    held = set(order[:n_val])
    return [c for i, c in enumerate(convs) if i not in held], [c for i, c in enumerate(convs) if i in held]


def to_prompt_completion(convs: list[list[dict]]) -> list[dict]:
    """Conversations → trl's conversational prompt-completion records. When any has images, every record takes
    trl's image-text form (one table needs one shape): each turn's content a list of parts, images as bare
    ``{"type": "image"}`` placeholders, their sources in order in an ``images`` column (empty for a text record)."""
    if not any(has_images(c) for c in convs):
        return [{"prompt": c[:-1], "completion": c[-1:]} for c in convs]
    out = []
    for c in convs:
        parts = [m | {"content": [{"type": "image"} if p["type"] == "image" else p for p in m["content"]]
                      if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]} for m in c]
        sources = [p["image"] for m in c if isinstance(m["content"], list) for p in m["content"] if p["type"] == "image"]
        out.append({"prompt": parts[:-1], "completion": parts[-1:], "images": sources})
    return out
