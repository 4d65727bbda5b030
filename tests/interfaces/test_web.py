"""The web page, served by `fourfold serve` beside the MCP endpoint: pages rendered on the
server (no JavaScript needed), escaping, the token gate for browsers, repository grants, and
the real page driven in headless Chromium (screenshots kept in test-screenshots/)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import httpx2
import pytest

from fourfold.interfaces.cli import main
from tests.conftest import write_tree
from tests.interfaces.test_mcp_tokens import token
from tests.servers import PROJECT_ROOT, mcp_http_server, server_env

CHROMIUM = os.environ.get("FOURFOLD_TEST_CHROMIUM", "/usr/bin/chromium")
SCREENSHOTS = Path(os.environ.get("FOURFOLD_SCREENSHOTS", PROJECT_ROOT / "test-screenshots"))
HOSTILE_NAME = "<img src=x onerror=alert(9)>.py"

SAMPLE = {
    "config.py": '''\
        """Settings."""
        import json


        def load_config(path):
            """Read the settings file."""
            with open(path) as handle:
                return json.load(handle)
        ''',
    "app.py": '''\
        from config import load_config


        def main():
            settings = load_config("settings.json")
            return start_server(settings)


        def start_server(settings):
            return settings.get("port", 8080)
        ''',
    "xss.py": '''\
        BANNER = "<script>alert('owned')</script>"


        def render_banner():
            return BANNER  # </td></tr><img src=x onerror=alert(2)>
        ''',
    HOSTILE_NAME: "def odd_name():\n    return 1\n",
    "q?x#y%41.py": "def queried():\n    return 2\n",
    "carriage.py": "def cr_test():\n    a = 1\rb = 2\n    c = 3\n    d = 4\n",
    "minified.js": "var a=1;" * 40_000 + "\n",
    "logic.py": "def both_flags(a, b):\n    return a & b\n",
    "pkg/app.py": "def other_settings():\n    return {'settings': 'pkg'}\n",
    "long.txt": "".join(f"entry {n} of the long list\n" for n in range(1, 12_001)),
    "oneline.js": "var settings_marker=1;" + "var zqx=2;" * 60_000 + "\n",
    # namesakes of app.py in subfolders, each more about settings
    **{f"pkg{n}/app.py": f"def settings_{n}():\n"
                         f"    return {{'settings': {n}, 'server': 'settings'}}\n"
       for n in range(30)},
}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The sample repository served on loopback with no token: the page's base URL."""
    base = tmp_path_factory.mktemp("web")
    root = write_tree(base / "sample", SAMPLE)
    (base / "secret.py").write_text("OUTSIDE_SECRET = 'not in the repository'\n")
    (root / "linked.py").symlink_to(base / "secret.py")  # a link out of the repository
    assert main(["index", str(root), "--no-embed"]) == 0
    with mcp_http_server([str(root)]) as (url, _):
        yield url.removesuffix("/mcp")


def get(url: str, **kw) -> httpx2.Response:
    return httpx2.get(url, timeout=30, follow_redirects=False, **kw)


def test_a_result_page_without_javascript(site):
    page = get(f"{site}/", params={"q": "where is load_config defined"})
    assert page.status_code == 200
    html = page.text
    assert "find_definition" in html  # the detected intent is shown
    first = re.search(r'<a class="path" href="([^"]+)">([^<]+)</a>', html)
    assert first and first.group(2).startswith("config.py:5")
    assert first.group(1).startswith("/file/config.py?") and "#L5" in first.group(1)
    assert '<span class="n">def</span>' in html or 'class="k">def</span>' in html  # highlighted
    assert 'class="bar structural"' in html  # a vote bar per modality
    assert "<mark>load_config</mark>" in html  # the question's words marked in the code
    assert "<mark>defined</mark>" not in html
    # filters travel as parameters: a language no file has leaves nothing
    none = get(f"{site}/", params={"q": "load_config", "glob": "nothing/**"}).text
    assert "Nothing found." in none
    more = get(f"{site}/", params={"q": "settings", "file": "app.py"}).text
    assert set(re.findall(r'<a class="path" href="/file/([^?"]+)', more)) == {"app.py"}
    # "show every function": several functions of one file, each its own hit (a question
    # both have with and without the vectors the server embeds in the background)
    functions = get(f"{site}/", params={"q": "load settings and start the server",
                                        "granularity": "function"})
    shown = re.findall(r'<a class="path" href="/file/app.py[^"]*">app.py:(\d+)', functions.text)
    assert len(set(shown)) >= 2, shown
    assert '<option value="function" selected>' in functions.text


