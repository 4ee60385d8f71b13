"""Rewrite the env table in docs/envs.md from the registry (run after registering new ids)."""

from __future__ import annotations

import re
from pathlib import Path

from gem.cli import markdown_env_table

TABLE_DOC = Path(__file__).resolve().parents[1] / "docs" / "envs.md"
START, END = "<!-- env-table:start -->", "<!-- env-table:end -->"


def main() -> None:
    text = TABLE_DOC.read_text()
    table = f"{START}\n{markdown_env_table().rstrip()}\n{END}"
    new, count = re.subn(re.escape(START) + r".*?" + re.escape(END), lambda _: table, text, flags=re.S)
    if count != 1:
        raise SystemExit(f"docs/envs.md must contain one {START} ... {END} block.")
    TABLE_DOC.write_text(new)


if __name__ == "__main__":
    main()
