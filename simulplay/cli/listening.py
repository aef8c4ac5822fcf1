"""``listening-test`` and ``listening-results``: a blind A/B listening test as a page that opens
from disk, and the preferences its exported ratings give."""

from __future__ import annotations

from pathlib import Path

import typer

from simulplay.cli.options import draws_option, quiet_option, seed_option


def listening_test(
    manifest: Path = typer.Argument(..., help="Synthesized request manifest (from `simulplay synth` or a run "
                                    "folder's manifest.parquet)."),
    store: Path = typer.Option(..., "--store", help="The audio store the manifest was synthesized into."),
    compare: str = typer.Option(..., "--compare", help="The two conditions to compare, FROM,TO (RULE strings or "
                                "the manifest's labels), e.g. immediate,timer:w=4."),
    out: Path = typer.Option(..., "--out", help="Folder for the page, its data and listening-key.json (new, or "
                             "empty; written in full or not at all)."),
    excerpts: int = typer.Option(12, "--excerpts", help="Excerpts drawn (each one A/B pair, three with "
                                 "--reference); refused when the run has fewer."),
    excerpt_s: float = typer.Option(15.0, "--excerpt-s", help="Longest excerpt, seconds of listener audio under "
                                    "the longer condition (0.5 to 600)."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of every random draw (excerpts, sides, repeats, "
                             "order; 0 is a seed), recorded in the key."),
    repeats: int = typer.Option(2, "--repeats", help="Pairs shown a second time, sides swapped, for rater "
                                "consistency."),
    reference: bool = typer.Option(False, "--reference", help="Add a hidden reference (MUSHRA-style): each "
                                   "excerpt's words synthesized as one request by the manifest's backend, "
                                   "paired with both conditions."),
    quiet: bool = quiet_option(),
):
    """Write a blind A/B listening test of two conditions: open OUT/index.html in a browser
    (file://, no server, no network); keep OUT/listening-key.json from the raters.

    Each excerpt says the same words under both conditions: a run of whole requests that
    ends at the same character of the output's text under both, at most --excerpt-s seconds
    of listener audio (what `simulplay render` writes, waits included). The page plays A
    and B, asks which sounds better on −2 (A much better) … +2 (B much better), shows the
    conditions only after the last rating, and downloads the ratings as CSV. Sides, order,
    repeats and excerpts come from one generator seeded with --seed (docs/quality.md).
    """
    from simulplay.cli.console import progress_bar
    from simulplay.core.paths import check_new_folder
    from simulplay.manifest import read_manifest
    from simulplay.store.store import AudioStore
    from simulplay.workflows.listening import build_test, check_settings, write_test

    check_new_folder(out)
    check_settings(excerpts, excerpt_s, repeats)
    loader = AudioStore.open(store, create=False).load_audio
    df, meta = read_manifest(manifest)
    test = build_test(df, loader, compare=compare, excerpts=excerpts, excerpt_s=excerpt_s, seed=seed,
                      repeats=repeats, reference=reference, backend_spec=meta.get("backend_spec"),
                      upstream=meta.get("signature"), source=str(manifest), progress=progress_bar(quiet))
    write_test(test, out)
    for note in test.notes:
        typer.echo(f"note: {note}")
    typer.echo(f"wrote a listening test of {len(test.key['excerpts'])} excerpt(s), {len(test.key['trials'])} "
               f"pair(s) (test {test.key['test_id']}) to {out}; open {out / 'index.html'}")


def listening_results(
    ratings: list[Path] = typer.Argument(..., help="The ratings CSVs the listening page downloaded (one per rater)."),
    out: Path = typer.Option(..., "--out", help="Preference table (.parquet, .csv or .md); the rater consistency "
                             "table goes beside it as OUT.raters (same suffix)."),
    key: Path | None = typer.Option(None, "--key", help="The test's listening-key.json: checks every rating's "
                                    "test and conditions against it and signs the tables with the test's "
                                    "signature (default: the CSVs' own test_id and conditions)."),
    draws: int = draws_option("Bootstrap draws (excerpts and raters resampled together)."),
    seed: int = seed_option(),
):
    """Preferences from a listening test's exported ratings, with a paired bootstrap over
    excerpts and raters, and each rater's consistency on the repeated pairs.

    Per comparison (the second --compare condition over the first; each over the hidden
    reference): mean rating turned towards `condition` (−2 … +2, positive: preferred), its
    interval (excerpts and raters resampled together from one seeded generator), counts of
    ratings preferring each side or neither, on first showings only. OUT.raters: per rater
    and for all, the repeated pairs, how many got the same sign twice, and the mean absolute
    difference of the two ratings (scale points). docs/quality.md#listening-tests.
    """
    from simulplay.cli.console import print_table
    from simulplay.cli.options import bootstrap as bootstrap_settings
    from simulplay.cli.options import check_outputs
    from simulplay.workflows.listening_results import listening_results as compute
    from simulplay.workflows.listening_results import results_paths, write_results

    check_outputs(*results_paths(out))
    res = compute(ratings, key, bootstrap_settings(draws, seed, None, 0.95))
    written = write_results(res, out)
    print_table(res.preferences, res.signature, title="listening test: preference (−2 … +2, positive: condition)")
    print_table(res.consistency, res.signature, title="rater consistency on repeated pairs")
    typer.echo("wrote " + ", ".join(map(str, written)))
