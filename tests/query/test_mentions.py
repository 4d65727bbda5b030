"""An issue pasted as a question: its traceback frames, paths and code names are parsed and
looked up exactly, and its incidental words about tests and docs do not lift those files."""
from __future__ import annotations

import pytest

from fourfold import Fourfold
from fourfold.query.mentions import Frame, mentions_of
from fourfold.query.model import Query
from tests.conftest import write_tree

ISSUE = """Email messages crash on non-ASCII domain when email encoding is non-unicode.
When the hostname is set in unicode, the mail tests fail; see the docs and settings.
https://github.com/acme/mailer/blob/main/mailer/headers.py#L12
Steps: build a Message and call message.render() with DNS_NAME patched.
Traceback (most recent call last):
  File "/home/me/src/mailer/tests/test_mail.py", line 9, in test_unicode_dns
    message = build().render()
  File "/home/me/src/mailer/mailer/message.py", line 8, in render
    return forbid_multi_line_headers(self.subject)
  File "/usr/lib/python3.11/email/header.py", line 217, in __init__
    self.append(s, charset, errors)
UnicodeEncodeError: 'latin-1' codec can't encode characters
"""


def test_a_traceback_is_read_into_frames_paths_and_names():
    mentions = mentions_of(ISSUE)
    assert mentions.frames == (
        Frame("/home/me/src/mailer/tests/test_mail.py", 9, "test_unicode_dns"),
        Frame("/home/me/src/mailer/mailer/message.py", 8, "render"),
        Frame("/usr/lib/python3.11/email/header.py", 217, "__init__"))
    assert "github.com/acme/mailer/blob/main/mailer/headers.py" in mentions.paths
    for name in ("forbid_multi_line_headers", "DNS_NAME", "UnicodeEncodeError", "render"):
        assert name in mentions.names
    assert "e.g" not in mentions.names


def test_frames_of_other_languages_are_read():
    text = ("panic: runtime error: index out of range\n\ngoroutine 1 [running]:\n"
            "main.parse(...)\n\t/home/me/app/parse.go:42 +0x1d\n"
            "    at render (/srv/app/src/view.js:10:5)\n"
            "\tat com.acme.Server.start(Server.java:88)\n"
            "   at src/main.rs:7:3\n")
    assert mentions_of(text).frames == (
        Frame("/home/me/app/parse.go", 42, None), Frame("/srv/app/src/view.js", 10, "render"),
        Frame("Server.java", 88, "com.acme.Server.start"), Frame("src/main.rs", 7, None))


def test_only_a_pasted_text_has_mentions_and_its_words_ask_for_nothing():
    short = Query("how are the mail tests run")
    assert not short.pasted and short.wants_tests and not short.mentions
    pasted = Query(ISSUE)
    assert pasted.pasted and not pasted.wants_tests and not pasted.wants_prose
    assert pasted.mentions


FILES = {
    "mailer/__init__.py": "",
    "mailer/headers.py": "def forbid_multi_line_headers(value):\n    return value.encode('ascii')\n",
    "mailer/message.py": ("from mailer.headers import forbid_multi_line_headers\n"   # 1
                          "\n"                                                     # 2
                          "\n"                                                     # 3
                          "class Message:\n"                                       # 4
                          "    subject = ''\n"                                     # 5
                          "\n"                                                     # 6
                          "    def render(self):\n"                                # 7
                          "        return forbid_multi_line_headers(self.subject)\n"),  # 8
    "mailer/tests/__init__.py": "",
    "mailer/tests/test_mail.py": ("from mailer.message import Message\n\n\n"
                                  "def test_unicode_dns():\n"
                                  "    message = build().render()\n"),
    "docs/mail.md": "# Mail\nThe mail docs: settings, unicode hostname, encoding, tests.\n",
}


@pytest.fixture(params=["sqlite", "postgres"])
def ff(request, tmp_path):
    """The repository in an embedded index, or in a PostgreSQL database."""
    root = write_tree(tmp_path / "issue", FILES)
    where = ({} if request.param == "sqlite"
             else {"store_url": request.getfixturevalue("postgres_url")})
    ff = Fourfold(root, **where)
    ff.index(embed=False)
    yield ff
    ff.close()


def test_the_structural_modality_answers_an_issue_with_what_it_names(ff):
    hits = ff.search(ISSUE, modalities=("structural",), granularity="span", limit=10).hits
    found = [(h.path, h.symbol) for h in hits]
    # the innermost indexed frame first (the stdlib frame is not in the index), then the
    # outer frame, then the file the link names, then the names it mentions
    assert found[0] == ("mailer/message.py", "Message.render")
    assert ("mailer/tests/test_mail.py", "test_unicode_dns") in found
    assert ("mailer/headers.py", None) in found
    assert ("mailer/headers.py", "forbid_multi_line_headers") in found


def test_an_issue_finds_the_function_to_change(ff):
    hits = ff.search(ISSUE, granularity="function", limit=5).hits
    top = [(h.path, h.symbol) for h in hits]
    assert top[0] in {("mailer/message.py", "Message.render"),
                      ("mailer/headers.py", "forbid_multi_line_headers")}
    # the test file and the docs name the same words, but rank below the code
    files = [h.path for h in hits]
    assert files.index("mailer/message.py") < files.index("mailer/tests/test_mail.py")
    assert "docs/mail.md" not in files[:2]


@pytest.mark.parametrize("text", [
    ("Aa" + "A" * 40 + "_ ") * 700,      # a capitalised run that fails at its end
    "at " + "a." * 16_000,               # a frame that never gets its line number
    "a-" * 16_000,                       # a URL scheme that never gets its ://
    "a/" + "a." * 16_000,                # a path that never gets its extension
    "a" * 32_000,                        # a call that never gets its (
    "File \"" + "a" * 32_000,
    "\n\t" + "a/" * 16_000,                # a Go frame that never gets its .go:
])
def test_a_hostile_text_is_read_in_linear_time(text):
    import time

    started = time.perf_counter()
    mentions_of(text[:32_000])
    assert time.perf_counter() - started < 0.5


def test_a_question_names_every_identifier_it_spells_but_stopwords():
    query = Query("Why does URLValidator.clean get the url_parts of a __call__?")
    assert query.identifiers == {"URLValidator", "clean", "url_parts", "__call__"}
    assert Query("how is it done").identifiers == {"done"}
