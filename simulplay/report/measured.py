"""Where a report's numbers were measured: the machine and the clock check of its synthesis.

Read from ``run.json`` (a run folder), else from the request manifest's metadata (a
manifest written by ``simulplay synth``); a manifest from elsewhere says neither, and the
report says so. The machine's load is the one recorded while the requests were measured
(each request's ``load1``), not the load when the run or the report was made: a run that
found its audio in the store would otherwise show today's load beside the clock verdict of
the day the audio was timed. Service times — and so readiness, idle time and η — depend on the machine
and on what else ran on it: the report states both, and that another machine will differ.
"""

from __future__ import annotations

from typing import Any

from simulplay.core.provenance import machine_line
from simulplay.report.read_run import RunData
from simulplay.synthesis.clock_check import ClockCheck, load_at_measurement

NOT_RECORDED = "not recorded"


def measured_on(run: RunData) -> tuple[dict[str, Any], dict[str, Any]]:
    """(machine, clock) of the run's synthesis; empty dicts when nothing recorded them."""
    rec = run.run_record
    if rec is not None and (rec.clock or rec.machine):
        return rec.machine, rec.clock
    meta = run.manifest.meta  # a Parquet manifest's metadata (a CSV's: none)
    return meta.get("machine") or {}, meta.get("clock") or {}


def clock_text(clock: dict[str, Any]) -> str:
    """``clock: stable (0 of 80 measured requests contended (0.0 %); probe spread 1.041 over 3 probes)``."""
    if not clock:
        return f"clock: {NOT_RECORDED}"
    check = ClockCheck(int(clock.get("measured", 0)), int(clock.get("unmeasured", 0)),
                       int(clock.get("contended", 0)), str(clock.get("criterion", "")), list(clock.get("probes", [])),
                       clock.get("wall_s"), clock.get("waited_s"))
    return f"{clock.get('verdict', check.verdict)} ({check.details()})"


def measured_machine(run: RunData) -> str:
    """The machine (:func:`machine_line` without the load when the report is made) and its
    1-minute load while the requests were measured."""
    mach, _ = measured_on(run)
    recorded = None if run.run_record is None else run.run_record.load_at_measurement
    load = recorded or load_at_measurement(run.manifest.frame)
    text = machine_line({k: v for k, v in mach.items() if k != "load"}).replace(", load unknown", "") if mach else ""
    if load:
        text += (("; " if text else "") + f"1-minute load while its requests were measured: median "
                 f"{load['median']:.2f}, max {load['max']:.2f} ({load['requests']} requests)")
    return text


def machine_items(run: RunData) -> list[tuple[str, str]]:
    """The overview table's rows: the machine and the clock verdict with its numbers."""
    _, clock = measured_on(run)
    return [("machine", measured_machine(run) or NOT_RECORDED), ("clock", clock_text(clock))]


def measured_sentence(run: RunData) -> str:
    """The report's statement of where its service times come from."""
    mach, clock = measured_on(run)
    if not mach and not clock:
        return ("The inputs do not record the machine or the clock check of their synthesis; service times, and so "
                "idle time and η, depend on both.")
    where = measured_machine(run) or "a machine the inputs do not name"
    return (f"Service times were measured on {where}; {clock_text(clock)}. They feed readiness, idle time and η, so "
            "a run on another machine, or on a busy one, gives other numbers (see the clock check: "
            "docs/synthesis.md#the-clock-check).")