def test_a_long_file_is_shown_a_page_at_a_time(site):
    """A file of a million lines was one page of 120 MB, built in the server's memory."""
    first = get(f"{site}/file/long.txt").text
    assert "Lines 1–5000 of 12000" in first and 'id="L5000"' in first and 'id="L5001"' not in first
    assert 'class="later" href="/file/long.txt?from=5001"' in first and 'class="earlier"' not in first
    held = get(f"{site}/file/long.txt", params={"line": "7000"}).text
    assert 'id="L5001"' in held and 'id="L7000" class="target"' in held
    assert 'id="L5000"' not in held and 'id="L10001"' not in held
    assert "entry 7000 of the long list" in held
    assert 'class="earlier" href="/file/long.txt?from=1"' in held
    last = get(f"{site}/file/long.txt", params={"from": "10001"}).text
    assert "Lines 10001–12000 of 12000" in last and 'class="later"' not in last
    assert "Lines" not in get(f"{site}/file/app.py").text.split("<table")[0].split("source")[-1]


def test_a_question_marks_its_longest_words_only():
    from fourfold.interfaces.web.highlight import MARKED_WORDS, question_words

    words = question_words(" ".join(f"word{'x' * (n % 50)}{n}" for n in range(2000)))
    assert len(words) == MARKED_WORDS and words[0] == "word" + "x" * 49 + "1049"


def test_a_pasted_text_against_a_one_line_file_is_answered_quickly(site):
    """Every word of the question was marked in every snippet line, however long: a line of
    a minified file and a question of thousands of words held the server for seconds."""
    question = '"settings_marker" ' + ",".join(f"w{n:05d}x" for n in range(2000))
    started = time.monotonic()
    page = get(f"{site}/", params={"q": question})
    assert page.status_code == 200 and time.monotonic() - started < 5
    assert "oneline.js" in page.text and "zqx" * 1 in page.text
    assert len(page.text) < 200_000  # the snippet's line is cut, not the whole 600 KB


def test_the_file_view_lists_callers_and_callees_with_their_resolution(site):
    html = get(f"{site}/file/config.py", params={"symbol": "load_config"}).text
    callers = html[html.index('class="callers"'):html.index("</ul>", html.index('class="callers"'))]
    assert "/file/app.py?" in callers and ">main<" in callers
    assert re.search(r'class="resolution (exact|inferred)"', callers)
    assert 'id="L5"' in html and 'href="/file/config.py?line=5#L5"' in html
    # the symbol under a line is found from the line alone
    by_line = get(f"{site}/file/app.py", params={"line": "5"}).text
    assert "<code>main</code>" in by_line and ">start_server<" in by_line
    missing = get(f"{site}/file/nothere.py")
    assert missing.status_code == 404 and "not in the index" in missing.text


def test_map_and_status_pages(site):
    html = get(f"{site}/map", params={"focus": "config.py"}).text
    svg = html[html.index("<svg"):html.index("</svg>")]
    assert "app.py" in svg and "config.py" in svg and "imported by (1)" in svg
    assert get(f"{site}/map", params={"symbol": "load_config"}).text.count("<svg") == 1
    status = get(f"{site}/status").text
    assert "sample" in status and re.search(r"<th>files</th><td>41 ", status)
    assert re.search(r'<td class="state ready">ready</td>', status)


def test_every_page_escapes_what_it_shows(site):
    html = get(f"{site}/file/xss.py").text
    assert "<script>alert" not in html and "onerror=alert(2)" not in html.replace(
        "&lt;img src=x onerror=alert(2)&gt;", "")
    shown = re.sub(r"</?span[^>]*>", "", html)  # the highlighting's own tags
    assert "&lt;script&gt;alert('owned')&lt;/script&gt;" in shown
    marked = get(f"{site}/", params={"q": "BANNER <span class=x> quot"}).text
    assert "<mark>BANNER</mark>" in marked and "<span class=x>" not in marked
    flags = get(f"{site}/", params={"q": "both_flags amp"}).text
    assert "<mark>both_flags</mark>" in flags and "&amp;" in flags
    assert "&<mark>amp</mark>;" not in flags  # never inside a character reference
    query = "<script>alert(1)</script>\"'><b>bold</b>"
    page = get(f"{site}/", params={"q": query})
    assert "<script>alert(1)" not in page.text and "<b>bold</b>" not in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    named = get(f"{site}/", params={"q": "odd_name"}).text
    assert "<img src=x" not in named and "&lt;img src=x onerror=alert(9)&gt;.py" in named
    assert get(f"{site}/file/{quote(HOSTILE_NAME)}").status_code == 200


