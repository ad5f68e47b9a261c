"""Roles and permissions replicated across the ring (issue 11: `system_auth` replicated like any
keyspace once the cluster exists).

run.sh starts three nodes with PasswordAuthenticator and CassandraAuthorizer. A role statement
through one node holds on every node when it returns (the change is pushed and merged before
the answer); a node that was down during a change catches up from its peers when it comes back
(gossiped digest, pull, merge), and the newest write of each role wins everywhere.
"""

import pytest
from cassandra import Unauthorized
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile, NoHostAvailable
from cassandra.policies import FallthroughRetryPolicy, WhiteListRoundRobinPolicy

from conftest import ccm, nodes, wait_all_up, wait_until

SUPER = ("cassandra", "cassandra")


def login(address, user, password):
    """A driver pinned to `address`, logged in as `user`; raises NoHostAvailable on bad credentials."""
    profile = ExecutionProfile(
        load_balancing_policy=WhiteListRoundRobinPolicy([address]),
        retry_policy=FallthroughRetryPolicy(),
        request_timeout=30,
    )
    c = Cluster(
        [address],
        protocol_version=4,
        auth_provider=PlainTextAuthProvider(username=user, password=password),
        connect_timeout=10,
        control_connection_timeout=10,
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
    )
    try:
        return c, c.connect()
    except Exception:
        c.shutdown()
        raise


def can_login(address, user, password):
    try:
        c, _ = login(address, user, password)
    except NoHostAvailable:
        return False
    c.shutdown()
    return True


@pytest.fixture(scope="module")
def addresses():
    wait_all_up()
    return [a for _, a in sorted(nodes().items())]


@pytest.fixture(scope="module")
def admin(addresses):
    c, s = login(addresses[0], *SUPER)
    yield s
    c.shutdown()


def test_a_role_created_on_one_node_logs_in_on_every_node(addresses, admin):
    admin.execute("CREATE ROLE alice WITH PASSWORD = 'pw-alice' AND LOGIN = true")
    for a in addresses:
        assert can_login(a, "alice", "pw-alice"), f"alice cannot log in through {a}"
        assert not can_login(a, "alice", "wrong"), f"a wrong password logs in through {a}"
    for a in addresses:
        c, s = login(a, *SUPER)
        try:
            rows = s.execute("SELECT role, can_login, is_superuser FROM system_auth.roles WHERE role = 'alice'")
            assert [(r.role, r.can_login, r.is_superuser) for r in rows] == [("alice", True, False)], a
        finally:
            c.shutdown()


def test_a_grant_through_one_node_is_checked_on_another(addresses, admin):
    admin.execute(
        "CREATE KEYSPACE IF NOT EXISTS authks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}"
    )
    admin.execute("CREATE TABLE IF NOT EXISTS authks.t (k int PRIMARY KEY, v int)")
    admin.execute("INSERT INTO authks.t (k, v) VALUES (1, 1)")
    c2, s2 = login(addresses[1], *SUPER)
    try:
        s2.execute("GRANT SELECT ON KEYSPACE authks TO alice")
    finally:
        c2.shutdown()
    c3, alice3 = login(addresses[2], "alice", "pw-alice")
    try:
        assert [r.v for r in alice3.execute("SELECT v FROM authks.t WHERE k = 1")] == [1]
        with pytest.raises(Unauthorized):
            alice3.execute("INSERT INTO authks.t (k, v) VALUES (2, 2)")
        perms = {(r.resource, r.permission) for r in alice3.execute("LIST ALL PERMISSIONS OF alice")}
        assert perms == {("<keyspace authks>", "SELECT")}, perms
    finally:
        c3.shutdown()


def test_a_password_change_holds_everywhere(addresses, admin):
    c3, s3 = login(addresses[2], *SUPER)
    try:
        s3.execute("ALTER ROLE alice WITH PASSWORD = 'pw-alice-2'")
    finally:
        c3.shutdown()
    for a in addresses:
        assert not can_login(a, "alice", "pw-alice"), f"the old password still works through {a}"
        assert can_login(a, "alice", "pw-alice-2"), f"the new password fails through {a}"


def test_a_node_down_during_changes_catches_up_when_it_returns(addresses, admin):
    names = sorted(nodes())
    ccm("stop", names[2])
    try:
        admin.execute("CREATE ROLE bob WITH PASSWORD = 'pw-bob' AND LOGIN = true")
        admin.execute("DROP ROLE alice")
        assert can_login(addresses[1], "bob", "pw-bob")
    finally:
        ccm("start", names[2])
    wait_all_up()
    # The returning node serves its old roles until its peers' digest differs and it pulls.
    wait_until(lambda: can_login(addresses[2], "bob", "pw-bob"), 60, "bob to log in through the node that was down")
    assert not can_login(addresses[2], "alice", "pw-alice-2"), "a role dropped while the node was down came back"
    for a in addresses[:2]:
        assert not can_login(a, "alice", "pw-alice-2"), f"the dropped role logs in through {a}"


def test_a_superuser_password_change_survives_a_restart_of_every_node(addresses, admin):
    admin.execute("ALTER ROLE cassandra WITH PASSWORD = 'changed'")
    for name in sorted(nodes()):
        ccm("stop", name)
        ccm("start", name)
    wait_all_up()
    for a in addresses:
        # No node brings its own first-start default password back.
        assert not can_login(a, "cassandra", "cassandra"), f"the default password logs in through {a}"
        assert can_login(a, "cassandra", "changed"), f"the changed password fails through {a}"
