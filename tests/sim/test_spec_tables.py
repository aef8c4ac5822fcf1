"""The tables a shared-servers text names (``load_curve=TABLE``, ``slowdown=TABLE``) are read
where the user's text enters, never inside simulplay.sim: the text becomes the canonical
points a signature carries, and every entry path gives the model it gave before."""

import pytest

from simulplay.core.errors import InputError
from simulplay.formats.service_spec import read_spec_tables
from simulplay.sim.servers import Servers
from simulplay.sim.slowdown import parse_flight
from simulplay.sim.variants import parse_service
from simulplay.workflows.experiment_analysis import analysis_variants
from simulplay.workflows.steps import replay_settings

# written out of order on purpose: the canonical points sort by level (by hand from these rows)
CURVE = "concurrency,service_p50_s\n2,0.75\n1,0.5\n4,1.25\n"
CALIBRATION = "in_flight,requests,slowdown\n3,7,1.5\n1,12,1.25\n"
POINTS = "curve=1:0.5;2:0.75;4:1.25,slowdown=1:1.25;3:1.5"


@pytest.fixture
def tables(tmp_path):
    (tmp_path / "c.csv").write_text(CURVE)
    (tmp_path / "cal.csv").write_text(CALIBRATION)
    return tmp_path / "c.csv", tmp_path / "cal.csv"


def test_the_tables_become_the_points_the_label_shows(tables):
    curve, cal = tables
    read = read_spec_tables(f"servers=4,share=talk,load_curve={curve},slowdown={cal}")
    assert read == f"servers=4,share=talk,{POINTS}"
    assert parse_service(read).label() == f"servers=4,share=talk,discipline=fifo,{POINTS}"
    assert read_spec_tables(f"service=servers=4,load_curve={curve}") == "service=servers=4,curve=1:0.5;2:0.75;4:1.25"
    for text in ("service=zero", "scale=2", "servers=2,slowdown=1.2", "servers=2,slowdown=1:1;2:1.5",
                 f"servers=4,{POINTS}"):
        assert read_spec_tables(text) == text


def test_the_command_line_the_api_and_experiment_files_accept_the_tables(tables):
    curve, cal = tables
    want = Servers(4, "talk", "fifo", "1:0.5;2:0.75;4:1.25", "1:1.25;3:1.5")
    text = f"servers=4,share=talk,load_curve={curve},slowdown={cal}"
    assert replay_settings("request", text, "skip").service == want  # --service and service=
    assert replay_settings("request", "measured", "skip", servers=4, share="talk", load_curve=curve,
                           slowdown=str(cal)).service == want  # --servers, --load-curve, --slowdown
    ((variant, written),) = analysis_variants([text], "exp.toml")
    assert variant.service == want and written == text


def test_errors_quote_the_text_as_written_and_sim_refuses_a_table(tables):
    curve, cal = tables
    with pytest.raises(InputError) as e:
        replay_settings("request", f"servers=8,load_curve={curve}", "skip")
    assert str(e.value) == (f"--service 'servers=8,load_curve={curve}', field 'load_curve': load curve ends at "
                            "concurrency 4, below the 8 servers (expected a load curve measured up to concurrency 8 "
                            "or more)")
    with pytest.raises(InputError, match="names a table, which is read before the text is parsed"):
        parse_service(f"servers=2,load_curve={curve}")
    with pytest.raises(InputError, match="is neither a factor nor n:f;… points"):
        parse_flight(str(cal), "x")
