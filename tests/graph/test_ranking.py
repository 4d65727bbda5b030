"""The graph modality ranks the code referencing a name by evidence (how often it calls),
not by the alphabetical order of paths."""
from __future__ import annotations

from fourfold import Fourfold


def test_callers_rank_by_how_often_they_call(make_tree):
    root = make_tree({
        "target.py": "def target():\n    return 1\n",
        "a_once.py": "from target import target\n\n\ndef once():\n    return target()\n",
        "z_often.py": "from target import target\n\n\ndef often():\n"
                      "    first = target()\n    second = target()\n    return target()\n",
    })
    ff = Fourfold(root)
    ff.index(embed=False)
    hits = ff.search("who calls target", modalities=("graph",)).hits
    assert [h.path for h in hits] == ["z_often.py", "a_once.py"]
    assert hits[0].score > hits[1].score
