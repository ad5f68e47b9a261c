"""Shared fixtures for the cassandra-driver suite: contact point from env, one keyspace per run."""

import os

import pytest
from cassandra.cluster import Cluster, ExecutionProfile, EXEC_PROFILE_DEFAULT
from cassandra.policies import RoundRobinPolicy

HOST = os.environ.get("HELENUS_HOST", "127.0.0.1")
PORT = int(os.environ.get("HELENUS_PORT", "9042"))
KS = "helenus_clients_python"


def make_cluster(**kw):
    """A Cluster bounded in time everywhere, pointed at HELENUS_HOST:HELENUS_PORT."""
    profile = ExecutionProfile(load_balancing_policy=RoundRobinPolicy(), request_timeout=30)
    kw.setdefault("protocol_version", 4)
    return Cluster(
        [HOST],
        port=PORT,
        connect_timeout=10,
        control_connection_timeout=10,
        max_schema_agreement_wait=20,
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        **kw,
    )


@pytest.fixture(scope="session")
def cluster():
    c = make_cluster()
    yield c
    c.shutdown()


@pytest.fixture(scope="session")
def session(cluster):
    s = cluster.connect()
    s.execute(f"DROP KEYSPACE IF EXISTS {KS}")
    s.execute(
        f"CREATE KEYSPACE {KS} WITH replication = "
        "{'class': 'SimpleStrategy', 'replication_factor': 1}"
    )
    s.set_keyspace(KS)
    yield s
    s.execute(f"DROP KEYSPACE IF EXISTS {KS}")
