"""The README's Python examples run as written."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_api_examples_run(ray_session, capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) == 2
    namespace: dict = {}
    for block in blocks:  # the second example reuses the first one's names
        exec(compile(block, str(README), "exec"), namespace)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("eligible to reproduce: [")
    assert len(out) == 4  # one line per generation of the second example
    assert namespace["returns"].shape == (8, 5)