def test_file_paths_are_looked_up_in_the_index_only(site):
    """A path that leaves the root, a link out of it, a name that is not UTF-8: a clear
    404, never a file read from the disk."""
    for path in ("%2E%2E/secret.py", "..%2Fsecret.py", "%2Fetc%2Fpasswd", "linked.py",
                 "%FF%FE.py", "app.py%00.txt"):
        page = httpx2.get(f"{site}/file/{path}", timeout=30)
        assert page.status_code == 404, path
        assert "OUTSIDE_SECRET" not in page.text and "root:" not in page.text
    found = get(f"{site}/", params={"q": "OUTSIDE_SECRET"}).text  # the query is echoed
    assert "not in the repository" not in found and "linked.py" not in found


def test_a_foreign_host_name_is_refused_on_loopback(site):
    """DNS rebinding: a page of another site resolved to 127.0.0.1 must not read the code."""
    for host in ("evil.example:80", "localhost:evil", "127.0.0.1:1, evil.com", "[127.0.0.1]"):
        assert get(f"{site}/", headers={"Host": host}).status_code == 403, host
    assert get(f"{site}/", headers={"Host": "localhost"}).status_code == 200
    assert get(f"{site}/", headers={"Host": "LOCALHOST:80"}).status_code == 200


def test_odd_input_gets_a_clear_page_never_a_crash(site):
    for line in ("\u00b2", "9" * 5000, "-1", "0"):
        assert get(f"{site}/file/app.py", params={"line": line}).status_code == 200, line
    # a line past the end says so (the last lines were shown without a word)
    for asked in ({"line": "999999"}, {"from": "999999"}):
        past = get(f"{site}/file/app.py", params=asked).text
        assert "line 999,999 is past the end of app.py (" in past, asked
    assert "past the end" not in get(f"{site}/file/app.py", params={"line": "2"}).text
    # a lone CR inside a line is shown, not taken for a line end that shifts the rest
    html = get(f"{site}/file/carriage.py").text
    rows = re.findall(r'<tr id="L(\d+)"[^>]*>.*?<td class="line">(.*?)</td>', html, re.S)
    assert [n for n, _ in rows] == ["1", "2", "3", "4"]
    assert "d" in re.sub(r"<[^>]+>", "", rows[3][1]) and "\u240d" in rows[1][1]
    big = get(f"{site}/file/minified.js")  # too long a line to highlight: shown plain
    assert big.status_code == 200 and "var a=1;var a=1;" in big.text
    odd = get(f"{site}/", params={"q": "x", "granularity": "line"})
    assert odd.status_code == 400 and "unknown granularity" in odd.text
    fragment = get(f"{site}/", params={"q": "x", "language": "klingon", "partial": "1"})
    assert fragment.status_code == 400 and "<html" not in fragment.text
    assert "klingon" in fragment.text
    assert 'href="/map"' in get(f"{site}/", params={"q": "x", "repository": "*"}).text
    missing = get(f"{site}/map", params={"focus": "nope.py"}).text
    assert "nope.py is not in the index" in missing and "<svg" not in missing
    assert "no definition of nothing_here" in get(f"{site}/map",
                                                  params={"symbol": "nothing_here"}).text


def signed_in(base: str, secret: str) -> dict:
    """The cookies a browser keeps after signing in with a token."""
    signed = httpx2.post(f"{base}/login?next=/", data={"token": secret}, timeout=10,
                         follow_redirects=False)
    assert signed.status_code == 303, signed.text
    return dict(signed.cookies)


