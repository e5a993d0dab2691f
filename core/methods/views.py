"""What a method shows, described as data: ``gui/`` draws these with pyqtgraph, :mod:`core.report` as SVG.

A method's :meth:`~core.methods.base.Method.views` returns a list of these for a result; nothing outside
:mod:`core.methods` needs to know which keys a method's summary or details hold.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Text:
    """A paragraph (plain text; renderers escape it)."""

    text: str
    tone: str = "info"  # "info" | "warning"
    tip: str = ""  # the method's terms and exact figures behind the plain words (a tooltip; the report's title)


@dataclass
class Table:
    """Rows of cells (str or number). ``bars`` names columns whose cells are lists of counts drawn as
    small bar charts, labelled by ``bar_labels``."""

    title: str
    columns: list[str]
    rows: list[list]
    bars: tuple[str, ...] = ()
    bar_labels: list[str] = field(default_factory=list)
    tips: dict = field(default_factory=dict)  # column → the method's term for it (a tooltip on its header)


@dataclass
class Heatmap:
    """A matrix with named rows and columns (values shown in each cell when small enough)."""

    title: str
    matrix: np.ndarray
    row_labels: list[str]
    col_labels: list[str]
    low: float = 0.0
    high: float = 1.0


@dataclass
class Curve:
    """One or more lines over the same x values; ``mark`` draws a vertical marker (e.g. the chosen t)."""

    title: str
    x: list[float]
    series: dict[str, list[float]]
    xlabel: str = ""
    ylabel: str = ""
    mark: float | None = None


@dataclass
class Scatter:
    """Points coloured by an integer label (e.g. rows on two principal axes, by cluster); ``centres``
    are drawn as crosses."""

    title: str
    points: np.ndarray  # (n, 2)
    labels: np.ndarray  # (n,) ints
    centres: np.ndarray | None = None
    xlabel: str = ""
    ylabel: str = ""


@dataclass
class Bars:
    """One bar per category."""

    title: str
    labels: list[str]
    values: list[float]
    ylabel: str = ""


View = Text | Table | Heatmap | Curve | Scatter | Bars


SITE_ROWS_TIP = {"rows": "the rows the site's estimate or what it sent rests on; '+ N kept to check': rows the site "
                         "set aside at export to check the package against its own model (they count in its own "
                         "model's n)"}


def site_rows_cell(x: dict) -> str:
    """A site's rows as a Sites table shows them: those behind what it sent, and the rows it kept at the site to check
    the package (``rows_kept_at_site``) beside them, so its own model's n (over both) adds up."""
    rows, kept = x.get("rows", ""), x.get("rows_kept_at_site")
    text = f"{rows:,}" if isinstance(rows, int) else str(rows)
    return text + (f" + {kept:,} kept to check" if isinstance(kept, int) and kept else "")


def cluster_sizes(sizes: list) -> list[View]:
    """"Rows per cluster" as bars (clusters numbered from 1 for people); nothing when there are no sizes."""
    if not sizes:
        return []
    return [Bars("Rows per cluster", [f"cluster {c + 1}" for c in range(len(sizes))], [float(v) for v in sizes],
                 ylabel="rows")]


def principal_axes_2d(X: np.ndarray, extra: np.ndarray | None = None
                      ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """Rows (and optional extra points, e.g. centroids) on their first two principal axes.

    Returns (projected rows, projected extra, explained-variance ratio of the two axes); a one-column
    input is plotted against zero."""
    X = np.asarray(X, dtype=np.float64)
    mean = X.mean(axis=0)
    Xc = X - mean
    _, s, vt = np.linalg.svd(Xc[:: max(1, len(Xc) // 20000)], full_matrices=False)
    k = min(2, vt.shape[0])
    axes = vt[:k].T
    P = Xc @ axes
    E = None if extra is None else (np.asarray(extra, dtype=np.float64) - mean) @ axes
    if k < 2:
        P = np.column_stack([P, np.zeros(len(P))])
        E = None if E is None else np.column_stack([E, np.zeros(len(E))])
    var = s**2
    ratio = var[:2] / var.sum() if var.sum() > 0 else np.zeros(2)
    return P, E, np.pad(ratio, (0, 2 - len(ratio)))


@dataclass(frozen=True)
class PageTexts:
    """What the analyst window's Models and Clients pages say and show for one method, declared by the method
    (:meth:`core.methods.base.Method.page_texts`). Plain words for a data manager; the method's own terms go in
    the ``*_tip`` fields (tooltips). A page draws only what is declared: an empty title hides its plot, a False
    flag hides its control.

    models : the Models page's explanation (under its heading). train : the button's text.
    loss : title of the live training-loss plot ("" : no such plot), with ``loss_x``/``loss_y`` axis names and
    the sentences shown before training (``loss_before``) and while the method prepares (``loss_during``).
    accuracy : title of the per-site hold-out accuracy plot ("" : none), ``accuracy_none`` when a run has none.
    clients : the Clients page's explanation; ``distance`` the dendrogram's axis name (its term: ``distance_tip``).
    threshold : the name of the cut (e.g. "t"); ``auto_panel`` : the "choose the cut automatically" panel
    (hold-out accuracy for each threshold) applies. columns : summary keys of the Sites table → (plain header,
    tooltip naming the method's term).
    """

    models: str
    train: str = "Train"
    loss: str = ""
    loss_x: str = "epoch"
    loss_y: str = "loss"
    loss_tip: str = ""
    loss_before: str = "The training loss appears here, epoch by epoch, once you press Train."
    loss_during: str = "Preparing the data; the training loss appears here when training starts."
    accuracy: str = ""
    accuracy_before: str = "Each site's accuracy on its held-out rows appears here after training."
    accuracy_none: str = "No hold-out accuracy for this run."
    clients: str = ""
    distance: str = "distance"
    distance_tip: str = ""
    threshold: str = "t"
    auto_panel: bool = False
    columns: dict = field(default_factory=dict)
