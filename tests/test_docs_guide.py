"""docs/guide.md: its code blocks run, in order, as one program (so the guide cannot rot)."""

import re
import runpy
from pathlib import Path

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "guide.md"


def test_guide_code_blocks_run_in_order(tmp_path, monkeypatch, capsys):
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 8
    # scripted functions need a source file, so the blocks run as one module written to disk
    program = tmp_path / "guide_program.py"
    program.write_text("\n\n".join(blocks), encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # the guide writes trace.json and regressor.rns here
    runpy.run_path(str(program), run_name="guide")
    assert (tmp_path / "regressor.rns").stat().st_size > 0
    assert (tmp_path / "trace.json").stat().st_size > 0
    printed = capsys.readouterr().out
    assert "prim::FusionGroup" in printed and "prim::Loop" in printed
    assert "argument 'x': expected Tensor, got list" in printed
    assert "inner dimensions differ" in printed