def test_a_browser_signs_in_with_a_token_and_the_cookie_never_opens_mcp(tmp_path):
    root = write_tree(tmp_path / "repo", {"a.py": "def alpha():\n    return 1\n"})
    with mcp_http_server([str(root)], server_env(FOURFOLD_TOKEN="s3cret-token")) as (url, _):
        base = url.removesuffix("/mcp")
        asked = get(f"{base}/?q=alpha")
        assert asked.status_code == 303
        assert asked.headers["location"] == "/login?next=%2F%3Fq%3Dalpha"
        odd = get(f"{base}/file/q%3Fx%23y%2541.py?line=1")  # comes back whole after sign-in
        assert odd.headers["location"] == "/login?next=%2Ffile%2Fq%253Fx%2523y%252541.py%3Fline%3D1"
        forged = httpx2.post(f"{base}/login?next=/", data={"token": "s3cret-token"},
                             headers={"Origin": "https://evil.example"}, timeout=10)
        assert forged.status_code == 403  # another site cannot sign a browser in
        assert get(f"{base}/static/style.css").status_code == 200  # the form's style
        wrong = httpx2.post(f"{base}/login?next=/", data={"token": "guess"}, timeout=10)
        assert wrong.status_code == 401 and "Unknown or revoked token" in wrong.text
        # anyone may post here: nothing but a small form of one token is read
        for body, kind in ((b"token=" + b"x" * 5000, "application/x-www-form-urlencoded"),
                           ("&".join(f"f{n}=1" for n in range(3)).encode(),
                            "application/x-www-form-urlencoded"),
                           (b"--b\r\nContent-Disposition: form-data; name=\"token\"\r\n\r\n"
                            b"s3cret-token\r\n--b--\r\n", "multipart/form-data; boundary=b")):
            refused = httpx2.post(f"{base}/login?next=/", content=body, timeout=10,
                                  headers={"Content-Type": kind}, follow_redirects=False)
            assert refused.status_code == 400 and "one token" in refused.text
        signed = httpx2.post(f"{base}/login?next=//evil.example/", timeout=10,
                             data={"token": "s3cret-token"}, follow_redirects=False)
        assert signed.status_code == 303 and signed.headers["location"] == "/"
        cookie = signed.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
        # a session, named by the port: a browser sends a host's cookies to all its ports,
        # and another server there must not read the token
        port = base.rsplit(":", 1)[1]
        assert "s3cret-token" not in cookie and dict(signed.cookies).keys() == {
            f"fourfold_session_{port}"}
        for stolen in ({"fourfold_token": "s3cret-token"},
                       {f"fourfold_session_{port}": "s3cret-token"},
                       {f"fourfold_session_{int(port) + 1}": signed.cookies.get(
                           f"fourfold_session_{port}")}):
            assert get(f"{base}/?q=alpha", cookies=stolen).status_code == 303
        jar = dict(signed.cookies)
        assert get(f"{base}/?q=alpha", cookies=jar).status_code == 200
        assert "a.py" in get(f"{base}/?q=alpha", cookies=jar).text
        mcp = httpx2.post(url, cookies=jar, timeout=10, json={
            "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
            headers={"Accept": "application/json, text/event-stream"})
        assert mcp.status_code == 401


def test_a_token_sees_only_its_repositories_on_the_page(two_repositories, capsys):
    where, serve, _ = two_repositories
    only_two = token(capsys, where, "page-reader", "acme/two")
    with mcp_http_server(serve) as (url, _):
        base = url.removesuffix("/mcp")
        jar = signed_in(base, only_two)
        found = get(f"{base}/", params={"q": "SECRET", "repository": "*"}, cookies=jar).text
        assert "two.py" in found and "one.py" not in found
        refused = get(f"{base}/file/one.py", params={"repository": "acme/one"}, cookies=jar)
        assert refused.status_code == 400 and "not granted" in refused.text
        if "--store" in serve:  # a server of several repositories: the map asks which
            everything = token(capsys, where, "page-all")
            chooser = get(f"{base}/map", cookies=signed_in(base, everything)).text
            assert "A map is of one repository" in chooser
            assert 'href="/map?repository=acme%2Fone"' in chooser
        status = get(f"{base}/status", cookies=jar).text
        assert "acme/two" in status and "acme/one" not in status
        # where the index is (a server URL names its host and user) is not for this token
        everywhere = get(f"{base}/status", cookies=signed_in(
            base, token(capsys, where, "status-all"))).text
        location = re.search(r"Index <code>([^<]+)</code>", everywhere).group(1)
        assert location not in status and "Index <code>" not in status
        # with no repository named, the one the token sees is the default
        assert "two.py" in get(f"{base}/", params={"q": "beta_handler"}, cookies=jar).text
        assert get(f"{base}/map", cookies=jar).status_code == 200
        # "every repository" (the search form's choice) on one file's page and the map:
        # the repository holding the file, the one the token sees; nothing more
        shown = get(f"{base}/file/two.py", params={"repository": "*"}, cookies=jar)
        assert shown.status_code == 200 and "BETA_SECRET" in shown.text
        hidden = get(f"{base}/file/one.py", params={"repository": "*"}, cookies=jar)
        assert hidden.status_code == 404 and "ALPHA_SECRET" not in hidden.text
        assert get(f"{base}/map", params={"repository": "*"}, cookies=jar).text == \
            get(f"{base}/map", cookies=jar).text
        everything = signed_in(base, token(capsys, where, "page-every"))
        for name, secret in (("one.py", "ALPHA_SECRET"), ("two.py", "BETA_SECRET")):
            assert secret in get(f"{base}/file/{name}", params={"repository": "*"},
                                 cookies=everything).text


def test_the_status_page_names_a_repository_whose_removal_was_interrupted(
        two_repositories, monkeypatch, capsys, tmp_path):
    from fourfold import Fourfold

    where, serve, one = two_repositories
    at = ({"index_dir": where[1]} if where[0] == "--index-dir" else {"store_url": where[1]})
    remover = Fourfold(one, repository="acme/one", **at)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        # after its first step (see tests/api/test_remove_repository.py)
        patched.setattr(type(remover.store), "write_batch", interrupted)
        patched.setattr(type(remover.store), "_take_out_rows", interrupted, raising=False)
        with pytest.raises(KeyboardInterrupt):
            remover.remove_repositories(["acme/two"])
    remover.close()
    with mcp_http_server(serve) as (url, _):
        status = get(f"{url.removesuffix('/mcp')}/status").text
    taken_out = status[status.index("<h2>acme/two"):]
    assert re.search(r'<td class="state removing">being taken out of the index .*'
                     r'run <code>fourfold remove acme/two</code> again', taken_out)
    assert "modality-state" not in taken_out  # nothing of it is served any more
    assert re.search(r'<td class="state ready">ready</td>',
                     status[status.index("<h2>acme/one"):status.index("<h2>acme/two")])
    if "--store" in serve:  # a server of several repositories: MCP's overview says so too
        from fourfold.interfaces.mcp.tools import FourfoldService

        three = write_tree(tmp_path / "three", {"three.py": "GAMMA = 3\n"})
        assert main(["index", str(three), *where, "--repository", "acme/three",
                     "--no-embed"]) == 0
        service = FourfoldService(None, store_url=at["store_url"], watch=False).start()
        overview = {r["name"]: r for r in service.repository_context()["repositories"]}
        service.close()
        assert overview["acme/two"]["removing"] and not overview["acme/one"].get("removing")


def test_the_page_in_a_browser(site):
    from playwright.sync_api import sync_playwright

    SCREENSHOTS.mkdir(exist_ok=True)
    dialogs: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(f"{site}/")
        page.fill("#q", "where is load_config defined")  # results come while typing
        page.wait_for_selector(".hit a.path", timeout=20_000)
        assert page.inner_text(".hit a.path >> nth=0").startswith("config.py:5")
        assert "q=where" in page.url
        page.screenshot(path=SCREENSHOTS / "1-search.png")

        page.keyboard.press("ArrowDown")  # keys move through the results
        page.keyboard.press("Enter")
        page.wait_for_url("**/file/config.py**")
        assert "def load_config" in page.inner_text("tr.target")
        page.screenshot(path=SCREENSHOTS / "2-file.png")

        page.click("ul.callers a")  # follow a caller
        page.wait_for_url("**/file/app.py**")
        assert "main" in page.inner_text(".related h2")
        assert "load_config(" in page.inner_text("tr.target")
        page.screenshot(path=SCREENSHOTS / "3-caller.png")

        page.click("nav >> text=Map")
        page.wait_for_selector("svg.neighbourhood")
        page.click("svg.neighbourhood a >> nth=0")  # the picture moves to the clicked file
        page.wait_for_url("**focus=**")
        page.screenshot(path=SCREENSHOTS / "4-map.png", full_page=True)

        page.click("nav >> text=Status")
        assert "ready" in page.inner_text("main")
        page.screenshot(path=SCREENSHOTS / "5-status.png")

        page.goto(f"{site}/file/xss.py")
        assert "<script>alert('owned')</script>" in page.inner_text("table.code")
        page.goto(f"{site}/?q=" + quote("<img src=x onerror=alert(5)>"))
        assert page.input_value("#q") == "<img src=x onerror=alert(5)>"
        browser.close()
    assert dialogs == []  # no script from a file or a query ever ran


def test_fourfold_ui_serves_a_folder_on_a_free_port_and_says_where(tmp_path):
    root = write_tree(tmp_path / "repo", {"a.py": "def alpha_ui():\n    return 1\n"})
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from fourfold.interfaces.cli "
                             "import main; sys.exit(main(sys.argv[1:]))", "ui", str(root),
                             "--no-watch"], env=server_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        found = re.search(r"web page on (http://127\.0\.0\.1:\d+/)", line)
        assert found, line
        deadline = time.monotonic() + 30
        while True:
            try:
                page = get(found.group(1), params={"q": "alpha_ui"})
                break
            except httpx2.TransportError:
                assert time.monotonic() < deadline, "the page did not answer"
                time.sleep(0.2)
        assert page.status_code == 200 and "a.py" in page.text
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_sign_in_session_ends_and_the_oldest_are_forgotten(monkeypatch):
    from fourfold.interfaces import http

    class NoAccessTokens:
        def grant(self, secret):
            return None

    gate = http.TokenGate(None, "s3cret", NoAccessTokens(), open_without_token=False,
                          loopback=True)
    assert gate.sign_in("guess") is None
    now = [1000.0]
    monkeypatch.setattr(http.time, "monotonic", lambda: now[0])
    first = gate.sign_in("s3cret")
    assert gate._session_token(first) == b"s3cret" and gate._session_token("other") == b""
    now[0] += http.SESSION_S + 1
    assert gate._session_token(first) == b""
    monkeypatch.setattr(http, "MOST_SESSIONS", 3)
    sessions = [gate.sign_in("s3cret") for _ in range(5)]
    assert [gate._session_token(s) for s in sessions] == [b""] * 2 + [b"s3cret"] * 3
    # a token past Latin-1 (a cookie holding it was a 500): the session id is ASCII
    wide = http.TokenGate(None, "geheim€schlüssel", NoAccessTokens(),
                          open_without_token=False, loopback=True)
    assert wide.sign_in("geheim€schlüssel").isascii()


