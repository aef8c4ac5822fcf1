"""Closed-loop synthesis on the fake backend: a commit policy before a policy, a failed
request ending its output, and open-loop rules beside them untouched."""

import pandas as pd

import tests.support.fakes  # noqa: F401  (registers fake-test)
from simulplay.backends import parse_backend
from simulplay.grouping import Served, parse_rule, run_policy
from simulplay.grouping.registry import commit_rules
from simulplay.store.store import AudioStore
from simulplay.synthesis.run import synthesize_to_manifest
from tests.support.factories import stream

S1 = stream([0, 0.5, 1, 2, 2.5, 4], ["the bridge", "was built", "in spring.", "people crossed", "it", "daily."],
            source_s=8.0)


def served_from(rows: pd.DataFrame):
    table = rows.set_index("seq")
    return lambda req: Served(float(table.at[req.seq, "service_s"]), n_samples=int(table.at[req.seq, "n_samples"]),
                              sample_rate=int(table.at[req.seq, "sample_rate"]))


def test_a_commit_policy_before_a_policy_runs_on_what_it_commits(tmp_path):
    rules = commit_rules([parse_rule("backlog:below=0.5,min_words=1"), parse_rule("immediate")], ["stable:k=2"])
    res = synthesize_to_manifest([S1], rules, parse_backend("fake-test"), AudioStore(tmp_path / "s"),
                                 tmp_path / "m.parquet", contention_sample=0)
    m = res.manifest
    cond = rules[0].canonical()
    assert cond.startswith("stable:k=2+backlog") and set(m["condition"]) == {cond, rules[1].canonical()}
    rows = m[m["condition"] == cond]
    again = run_policy(rules[0].prepare(S1), rules[0].rule, served_from(rows))
    assert [(r.text, r.dispatch_s, r.trigger) for r in again.requests] == \
        list(zip(rows["text"], rows["dispatch_s"], rows["trigger"]))


def test_a_failed_request_ends_its_output_and_a_rerun_tries_it_again(tmp_path):
    store = AudioStore(tmp_path / "s")
    rule = [parse_rule("backlog:below=0.5,min_words=1")]
    for run in (1, 2):
        res = synthesize_to_manifest([S1], rule, parse_backend("fake-test:fail_on=people"), store,
                                     tmp_path / f"m{run}.parquet", contention_sample=0)
        m = res.manifest
        failed = m[m["error"] != ""]
        # the output stops at the failed request: it is the last row, and the rest was never sent
        assert len(failed) == 1 and failed.index[0] == m.index[-1] and "people" in failed["text"].iloc[0]
        assert "daily." not in " ".join(m["text"])
    # the second run served the stored requests without synthesis and tried the failed one again
    assert (res.stats.synthesized, res.stats.skipped, res.stats.failed) == (0, len(m) - 1, 1)


def test_a_worker_that_dies_on_a_closed_loop_request_is_replaced_and_the_request_retried(tmp_path):
    from simulplay.synthesis.executors import parse_executor

    backend = parse_backend(f"fake-test:die_on=people,die_marker={tmp_path / 'died'}")
    res = synthesize_to_manifest([S1], [parse_rule("backlog:below=0.5,min_words=1")], backend,
                                 AudioStore(tmp_path / "s"), tmp_path / "m.parquet",
                                 executor=parse_executor("process:1"), contention_sample=0)
    m = res.manifest
    assert (m["error"] == "").all() and " ".join(m["text"]).endswith("daily.")
    assert res.stats.worker_deaths == 1
    assert m.loc[m["text"].str.contains("people"), "attempts"].tolist() == [2]


def test_framework_policies_synthesize_spans_and_replay_to_their_clock(tmp_path):
    # LiveKit's pacer and RealtimeTTS with a buffer threshold send character spans of the text
    # (a sentence may end inside an update): the manifest's requests join to the stream's text,
    # the engine fed the recorded service and samples sends the same requests, and the replay
    # of the manifest ends where the engine's playback ended
    import simulplay
    from simulplay.core.timebase import to_ns
    from simulplay.traces.model import join_texts

    s = stream([0, 0.7, 1.4, 2.1, 2.8, 3.5, 4.2],
               ["The bridge was built in spring. Peo", "ple crossed it daily, and", "the city grew. It was",
                "a good year. Then the", "rain came. Everyone stayed", "home for a week.", "It ended."],
               glue=[False, True, False, False, False, False, False], source_s=8.0)
    rules = [parse_rule("livekit-pacer:min_audio_buffer=1,max_text_length=300,min_sentence_len=20"),
             parse_rule("realtimetts:buffer_threshold=0.5")]
    res = synthesize_to_manifest([s], rules, parse_backend("fake-test"), AudioStore(tmp_path / "s"),
                                 tmp_path / "m.parquet", contention_sample=0)
    m = res.manifest
    summary = simulplay.replay(tmp_path / "m.parquet").summary.set_index("condition")
    for rule in rules:
        rows = m[m["condition"] == rule.canonical()]
        assert join_texts(list(rows["text"]), list(rows["glue"])) == s.joined
        again = run_policy(s, rule, served_from(rows))
        assert [(r.text, r.dispatch_s) for r in again.requests] == list(zip(rows["text"], rows["dispatch_s"]))
        assert to_ns(summary.loc[rule.canonical(), "end_s"]) == max(r.end_ns for r in again.requests)
    cut = m[m["condition"] == rules[0].canonical()]["text"].iloc[0]
    assert cut == "The bridge was built in spring."  # its first sentence, cut inside the first update
    # a replay under zero service decides them again on the stream from the stored durations:
    # the pacer's texts under zero service are all texts the run synthesized; RealtimeTTS's
    # are not, and without open-loop requests to fit a duration model on its output is kept
    from simulplay.durationmodel.redecide import redecide
    from simulplay.sim.variants import Zero

    decided = redecide(m, [s], Zero())
    pacer = decided.manifest[decided.manifest["condition"] == rules[0].canonical()]
    assert join_texts(list(pacer["text"]), list(pacer["glue"])) == s.joined
    assert [k[2] for k in decided.outputs] == [rules[0].canonical()]
    assert [(k[2], why) for k, why in decided.kept.items()] == [
        (rules[1].canonical(),
         "a text the run did not synthesize and no open-loop requests to fit a duration model on")]
