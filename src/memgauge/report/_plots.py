"""The report's figures: matplotlib drawn without pyplot (no global backend switch), saved as
PNG and embedded in the page as ``data:`` URIs. matplotlib is an optional dependency
(``pip install 'memgauge[report]'``), imported only when a figure is made. The page around
the figures (template, style, script) is in ``assets/`` (``_html.py`` assembles it)."""

from __future__ import annotations

import base64
import html
import io
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from memgauge.analysis import Cell, RunRow
from memgauge.errors import ConfigError
from memgauge.report._tables_md import MISSING, fmt_pct, run_name

__all__ = ["DPI", "MARKERS", "Plots", "colors_for", "figure_legend", "heatmap",
           "leaderboard_plot", "panels", "short", "tier_bars"]

DPI = 100
LEGEND_SHARE = 0.96  # of the figure's width a legend may take: a margin on each side
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
_MPL_RC: dict[Any, Any] = {  # matplotlib's stubs key it by a Literal of every rc name
    "text.parse_math": False,  # run names and abilities are text, never mathtext
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
}
# --- matplotlib ---------------------------------------------------------------------------


class Plots:
    """Makes figures without pyplot (no global backend switch) and embeds them as PNG."""

    def __init__(self) -> None:
        try:
            import matplotlib
            from matplotlib.backends.backend_agg import FigureCanvasAgg
            from matplotlib.figure import Figure
        except ImportError as exc:
            raise ConfigError(
                "--format html draws its plots with matplotlib, which is not installed; "
                "install the report extra: pip install 'memgauge[report]'"
            ) from exc
        self._mpl = matplotlib
        self._figure = Figure
        self._canvas = FigureCanvasAgg

    @contextmanager
    def figure(self, width: float, height: float) -> Iterator[Any]:
        with self._mpl.rc_context(_MPL_RC):
            fig = self._figure(figsize=(width, height), layout="constrained")
            self._canvas(fig)
            yield fig

    def cmap(self, name: str) -> Any:
        return self._mpl.colormaps[name].with_extremes(bad="#e6e6e6")

    @staticmethod
    def img(fig: Any, alt: str) -> str:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
        uri = "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")
        return f'<img src="{uri}" alt="{html.escape(alt, quote=True)}">'


def colors_for(plots: Plots, keys: Sequence[str]) -> dict[str, Any]:
    cmap = plots._mpl.colormaps["tab10" if len(keys) <= 10 else "tab20"]
    return {k: cmap(i % cmap.N) for i, k in enumerate(keys)}


def short(text: str, limit: int = 28) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def heatmap(plots: Plots, ax: Any, grid: Mapping[str, Mapping[str, Any]],
             rows: Sequence[str], cols: Sequence[str], title: str) -> None:
    """Accuracy cells coloured 0–1 and annotated with the percentage and n."""
    import numpy as np

    values = np.full((len(rows), len(cols)), np.nan)
    for i, r in enumerate(rows):
        for j, c in enumerate(cols):
            cell = grid.get(r, {}).get(c)
            if cell is not None and cell.n:
                values[i, j] = cell.accuracy
    image = ax.imshow(np.ma.masked_invalid(values), cmap=plots.cmap("viridis"), vmin=0,
                      vmax=1, aspect="auto")
    scale = ax.figure.colorbar(image, ax=ax, fraction=0.05, pad=0.03,
                               ticks=[0, 0.25, 0.5, 0.75, 1])
    scale.ax.set_yticklabels(["0%", "25%", "50%", "75%", "100%"])
    scale.set_label("accuracy")
    scale.outline.set_visible(False)
    for i, r in enumerate(rows):
        for j, c in enumerate(cols):
            cell = grid.get(r, {}).get(c)
            if cell is None or not cell.n:
                ax.text(j, i, MISSING, ha="center", va="center", color="#555", fontsize=8)
                continue
            color = "black" if cell.accuracy > 0.6 else "white"
            ax.text(j, i, f"{fmt_pct(cell.accuracy)}\nn={cell.n}", ha="center",
                    va="center", color=color, fontsize=8)
    ax.set_xticks(range(len(cols)), [short(c, 26) for c in cols], rotation=30, ha="right")
    ax.set_yticks(range(len(rows)), [short(r) for r in rows])
    ax.set_title(short(title, 60))
    for side in ("top", "right", "left", "bottom"):
        ax.spines[side].set_visible(False)


