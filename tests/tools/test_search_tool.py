"""SearchTool: parsing, formatting, retries, timeouts, failures as observations, threads."""

from __future__ import annotations

import copy
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.conftest import needs_extra

needs_extra("search")  # SearchTool speaks HTTP through requests (the search extra)

from gem.tools.search_tool import SearchTool, format_documents, normalize_search_url

DOCS = [
    {"id": "1", "title": "Harbor Town", "text": "Harbor Town sits on the Blue River."},
    {"id": "2", "title": "Mill Creek", "text": "Mill Creek grows wheat and barley."},
    {"id": "3", "title": "Stone Ridge", "text": "Stone Ridge quarries granite."},
]


@pytest.fixture(scope="module")
def server():
    pytest.importorskip("fastapi")
    pytest.importorskip("bm25s")
    from gem.tools.search_engine.corpus import normalize_document
    from gem.tools.search_engine.launch import serve_app_in_thread
    from gem.tools.search_engine.retrieval_server import create_retrieval_app
    from gem.tools.search_engine.retrievers import BM25Retriever

    docs = [normalize_document(d) for d in DOCS]
    with serve_app_in_thread(create_retrieval_app(BM25Retriever(docs))) as running:
        yield running


@pytest.fixture
def scripted():
    """A server whose /retrieve answers from a script: a list of (status, body, delay)."""
    pytest.importorskip("fastapi")
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse, Response

    from gem.tools.search_engine.launch import serve_app_in_thread

    script: list = []
    calls: list = []
    app = FastAPI()

    @app.get("/health")
    def health():
        return {"status": "ok"}

    content_types: list = []

    def retrieve(request):
        calls.append(time.monotonic())
        content_types.append(request.headers.get("content-type"))
        status, body, delay = script.pop(0) if script else (200, {"result": [[]]}, 0)
        time.sleep(delay)
        if isinstance(body, (dict, list)):
            return JSONResponse(body, status_code=status)
        return Response(body, status_code=status)

    retrieve.__annotations__["request"] = Request  # a real class: this module defers annotations
    app.post("/retrieve")(retrieve)

    with serve_app_in_thread(app) as running:
        running.script, running.calls, running.content_types = script, calls, content_types
        yield running


def hit(title, text):
    return {"document": {"id": "x", "title": title, "text": text, "contents": f'"{title}"\n{text}'}, "score": 1.0}


# ----------------------------------------------------------------------- parsing
def test_no_search_tag_is_not_a_call():
    tool = SearchTool(search_url="http://127.0.0.1:9")
    assert tool.execute_action("<answer>Paris</answer>") == (False, True, "", "")
    assert tool.execute_action("<search>unclosed") == (False, True, "", "")
    assert not tool.has_call("<search>unclosed") and tool.has_call("x <search>q</search>")


def test_empty_query_is_an_error_observation_without_a_request():
    tool = SearchTool(search_url="http://127.0.0.1:9")
    parsed, error, obs, parsed_action = tool.execute_action("think <search>   </search> more")
    assert parsed and error and "empty" in obs and parsed_action == "think <search>   </search>"


def test_constructor_validates_arguments():
    for kwargs, message in [({"topk": 0}, "topk"), ({"timeout": 0}, "timeout"), ({"max_retries": -1}, "max_retries"),
                            ({"wire_format": "xml"}, "wire_format")]:
        with pytest.raises(ValueError, match=message):
            SearchTool(**kwargs)


def test_url_normalization():
    assert normalize_search_url("http://127.0.0.1:8000") == "http://127.0.0.1:8000/retrieve"
    assert normalize_search_url("127.0.0.1:8000/") == "http://127.0.0.1:8000/retrieve"
    assert normalize_search_url("http://h/custom/path") == "http://h/custom/path"


def test_format_documents_matches_search_r1():
    text = format_documents([{"title": "A", "text": "alpha"}, {"title": "B", "text": "beta"}])
    assert text == "Doc 1(Title: A) alpha\nDoc 2(Title: B) beta\n"


# ---------------------------------------------------------------- real server
def test_search_returns_formatted_documents(server):
    tool = SearchTool(search_url=server.url, topk=2)
    parsed, error, obs, parsed_action = tool.execute_action("<think>hmm</think><search>granite quarry</search> trailing")
    assert parsed and not error
    assert parsed_action == "<think>hmm</think><search>granite quarry</search>"
    assert obs.startswith("Doc 1(Title: Stone Ridge) Stone Ridge quarries granite.\n")  # raw, as the original's main
    wrapped = SearchTool(search_url=server.url, topk=2, wrap_observation=True).execute_action("<search>granite</search>")[2]
    assert wrapped == f"\n\n<information>{obs}</information>\n\n"  # gem-llm 0.1.0's form


def test_no_results_is_said_plainly(server):
    _, error, obs, _ = SearchTool(search_url=server.url).execute_action("<search>zzzz qqqq</search>")
    assert not error and "No documents found for: zzzz qqqq" in obs


def test_search_url_from_the_environment(server, monkeypatch):
    monkeypatch.setenv("SEARCH_URL", server.base_url)
    _, error, obs, _ = SearchTool().execute_action("<search>wheat</search>")
    assert not error and "Mill Creek" in obs


