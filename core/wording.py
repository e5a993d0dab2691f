"""Plain words for hospital staff: what leaves a site and what stays (a method's own words are its
``plain_title``).

One place for the participant-facing sentences, so the wizard, the results window and the CLI say the same
thing, and the technical terms (x_tilde, float32, "private reduction map f") stay one click away in a
"Details" disclosure. The analyst side keeps its terms (with tooltips).
"""

from __future__ import annotations

# what each shipped array is, for someone who has never heard of Data Collaboration
ARRAY_WORDS = {
    "x_tilde": "your rows, compressed (each number a weighted mix of your columns)",
    "anchor_tilde": "the shared made-up rows, compressed the same way (so the analyst can line sites up)",
    "y": "the class of each row (in the same shuffled order)",
    "label_counts": "how many of your rows are in each class",
    "id_hash": "scrambled row ids that cannot be turned back into ids",
    "variance_kept": "one number: how much of your data's variation the compression keeps",
    "own_cv": "a few scores: how well a model of your own rows alone predicts them (so the analyst sends you "
              "something better, or tells you to keep yours)",
}

STAYS_WORDS = [
    "your data file and every original value in it",
    "the map that compressed your rows (no secret against someone with rows like yours: the disclosure check "
    "measures how much they could undo)",
    "the anchor file and its secret",
    "the row order, so the results can be matched back to your rows",
]

ANCHOR_WORDS = {
    "smote": "made-up rows that resemble a small shared sample",
    "uniform": "made-up random rows within each column's range",
    "gaussian": "made-up random rows with each column's usual values",
}

REDUCTION_WORDS = {
    "pca": "Keep the main patterns (recommended)",
    "lpp": "Keep which rows are alike",
    "random": "Random mix of the columns",
}

REDUCTION_DETAILS = {
    "pca": "PCA (principal components): keeps the directions along which your rows vary most",
    "lpp": "LPP (locality preserving projection): keeps which of your rows are neighbours",
    "random": "random projection: a random linear map of your columns",
}


def leaves_sentence(n_rows: int, n_columns: int, kept: int, *, labels: str = "none", ids: bool = False,
                    noise: float = 0.0) -> str:
    """E.g. "A compressed copy of your 4,537 rows: 15 numbers per row instead of 16; no names, no original
    values." plus what else leaves (labels, scrambled ids, noise). A linear map is not a secret against someone
    with rows like yours (DESIGN §3), so the words never call it one."""
    rows = "row" if n_rows == 1 else "rows"
    nums = "number" if kept == 1 else "numbers"
    per_row = (f"{kept} {nums} per row instead of {n_columns}" if kept < n_columns
               else f"{kept} {nums} per row, as many as your columns, each a weighted mix of them")
    text = f"A compressed copy of your {n_rows:,} {rows}: {per_row}; no names, no original values."
    extra = []
    if labels == "rows":
        extra.append("the class of each row")
    elif labels == "counts":
        extra.append("how many rows are in each class")
    if ids:
        extra.append("scrambled row ids (they cannot be turned back)")
    if extra:
        text += " Also: " + " and ".join(extra) + "."
    if noise:
        text += f" Random noise of {noise:g} × each column's spread is added before it leaves."
    return text

# A package that tells the site to keep its own model (issue #15): what ``participant apply`` says.
KEPT_OWN_WORDS = ("the analyst's cross-validation did not find the shared model clearly better for your rows than "
                  "your own, so these results come from the model trained on your own rows when you exported")
