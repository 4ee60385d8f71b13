"""``gem view``: the JSON endpoints, and the page itself in headless Chromium (skipped without it)."""

from __future__ import annotations

import contextlib
import json
import shutil
import urllib.request
from pathlib import Path

import pytest

from gem.errors import install_hint
from gem.eval.runner import EvalConfig, EvalRunner
from gem.eval.viewer import Viewer

GAME = "game:GuessTheNumber-v0-easy"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


@pytest.fixture
def eval_dir(tmp_path: Path) -> Path:
    out = tmp_path / "run"
    EvalRunner(EvalConfig(env_ids=[GAME], out=str(out), agent="solver", episodes=2, progress=False)).run()
    EvalRunner(
        EvalConfig(
            env_ids=[GAME, "game:GuessTheNumber-v0-hard"],
            out=str(tmp_path / "r2"),
            agent="random",
            episodes=3,
            progress=False,
        )
    ).run()
    # one directory with successes, failures and an error record
    with (out / "episodes.jsonl").open("a") as fh:
        for line in (tmp_path / "r2" / "episodes.jsonl").read_text().splitlines():
            rec = json.loads(line)
            rec["key"] = f"{rec['env_id']}#{rec['index'] + 10}"
            rec["index"] += 10
            fh.write(json.dumps(rec) + "\n")
        err = dict(
            rec,
            key=f"{GAME}#99",
            env_id=GAME,
            index=99,
            status="error",
            turns=[],
            success=False,
            error={"stage": "model", "turn": 1, "type": "ModelRequestError", "message": "server down"},
        )
        fh.write(json.dumps(err) + "\n")
    return out


def _get(url: str) -> tuple[int, object]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_endpoints(eval_dir: Path) -> None:
    with Viewer(eval_dir) as viewer:
        status, rows = _get(viewer.url + "api/episodes")
        assert status == 200 and len(rows) == 2 + 6 + 1
        assert rows[0]["key"] == f"{GAME}#0" and rows[0]["success"] is True
        status, rec = _get(viewer.url + "api/episode?key=" + urllib.parse.quote(f"{GAME}#0"))
        assert status == 200 and rec["turns"][-1]["reward"] == 1.0
        status, body = _get(viewer.url + "api/episode?key=nope")
        assert status == 404 and "nope" in body["error"]
        status, summary = _get(viewer.url + "api/summary")
        assert summary["envs"][GAME]["errors"] == 1
        with urllib.request.urlopen(viewer.url, timeout=10) as resp:
            assert b"<title>gem view</title>" in resp.read()


def _get_with_host(viewer: Viewer, path: str, host: str) -> tuple[int, bytes]:
    import http.client

    address, port = viewer.httpd.server_address[:2]
    conn = http.client.HTTPConnection(address, port, timeout=10)
    try:
        conn.putrequest("GET", path, skip_host=True)
        conn.putheader("Host", host)
        conn.endheaders()
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def test_viewer_answers_only_loopback_host_names(eval_dir: Path) -> None:
    # A page on evil.example whose name was re-pointed at 127.0.0.1 (DNS rebinding) sends
    # Host: evil.example; it must not read the episodes (and their gold answers).
    with Viewer(eval_dir) as viewer:
        port = viewer.httpd.server_address[1]
        for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example", "", "[::2]"):
            for path in ("/", "/api/episodes", "/api/episode?key=" + urllib.parse.quote(f"{GAME}#0"), "/api/summary"):
                status, body = _get_with_host(viewer, path, host)
                assert status == 403 and b"gold" not in body and b"refused" in body, (host, path)
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost", "LOCALHOST", f"[::1]:{port}"):
            status, body = _get_with_host(viewer, "/api/episodes", host)
            assert status == 200 and json.loads(body), host


def test_viewer_uses_the_host_rule_of_gem_serve() -> None:
    from gem.eval.viewer import allowed_hosts, host_name
    from gem.server.limits import LOOPBACK_HOSTS

    assert allowed_hosts("127.0.0.1") == set(LOOPBACK_HOSTS) and allowed_hosts("::1") == set(LOOPBACK_HOSTS)
    assert allowed_hosts("0.0.0.0") is None  # bound to the network on purpose: any name, as gem serve
    assert host_name("[::1]:8765") == "::1" and host_name("LocalHost:80") == "localhost"


