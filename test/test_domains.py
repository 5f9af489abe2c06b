"""The ROS domain an isolated run takes (ros.topology.isolated_domain: `pkm demo`, `pkm fuzz`, `pkm bench stress`):
held under the run lock, and none that a test run takes (conftest: its pool and the fixed domains of the test
modules), so that no demo's graph meets a test run's."""

from conftest import TEST_DOMAINS

from pkm_control.ros import topology

#: the fixed domains of the test modules (test_launch 142-145, test_security 146, the modules' defaults 141-148
#: without conftest) and test_tools' empty-domain twins of the pool (its domain + 50)
FIXED = set(range(141, 152)) | {d + 50 for d in TEST_DOMAINS}


def test_an_isolated_domain_is_held_and_none_of_a_test_run(monkeypatch):
    monkeypatch.delenv("ROS_DOMAIN_ID", raising=False)
    monkeypatch.setattr(topology, "_isolated", [])       # this process has taken none yet
    domain = topology.domain_id()
    assert domain in topology.ISOLATED_DOMAINS and topology.domain_id() == domain     # the same at every call
    assert topology.hold_domain(domain) is None          # held: no other run takes it
    assert not set(topology.ISOLATED_DOMAINS) & (set(TEST_DOMAINS) | FIXED)
    assert topology.domain_id(7) == 7 and topology.domain_id(isolated=False) == 0
