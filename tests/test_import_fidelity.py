"""Nothing lost, nothing invented, over the fixture vault and graph (see import_checks.py)."""
import shutil
from pathlib import Path

import pytest

from tidemind.importers.engine import sync

from .import_checks import check_folder

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize("source, folder, options", [("obsidian", "vault", {"exclude": ["templates"]}),
                                                     ("obsidian", "vault", {}), ("logseq", "graph", {})])
def test_every_line_tag_and_link_of_the_fixtures_is_accounted_for(mem, tmp_path, source, folder, options):
    root = tmp_path / folder
    shutil.copytree(FIXTURES / folder, root)
    report = sync(mem, source, root, f"vault:{folder}", options)
    counted = check_folder(mem, source, root, report, options)
    # the fixtures hold every construct: the check must have had lines, tags, links and dangling ones to judge
    assert all(counted[k] > 0 for k in ("lines", "tags", "links", "dangling")), counted