def test_a_bad_line_breaks_no_route(eval_dir: Path) -> None:
    path = eval_dir / "episodes.jsonl"
    lines = path.read_text().splitlines()
    good = json.loads(lines[0])
    hostile = ["{torn", "null", json.dumps({**good, "key": 7}), json.dumps({**good, "key": "z#1", "turns": "x"}),
               json.dumps({**good, "key": "z#2", "num_turns": {"a": 1}})]
    path.write_text("\n".join(lines[:1] + hostile + lines[1:]) + "\n")
    with Viewer(eval_dir) as viewer:
        status, rows = _get(viewer.url + "api/episodes")
        assert status == 200 and len(rows) == 2 + 6 + 1
        status, summary = _get(viewer.url + "api/summary")
        assert status == 200 and summary["envs"][GAME]["episodes"] == 6
        assert [p.split(": ", 1)[0] for p in summary["problems"]] == [f"{path} line {n}" for n in range(2, 7)]
        status, problems = _get(viewer.url + "api/problems")
        assert status == 200 and problems == summary["problems"]
        status, table = _get(viewer.url + "api/envs")
        assert status == 200 and {r["env_id"] for r in table} == {GAME, "game:GuessTheNumber-v0-hard"}
        status, rec = _get(viewer.url + "api/episode?key=" + urllib.parse.quote(f"{GAME}#0"))
        assert status == 200 and rec["key"] == f"{GAME}#0"


def test_viewer_refuses_a_directory_without_episodes(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="episodes.jsonl"):
        Viewer(tmp_path)


def _selenium_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("selenium") is not None


NEEDS_CHROMIUM = pytest.mark.skipif(
    not (CHROMIUM and CHROMEDRIVER and _selenium_installed()),
    reason="needs chromium and chromedriver (apt)" if not (CHROMIUM and CHROMEDRIVER)
    else f"needs selenium, from the eval extra ({install_hint('eval')})",
)