def test_a_file_whose_name_holds_a_newline_opens(tmp_path):
    """Its link was a 404: Starlette's path convertor stops at a newline."""
    root = write_tree(tmp_path / "repo", {"new\nline.py": "def on_two_lines():\n    return 2\n"})
    assert main(["index", str(root), "--no-embed"]) == 0
    with mcp_http_server([str(root)]) as (url, _):
        site = url.removesuffix("/mcp")
        found = get(f"{site}/", params={"q": "on_two_lines"}).text
        assert 'href="/file/new%0Aline.py' in found
        page = get(f"{site}/file/new%0Aline.py")
        assert page.status_code == 200 and "on_two_lines" in page.text



def test_results_while_typing_ask_again_after_a_busy_answer(site):
    """A 503 (an index still being built, or a store out of reach) left the results empty
    until the question changed: the page shows why and asks again after Retry-After."""
    from playwright.sync_api import sync_playwright

    answered: list[int] = []

    def busy_once(route):
        if not answered:
            answered.append(503)
            route.fulfill(status=503, headers={"Retry-After": "1"},
                          body='<p class="error">the index cannot answer now</p>')
        else:
            answered.append(200)
            route.continue_()

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page()
        page.route("**/?*partial=1*", busy_once)
        page.goto(f"{site}/")
        page.fill("#q", "where is load_config defined")
        page.wait_for_selector("#results .error", timeout=20_000)
        assert "cannot answer now" in page.inner_text("#results")
        page.wait_for_selector(".hit a.path", timeout=20_000)  # asked again by itself
        assert page.inner_text(".hit a.path >> nth=0").startswith("config.py:5")
        browser.close()
    assert answered == [503, 200]


def test_a_file_two_repositories_hold_asks_which_under_every_repository(tmp_path):
    """repository=* on a file's page: a path two repositories hold is not guessed."""
    index = ["--index-dir", str(tmp_path / "index")]
    roots = [write_tree(tmp_path / name, {"same.py": f"WHO_{name.upper()} = 1\n",
                                          f"{name}.py": f"ONLY_{name.upper()} = 1\n"})
             for name in ("left", "right")]
    for root in roots:
        assert main(["index", str(root), *index, "--no-embed"]) == 0
    with mcp_http_server([str(roots[0]), *index]) as (url, _):
        base = url.removesuffix("/mcp")
        both = get(f"{base}/file/same.py", params={"repository": "*"})
        assert both.status_code == 400
        assert "several repositories (left, right): name one" in both.text
        only = get(f"{base}/file/right.py", params={"repository": "*"})
        assert only.status_code == 200 and "ONLY_RIGHT" in only.text
        assert "WHO_RIGHT" in get(f"{base}/file/same.py", params={"repository": "right"}).text
