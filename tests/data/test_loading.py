"""gem.data.load: local files of every format, bundled names, renaming, caching, the offline hub."""

import csv
import gzip
import json
import time

import pytest

import gem.data
from gem.errors import DatasetNotFound, ResourceUnavailable
from tests.conftest import needs_extra

ROWS = [{"question": "1+1", "ans": "2"}, {"question": "2*3", "ans": "6"}]


def _write(path, rows=ROWS):
    name = path.name
    if name.endswith(".jsonl.gz"):
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            fh.write("".join(json.dumps(r) + "\n" for r in rows))
    elif name.endswith(".jsonl"):
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    elif name.endswith(".json"):
        path.write_text(json.dumps(rows))
    elif name.endswith(".csv"):
        with open(path, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    elif name.endswith(".parquet"):
        needs_extra("qa")  # pyarrow
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), path)
    return path


@pytest.mark.parametrize("name", ["d.jsonl", "d.jsonl.gz", "d.json", "d.csv", "d.parquet"])
def test_local_formats_are_read_and_renamed(tmp_path, name):
    path = _write(tmp_path / name)
    rows = gem.data.load(str(path), family="math", question_key="question", answer_key="ans")
    assert rows == [{"problem": "1+1", "answer": "2"}, {"problem": "2*3", "answer": "6"}]


def test_qa_family_keeps_question_field_and_other_columns(tmp_path):
    path = _write(tmp_path / "d.jsonl", [{"question": "q", "golden": ["a", "b"], "id": 7}])
    rows = gem.data.load(str(path), family="qa", answer_key="golden")
    assert rows == [{"question": "q", "answer": ["a", "b"], "id": 7}]


def test_keys_mapping_for_other_fields(tmp_path):
    path = _write(tmp_path / "d.jsonl", [{"prompt": "p", "test_cases": {"inputs": []}}])
    rows = gem.data.load(str(path), keys={"problem": "prompt", "tests": "test_cases"})
    assert rows == [{"problem": "p", "tests": {"inputs": []}}]


def test_missing_column_names_the_columns(tmp_path):
    path = _write(tmp_path / "d.jsonl")
    with pytest.raises(ValueError, match="no column.*'problem'.*ans, question"):
        gem.data.load(str(path), family="math")


def test_question_key_without_family_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="family="):
        gem.data.load(str(_write(tmp_path / "d.jsonl")), question_key="question")


def test_json_split_dict_and_directory_of_splits(tmp_path):
    (tmp_path / "s.json").write_text(json.dumps({"train": ROWS[:1], "test": ROWS[1:]}))
    assert gem.data.load(str(tmp_path / "s.json"), split="test") == ROWS[1:]
    with pytest.raises(ValueError, match="no split 'dev'.*train, test"):
        gem.data.load(str(tmp_path / "s.json"), split="dev")
    folder = tmp_path / "ds"
    folder.mkdir()
    _write(folder / "train.jsonl", ROWS[:1])
    _write(folder / "test.csv", ROWS[1:])
    assert gem.data.load(str(folder), split="test") == ROWS[1:]
    assert gem.data.load(str(folder)) == ROWS[:1]


def test_cache_returns_same_rows_and_rereads_changed_file(tmp_path):
    path = _write(tmp_path / "d.jsonl")
    first = gem.data.load(str(path))
    second = gem.data.load(str(path))
    assert first == second and first is not second and first[0] is second[0]
    time.sleep(0.01)
    _write(path, ROWS[:1] + [{"question": "new", "ans": "x"}])
    assert gem.data.load(str(path))[1]["question"] == "new"


def test_missing_file_or_bundled_name_is_dataset_not_found(tmp_path):
    # a mistake in the setup, never the hub outage (ResourceUnavailable) that tests skip over
    with pytest.raises(DatasetNotFound, match="does not exist") as exc:
        gem.data.load(str(tmp_path / "nope.jsonl"))
    assert not isinstance(exc.value, ResourceUnavailable)
    with pytest.raises(DatasetNotFound, match=r"'arithmetc' is not a bundled dataset \(bundled: arithmetic, "):
        gem.data.load("arithmetc")


def test_bad_jsonl_line_is_reported(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"a": 1}\n{oops\n')
    with pytest.raises(ValueError, match="line 2"):
        gem.data.load(str(path))


def test_bundled_names_load():
    names = gem.data.bundled_names()
    assert "arithmetic" in names
    rows = gem.data.load("arithmetic", family="math")
    assert len(rows) >= 1000 and {"problem", "answer"} <= set(rows[0])


def test_offline_hub_fails_fast_with_instructions(monkeypatch):
    # datasets (and huggingface_hub) imported BEFORE the variable is set: it must still hold.
    needs_extra("qa")  # datasets
    import huggingface_hub.constants as hub_constants

    before = hub_constants.HF_HUB_OFFLINE
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.monotonic()
    with pytest.raises(ResourceUnavailable) as exc:
        gem.data.load("axon-rl/definitely-not-cached-xyz", split="train")
    assert time.monotonic() - start < 20
    assert "axon-rl/definitely-not-cached-xyz" in str(exc.value) and "dataset_name=" in str(exc.value)
    assert hub_constants.HF_HUB_OFFLINE == before  # the library's flag is restored after the call


def test_unreachable_hub_is_detected_without_datasets(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # discard port: nothing listens
    gem.data.clear_cache()
    start = time.monotonic()
    with pytest.raises(ResourceUnavailable, match="cannot be reached"):
        gem.data.load("someone/some-set")
    assert time.monotonic() - start < 10
    gem.data.clear_cache()