def test_msgpack_wire_format(server):
    pytest.importorskip("msgspec")
    _, error, obs, _ = SearchTool(search_url=server.url, wire_format="msgpack", topk=1).execute_action("<search>Blue River</search>")
    assert not error and obs.count("Doc ") == 1 and "Harbor Town" in obs


def test_one_tool_serves_many_threads(server):
    tool = SearchTool(search_url=server.url, topk=1)
    queries = {"granite": "Stone Ridge", "wheat": "Mill Creek", "river": "Harbor Town"}
    seen_sessions = set()
    lock = threading.Lock()

    def run(query):
        out = tool.execute_action(f"<search>{query}</search>")[2]
        with lock:
            seen_sessions.add(id(tool._session()))
        return out

    with ThreadPoolExecutor(8) as pool:
        outputs = list(pool.map(run, list(queries) * 10))
    assert all(queries[q] in out for q, out in zip(list(queries) * 10, outputs))
    assert len(seen_sessions) > 1  # each thread has its own session


def test_a_copy_searches_too(server):
    tool = SearchTool(search_url=server.url)
    tool.execute_action("<search>wheat</search>")
    clone = copy.deepcopy(tool)
    assert "Mill Creek" in clone.execute_action("<search>wheat</search>")[2]


# ------------------------------------------------------------------- failures
def test_no_server_configured_is_an_observation(monkeypatch):
    monkeypatch.delenv("SEARCH_URL", raising=False)
    parsed, error, obs, _ = SearchTool().execute_action("<search>q</search>")
    assert parsed and error and "SEARCH_URL" in obs


def test_unreachable_server_is_an_observation_after_retries():
    from gem.tools.search_engine.launch import free_port

    tool = SearchTool(search_url=f"http://127.0.0.1:{free_port()}", max_retries=2, retry_backoff=0.01)
    parsed, error, obs, _ = tool.execute_action("<search>q</search>")
    assert parsed and error
    assert "[SearchTool Error: could not reach the search server" in obs and "after 3 tries" in obs


def test_transient_5xx_is_retried_then_succeeds(scripted):
    scripted.script.extend([(503, {"detail": "busy"}, 0), (200, {"result": [[hit("T", "found it")]]}, 0)])
    _, error, obs, _ = SearchTool(search_url=scripted.url, retry_backoff=0.01).execute_action("<search>q</search>")
    assert not error and "Doc 1(Title: T) found it" in obs and len(scripted.calls) == 2


def test_client_error_is_not_retried(scripted):
    scripted.script.append((422, {"detail": "'topk' must be an integer"}, 0))
    tool = SearchTool(search_url=scripted.url, retry_backoff=0.01, wire_format="json")  # no format fallback either
    _, error, obs, _ = tool.execute_action("<search>q</search>")
    assert error and "HTTP 422" in obs and "'topk' must be an integer" in obs and len(scripted.calls) == 1


def test_slow_server_times_out(scripted):
    scripted.script.extend([(200, {"result": [[]]}, 1.0)] * 2)
    tool = SearchTool(search_url=scripted.url, timeout=0.2, max_retries=1, retry_backoff=0.01)
    start = time.monotonic()
    _, error, obs, _ = tool.execute_action("<search>q</search>")
    assert error and "did not answer within 0.2 s" in obs
    assert time.monotonic() - start < 1.5


@pytest.mark.parametrize("body", [b"<html>oops</html>", {"result": "nope"}, {"wrong": 1}, {"result": [[{"document": 5}]]}])
def test_malformed_answers_are_observations(scripted, body):
    scripted.script.append((200, body, 0))
    _, error, obs, _ = SearchTool(search_url=scripted.url).execute_action("<search>q</search>")
    assert error and "malformed answer" in obs


def test_hostile_queries_do_not_crash(server):
    tool = SearchTool(search_url=server.url)
    for query in ["\x00\x00", "\ud800 lone surrogate", "x" * 5000, "<search>nested</search>"]:
        parsed, error, obs, _ = tool.execute_action(f"<search>{query}</search>")
        assert parsed and isinstance(obs, str)
        obs.encode("utf-8")


def test_msgpack_is_sent_first_and_json_remembered_for_a_server_that_refuses_it(scripted):
    pytest.importorskip("msgspec")
    tool = SearchTool(search_url=scripted.url, max_retries=0)
    scripted.script.extend([(415, {"detail": "send JSON"}, 0), (200, {"result": [[hit("T", "json answer")]]}, 0),
                            (200, {"result": [[hit("T", "again")]]}, 0)])
    assert tool.execute_action("<search>q</search>")[1:3] == (False, "Doc 1(Title: T) json answer\n")
    assert tool.execute_action("<search>q</search>")[2] == "Doc 1(Title: T) again\n"
    assert scripted.content_types == ["application/msgpack", "application/json", "application/json"]
    scripted.content_types.clear()
    scripted.script.append((200, {"result": [[hit("T", "j")]]}, 0))
    SearchTool(search_url=scripted.url, wire_format="json").execute_action("<search>q</search>")
    assert scripted.content_types == ["application/json"]


def test_a_refusal_in_both_formats_is_reported(scripted):
    pytest.importorskip("msgspec")
    scripted.script.extend([(422, {"detail": "bad fields"}, 0), (422, {"detail": "bad fields"}, 0)])
    _, error, obs, _ = SearchTool(search_url=scripted.url, max_retries=0).execute_action("<search>q</search>")
    assert error and "HTTP 422" in obs and "bad fields" in obs
