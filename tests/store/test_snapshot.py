"""A snapshot made from the one before it, after files were only written again, is the
snapshot read anew; any other change is read anew."""
from __future__ import annotations

import pytest

from fourfold.api import Fourfold
from fourfold.store.snapshot import IndexSnapshot

PROPERTIES = ("_all_files", "files", "file_name_words", "file_position", "files_by_name_word",
              "module_stems", "paths_by_name", "modules", "file_flags")
TREE = {
    "pkg/__init__.py": "from .models import User\n",
    "pkg/models.py": "class User:\n    def save(self):\n        return 1\n",
    "pkg/views.py": "from .models import User\n\ndef show():\n    return User().save()\n",
    "web/index.ts": "export function render(): number { return 1 }\n",
    "docs/guide.md": "# Guide\n\nHow users are saved.\n",
    "tests/test_models.py": "from pkg.models import User\n\ndef test_save():\n    User().save()\n",
}


@pytest.fixture
def indexed(index_on_each_store):
    return index_on_each_store(TREE)


def _read_anew(ff: Fourfold) -> IndexSnapshot:
    return IndexSnapshot(ff.store, ff.store.generation(), ff.repo_id())


def _every_property(snapshot: IndexSnapshot) -> dict:
    return {name: getattr(snapshot, name) for name in PROPERTIES}


def test_files_written_again_give_the_snapshot_read_anew(indexed, monkeypatch):
    root, ff = indexed
    earlier = ff.snapshots.current()
    _every_property(earlier)
    assert [s.qualname for s in earlier.definitions("pkg/models.py")] == ["User", "User.save"]
    (root / "pkg/models.py").write_text("class User:\n    def save(self):\n        return 2\n\n"
                                        "    def delete(self):\n        return 0\n")
    # now marked generated: its flags change with its text
    (root / "web/index.ts").write_text("// @generated\nexport function render(): number "
                                       "{ return 2 }\n")
    ff.index(embed=False, changed=[str(root / "pkg/models.py"), str(root / "web/index.ts")])
    read = []
    files = ff.store.files
    monkeypatch.setattr(ff.store, "files", lambda *a: read.append(a) or files(*a))
    later = ff.snapshots.current()
    assert later is not earlier and later.generation == ff.store.generation()
    assert _every_property(later) and not read  # made from the earlier one
    monkeypatch.undo()
    anew = _read_anew(ff)
    assert _every_property(later) == _every_property(anew)
    assert later.files["pkg/models.py"].file_id != earlier.files["pkg/models.py"].file_id
    assert later.file_flags["web/index.ts"] != earlier.file_flags["web/index.ts"]
    assert [s.qualname for s in later.definitions("pkg/models.py")] == [
        "User", "User.save", "User.delete"]
    # properties the earlier one had not made are made from the new files
    fresh_earlier = ff.snapshots.current()
    assert fresh_earlier is later
    (root / "pkg/views.py").write_text("def show():\n    return 3\n")
    ff.index(embed=False, changed=[str(root / "pkg/views.py")])
    latest = ff.snapshots.current()
    assert "module_stems" in latest.__dict__
    assert _every_property(latest) == _every_property(_read_anew(ff))


@pytest.mark.parametrize("change", ["added", "removed", "renamed"])
def test_a_file_added_removed_or_renamed_is_read_anew(indexed, monkeypatch, change):
    root, ff = indexed
    _every_property(ff.snapshots.current())
    if change == "added":
        (root / "pkg/extra.py").write_text("def extra():\n    return 1\n")
        (root / "web/index.ts").write_text("export function render(): number { return 2 }\n")
    elif change == "removed":
        (root / "docs/guide.md").unlink()
    else:  # as many files as before
        (root / "docs/guide.md").rename(root / "docs/manual.md")
    ff.index(embed=False)
    read = []
    files = ff.store.files
    monkeypatch.setattr(ff.store, "files", lambda *a: read.append(a) or files(*a))
    later = ff.snapshots.current()
    assert _every_property(later) and read
    monkeypatch.undo()
    assert _every_property(later) == _every_property(_read_anew(ff))
    assert ("pkg/extra.py" in later.files) == (change == "added")
    assert ("docs/guide.md" in later.files) == (change == "added")
    assert ("docs/manual.md" in later.files) == (change == "renamed")


def test_answers_after_a_save_are_those_of_a_new_process(indexed):
    root, ff = indexed
    question = "how is a user saved"
    ff.search(question)
    (root / "pkg/models.py").write_text("class User:\n    def save(self):\n        return 2\n")
    ff.index(embed=False, changed=[str(root / "pkg/models.py")])
    mine = ff.search(question)
    other = Fourfold(root, store_url=ff.store_url) if ff.store_url else Fourfold(root)
    try:
        theirs = other.search(question)
    finally:
        other.close()
    assert [(h.path, h.start_line, h.end_line) for h in mine.hits] == [
        (h.path, h.start_line, h.end_line) for h in theirs.hits]
    assert mine.hits
