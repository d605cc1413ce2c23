"""docs/INTEROP.md's conformance table is the battery's: one row per registered check, in run order, in the
generator's exact format (tools.conformance.doctable). The interop tests compare each run's results with it."""

from __future__ import annotations

from pathlib import Path

from tools.conformance import doctable

DOC = Path(__file__).parents[2] / "docs" / "INTEROP.md"


def test_the_doc_lists_every_check_of_the_battery_in_order() -> None:
    text = DOC.read_text()
    table = doctable.parse(text)
    ids = doctable.check_ids()
    assert len(ids) == len(set(ids)) > 50
    for stem, _ in doctable.RUNS:
        assert list(table[stem]) == ids, stem
        assert set(table[stem].values()) <= {"PASS", "SKIP"}, stem
    assert doctable.replace(text, doctable.render(table)) == text  # generated, not hand-edited


def test_render_and_parse_round_trip() -> None:
    ids = doctable.check_ids()
    results = {"kafka": {ids[0]: "SKIP"}, "kraftd": {i: "PASS" for i in ids}}
    doc = f"intro\n{doctable.BEGIN}\nold\n{doctable.END}\nafter\n"
    new = doctable.replace(doc, doctable.render(results))
    assert new.startswith("intro\n") and new.endswith(f"{doctable.END}\nafter\n")
    back = doctable.parse(new)
    assert back["kafka"][ids[0]] == "SKIP" and back["kafka"][ids[1]] == "-"
    assert back["kraftd"] == results["kraftd"] and set(back["kraftd-snapshots"].values()) == {"-"}
