"""The fuzz campaigns (pkm_control.fuzz): each at the hypothesis profile's budget, and the tally on a broken target.

The suite runs every campaign at the active profile's budget (60; 2000 with PKM_FUZZ=1, the budget of
`make fuzz`). Classes whose code is robust assert no crash, NaN output or limit violation; the others (cli, api,
simulated) are only checked to run and count every input until the branches that make them robust are merged.
"""

import json

import numpy as np
import pytest
from hypothesis import settings, strategies as st

from pkm_control import cli, fuzz
from pkm_control.errors import InvalidInputError
from pkm_control.fuzz import ACCEPTED, CRASH, NAN, REJECTED, VIOLATION
from pkm_control.fuzz import campaigns as c

BUDGET = settings.default.max_examples
ROBUST = ("goals", "controller", "messages")


def campaign(name):
    if name == "messages":
        pytest.importorskip("sensor_msgs.msg", reason="the messages campaign needs the ROS message packages")
    return c.CAMPAIGNS[name]


@pytest.mark.parametrize("name", ROBUST)
def test_robust_classes_have_no_crash_nan_or_violation(name):
    t = c.run_campaign(campaign(name), BUDGET, seed=0)
    assert t.tried == BUDGET and t.counts[REJECTED] > 0 and t.counts[ACCEPTED] > 0
    assert t.failures == 0, fuzz.table({name: t})


@pytest.mark.parametrize("name", sorted(set(fuzz.CLASSES) - set(ROBUST)))
def test_every_other_campaign_runs_and_counts_every_input(name):
    t = c.run_campaign(campaign(name), 20, seed=0, shrink=False)
    assert t.tried == 20 and t.counts[ACCEPTED] > 0


def broken(x):
    """A target with every kind of outcome: x < 100 valid, then a clean rejection, a NaN output, a limit
    violation, and a crash (KeyError) from 400 on."""
    if x < 100:
        return
    if x < 200:
        raise InvalidInputError(f"x = {x} refused")
    if x < 300:
        c.expect_finite("output", [1.0, np.nan])
    if x < 400:
        c.expect(x * 10 <= 2000, f"output {x * 10} beyond the limit 2000")
    raise {}[x]


BROKEN = c.Campaign("broken", lambda: None, lambda ctx: st.integers(0, 999), lambda ctx, x: broken(x))


def test_each_outcome_is_classified():
    kinds = {x: c.classify(BROKEN, None, x) for x in (0, 150, 250, 350, 450)}
    assert [k for k, _ in kinds.values()] == [ACCEPTED, REJECTED, NAN, VIOLATION, CRASH]
    assert kinds[150][1] == "InvalidInputError: x = 150 refused"
    assert kinds[450][1].startswith("KeyError: 450 at ") and "test_fuzz.py" in kinds[450][1]


def test_the_tally_counts_every_input_and_shrinks_the_first_failure():
    t = c.run_campaign(BROKEN, 200, seed=3)
    assert t.tried == 200 and all(t.counts[k] > 0 for k in (ACCEPTED, REJECTED, CRASH, NAN, VIOLATION))
    kind, text, _ = t.first_failure
    assert text == {CRASH: "400", NAN: "200", VIOLATION: "300"}[kind]     # the smallest input of that kind


def test_the_same_seed_gives_the_same_inputs():
    a, b = (c.run_campaign(c.CAMPAIGNS["goals"], 15, seed=7).counts for _ in range(2))
    assert a == b


def test_pkm_fuzz_prints_the_table_and_exits_1_with_the_minimal_input(capsys, monkeypatch):
    assert cli.main(["fuzz", "--budget", "5", "--classes", "goals", "--seed", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["seed"] == 1 and out["classes"]["goals"]["tried"] == 5 and out["classes"]["goals"]["crash"] == 0
    monkeypatch.setitem(c.CAMPAIGNS, "goals", BROKEN)
    with pytest.raises(SystemExit) as exc:
        cli.main(["fuzz", "--budget", "100", "--classes", "goals", "--seed", "1"])
    assert exc.value.code == 1
    out = capsys.readouterr().out
    assert "inputs tried" in out and "broken: first nan (minimal input):\n  200\n" in out


@pytest.mark.parametrize("text", ["nope", "goals,nope", ",", ""])
def test_unknown_classes_are_refused_in_one_line(capsys, text):
    with pytest.raises(SystemExit) as exc:
        cli.main(["fuzz", "--classes", text])
    assert exc.value.code == 2 and len(capsys.readouterr().err.strip().splitlines()) == 1