def panels(plots: Plots, n: int, *, panel_w: float, panel_h: float, ncols: int,
            draw: Callable[[Any, int], None], alt: str, legend: bool = False) -> str:
    """A grid of ``n`` panels drawn by ``draw(ax, index)``, as one embedded image; with
    ``legend``, one shared legend below the panels."""
    ncols = max(1, min(ncols, n))
    nrows = math.ceil(n / ncols)
    with plots.figure(panel_w * ncols, panel_h * nrows + (0.5 if legend else 0)) as fig:
        axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
        for i, ax in enumerate(axes):
            if i < n:
                draw(ax, i)
            else:
                ax.set_visible(False)
        if legend:
            figure_legend(fig, axes)
        return plots.img(fig, alt)


def figure_legend(fig: Any, axes: Sequence[Any]) -> None:
    """One legend for all panels, below them, each label once, in as many columns as fit
    the figure's width: a legend wider than the figure is cut off on both sides of the PNG,
    and its lines can no longer be named."""
    handles: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    if not handles:
        return
    renderer = fig.canvas.get_renderer()
    for ncols in range(min(len(handles), 4), 0, -1):
        legend = fig.legend(list(handles.values()), list(handles), loc="outside lower center",
                            ncols=ncols, frameon=False)
        if ncols == 1 or legend.get_window_extent(renderer).width <= LEGEND_SHARE * fig.bbox.width:
            return
        legend.remove()


def leaderboard_plot(runs: Sequence[RunRow], plots: Plots) -> str:
    with plots.figure(7.5, 0.8 + 0.42 * len(runs)) as fig:
        ax = fig.add_subplot()
        ys = list(range(len(runs)))[::-1]
        for y, r in zip(ys, runs, strict=True):
            if not math.isfinite(r.accuracy):
                ax.text(0.01, y, "no score", va="center", color="#555")
                continue
            err = None
            if math.isfinite(r.ci_low) and math.isfinite(r.ci_high):
                err = [[max(0.0, r.accuracy - r.ci_low)], [max(0.0, r.ci_high - r.accuracy)]]
            # an incomplete run's bar is grey and hatched: not a result to rank (0040)
            ax.barh(y, r.accuracy, xerr=err, color="#b0b0b0" if r.incomplete else "#4c72b0",
                    hatch="//" if r.incomplete else None, capsize=3, height=0.6)
            small = ", small n" if r.small_n else ""
            ax.text(min(r.accuracy, 1.0) + 0.01, y + 0.3,
                    f"{r.accuracy * 100:.1f}% (n={r.n}{small})", va="center", fontsize=8)
        ax.set_yticks(ys, [short(run_name(r), 40) for r in runs])
        ax.set_xlim(0, 1.18)
        ax.set_xlabel("accuracy (micro), error bars: bootstrap CI (Wilson below n = 30)")
        return plots.img(fig, "Accuracy per run with confidence intervals")


def tier_bars(ax: Any, curves: Mapping[str, Mapping[str, Cell]], system: Any,
               colors: Mapping[str, Any]) -> None:
    """One tier: a bar per ability, labelled with its accuracy and n."""
    tier = system.tiers[0]
    abilities = [a for a, cells in curves.items() if cells[tier].n]
    ys = list(range(len(abilities)))[::-1]
    for y, ability in zip(ys, abilities, strict=True):
        cell = curves[ability][tier]
        ax.barh(y, cell.accuracy, color=colors[ability], label=ability, height=0.6)
        ax.text(cell.accuracy + 0.02, y, f"{fmt_pct(cell.accuracy)} (n={cell.n})",
                va="center", fontsize=8)
    ax.set_yticks(ys, [short(a, 22) for a in abilities])
    ax.set_xlim(0, 1.3)
    ax.set_xticks([0, 0.5, 1], ["0%", "50%", "100%"])
    ax.set_xlabel(f"accuracy at tier {tier}")
    ax.set_title(short(system.label, 50))
    ax.grid(axis="x", alpha=0.3)


