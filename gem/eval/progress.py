"""The one progress bar of the CLI (``gem run``, ``gem eval``): rich, on stderr."""

from __future__ import annotations

from typing import Any, Callable


class progress_bar:
    """A context manager yielding ``advance(failed=0)``; ``failed`` is shown beside the bar."""

    def __init__(self, total: int, description: str, disable: bool = False) -> None:
        self.total, self.description, self.disable = total, description, disable
        self._bar: Any = None

    def __enter__(self) -> Callable[..., None]:
        if self.disable or self.total <= 0:
            return lambda failed=0: None
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._bar = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            TextColumn("{task.fields[failed]}"), console=Console(stderr=True), transient=False,
        )
        self._bar.start()
        task = self._bar.add_task(self.description, total=self.total, failed="")

        def advance(failed: int = 0) -> None:
            self._bar.update(task, advance=1, failed=f"{failed} failed" if failed else "")

        return advance

    def __exit__(self, *exc: Any) -> None:
        if self._bar is not None:
            self._bar.stop()
