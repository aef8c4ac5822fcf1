"""Options shared by several commands are declared once (simulplay/cli/options.py); their
errors name the flags of the command that was run."""

import pytest


@pytest.mark.parametrize("command,seed_flag", [
    (["eta", "{d}/s.csv", "--a", "A", "--f", "F", "--reference", "immediate", "--out", "{d}/e.csv"], "--seed"),
    (["blocks", "{d}/t.jsonl", "--backend", "cosyvoice", "--out", "{d}/b.csv", "--compare", "{d}/c.csv"],
     "--boot-seed"),
])
def test_a_bad_bootstrap_setting_names_this_command_s_flags(cli, tmp_path, command, seed_flag):
    args = [a.format(d=tmp_path) for a in command] + ["--quantile-method", "weird"]
    proc = cli(*args)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    line = proc.stderr.strip()
    assert f"{seed_flag}/--draws/--quantile-method/--confidence: unknown quantile method 'weird'" in line, line
    assert f"expected {seed_flag.lstrip('-')} ≥ 0, draws ≥ 1" in line
    if seed_flag == "--boot-seed":
        assert "--seed/" not in line  # blocks has --seed too, but it seeds the block selection