@contextlib.contextmanager
def chromium(tmp_path: Path):
    """A headless Chromium (selenium) that is closed afterwards."""
    webdriver = pytest.importorskip("selenium.webdriver")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-dev-shm-usage",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--window-size=1200,800",
    ):
        opts.add_argument(flag)
    driver = webdriver.Chrome(options=opts, service=webdriver.ChromeService(executable_path=CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()


def _screenshot(driver, path: Path) -> None:
    assert driver.save_screenshot(str(path))
    assert path.read_bytes()[:4] == b"\x89PNG" and path.stat().st_size > 10_000


@NEEDS_CHROMIUM
def test_page_in_headless_chromium(eval_dir: Path, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    with Viewer(eval_dir) as viewer, chromium(tmp_path) as driver:
        if True:
            driver.get(viewer.url)
            wait = WebDriverWait(driver, 20)
            wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-loaded") == "1")
            items = driver.find_elements(By.CSS_SELECTOR, "#list li")
            assert len(items) == 9
            # filter: errors only, then successes of one env
            Select(driver.find_element(By.ID, "outcome-filter")).select_by_value("error")
            items = driver.find_elements(By.CSS_SELECTOR, "#list li")
            assert [li.get_attribute("data-key") for li in items] == [f"{GAME}#99"]
            items[0].click()
            wait.until(lambda d: "server down" in d.find_element(By.ID, "main").text)
            Select(driver.find_element(By.ID, "outcome-filter")).select_by_value("success")
            Select(driver.find_element(By.ID, "env-filter")).select_by_visible_text(GAME)
            items = driver.find_elements(By.CSS_SELECTOR, "#list li")
            assert items and all(li.get_attribute("data-outcome") == "success" for li in items)
            items[0].click()
            wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#main .turn"))
            turns = driver.find_elements(By.CSS_SELECTOR, "#main .turn")
            last_reward = turns[-1].find_element(By.CSS_SELECTOR, ".reward")
            assert last_reward.text == "reward 1" and "pos" in last_reward.get_attribute("class")
            assert "\\boxed{" in turns[0].text and "turn 1" in turns[0].text
            _screenshot(driver, tmp_path / "viewer.png")


@pytest.fixture
def loop_dir(eval_dir: Path) -> Path:
    """eval_dir plus one tool-using episode written with the newer fields: gold, task_reward,
    tool_bonus, infra_error, and per turn finish_reason and tool_bonus."""
    path = eval_dir / "episodes.jsonl"
    old = [json.loads(line) for line in path.read_text().splitlines()]
    for record in old:  # as written before task_reward/tool_bonus existed
        record.pop("task_reward", None)
        record.pop("tool_bonus", None)
        for turn in record.get("turns") or []:
            turn.pop("tool_bonus", None)
    path.write_text("".join(json.dumps(r) + "\n" for r in old))
    rec = json.loads(path.read_text().splitlines()[0])
    turns = [
        {**rec["turns"][0], "turn": 1, "action": "<python>print(2)</python>", "observation": "2",
         "reward": 0.05, "tool_bonus": 0.05, "finish_reason": "stop", "terminated": False,
         "info": {"use_tool": True}},
        {**rec["turns"][0], "turn": 2, "action": "I think the answer is", "observation": "no answer found",
         "reward": -0.1, "tool_bonus": 0.0, "finish_reason": "length", "terminated": True, "info": {}},
    ]
    rec.update(key="math:Tool#0", env_id="math:Tool", index=0, turns=turns, total_reward=-0.05, success=False,
               task_reward=-0.1, tool_bonus=0.05, gold="42", infra_error=None)
    broken = dict(rec, key="math:Tool#1", index=1, turns=turns[:1], total_reward=0.05, task_reward=0.0,
                  infra_error={"component": "grader", "type": "TimeoutError", "message": "grader hung"})
    with (eval_dir / "episodes.jsonl").open("a") as fh:
        fh.write(json.dumps(rec) + "\n" + json.dumps(broken) + "\n")
    return eval_dir


def test_env_table(loop_dir: Path) -> None:
    from gem.eval.viewer import env_table

    table = {row["env_id"]: row for row in env_table(loop_dir)}
    assert table["math:Tool"] == {"env_id": "math:Tool", "episodes": 2, "errors": 1, "success_rate": 0.0,
                                  "mean_task_reward": pytest.approx(-0.05), "mean_tool_bonus": pytest.approx(0.05)}
    game = table[GAME]
    # records written before tool_bonus existed: the whole return is the task's, no tool bonus
    assert game["episodes"] == 6 and game["errors"] == 1 and game["mean_tool_bonus"] is None
    with Viewer(loop_dir) as viewer:
        status, rows = _get(viewer.url + "api/envs")
        assert status == 200 and [r["env_id"] for r in rows] == sorted(table)


@NEEDS_CHROMIUM
def test_landing_table_gold_cut_replies_and_reward_colours(loop_dir: Path, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    with Viewer(loop_dir) as viewer, chromium(tmp_path) as driver:
        driver.get(viewer.url)
        wait = WebDriverWait(driver, 20)
        wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-loaded") == "1")
        rows = {tr.get_attribute("data-env"): [td.text for td in tr.find_elements(By.TAG_NAME, "td")]
                for tr in driver.find_elements(By.CSS_SELECTOR, "#env-summary tbody tr")}
        assert rows["math:Tool"] == ["math:Tool", "2", "0%", "-0.05", "0.05", "1"]
        assert rows[GAME][1] == "6" and rows[GAME][4] == "-" and rows[GAME][5] == "1"
        _screenshot(driver, tmp_path / "landing.png")

        driver.find_element(By.CSS_SELECTOR, '#list li[data-key="math:Tool#0"]').click()
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#main .turn"))
        assert driver.find_element(By.ID, "gold").text == "gold answer: 42"
        first, last = driver.find_elements(By.CSS_SELECTOR, "#main .turn")
        bonus = first.find_element(By.CSS_SELECTOR, ".reward")
        # a tool call's small bonus is a blue "tool bonus", not a green success reward
        assert bonus.text == "tool bonus +0.05" and "bonus" in bonus.get_attribute("class")
        assert "pos" not in bonus.get_attribute("class")
        assert not first.find_elements(By.CSS_SELECTOR, ".cut")
        assert last.find_element(By.CSS_SELECTOR, ".cut").text == "reply cut at the token limit"
        penalty = last.find_element(By.CSS_SELECTOR, ".reward")
        assert penalty.text == "penalty -0.1" and "neg" in penalty.get_attribute("class")
        _screenshot(driver, tmp_path / "episode.png")

        driver.find_element(By.CSS_SELECTOR, '#list li[data-key="math:Tool#1"]').click()
        wait.until(lambda d: "grader hung" in d.find_element(By.ID, "main").text)
        # an old record has no gold: none shown
        driver.find_element(By.CSS_SELECTOR, f'#list li[data-key="{GAME}#0"]').click()
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#main .turn"))
        assert not driver.find_elements(By.ID, "gold")
