"""The authentication and authorization scenario, run step by step against a node with
PasswordAuthenticator + CassandraAuthorizer. The same steps record Cassandra's answers (the golden
file) and check Helenus's, so the two are compared row for row and error for error.

Usage: python scenario.py HOST PORT OUT.json [--settle] [--authn-only]
  --settle waits after each GRANT/REVOKE for Cassandra's permissions cache (2 s validity).
  --authn-only runs the shorter scenario for PasswordAuthenticator with AllowAllAuthorizer.
"""

import json
import re
import sys
import time

from cassandra import ConsistencyLevel
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import Cluster, NoHostAvailable, ExecutionProfile, EXEC_PROFILE_DEFAULT
from cassandra.policies import WhiteListRoundRobinPolicy

KS = "authks"


def connect(host, port, user, password):
    profile = ExecutionProfile(
        load_balancing_policy=WhiteListRoundRobinPolicy([host]),
        consistency_level=ConsistencyLevel.ONE,
        request_timeout=30,
    )
    cluster = Cluster(
        [host], port=port, auth_provider=PlainTextAuthProvider(user, password),
        execution_profiles={EXEC_PROFILE_DEFAULT: profile}, connect_timeout=15,
        control_connection_timeout=15, protocol_version=5,
    )
    return cluster, cluster.connect()


def login_error(host, port, user, password):
    """The (code, message) the server gives a failed login, or None when the login works."""
    try:
        cluster, _ = connect(host, port, user, password)
    except NoHostAvailable as e:
        text = " ".join(str(v) for v in e.errors.values())
        m = re.search(r'code=([0-9a-fA-F]{4}) \[[^\]]*\] message="(.*)"', text)
        return {"code": int(m.group(1), 16), "message": m.group(2)} if m else {"raw": text}
    cluster.shutdown()
    return None


def value_text(v):
    if isinstance(v, (set, frozenset)) or type(v).__name__ == "SortedSet":
        return sorted(value_text(x) for x in v)
    if isinstance(v, dict):
        return {str(k): value_text(x) for k, x in sorted(v.items())}
    if isinstance(v, (list, tuple)):
        return [value_text(x) for x in v]
    return v


def run(session, query):
    """Columns and rows (sorted, so row order does not matter) or the error's code and message."""
    try:
        rs = session.execute(query)
    except Exception as e:  # the driver raises one class per error code; its text has both
        m = re.search(r'code=([0-9a-fA-F]{4}) \[[^\]]*\] message="(.*)"', str(e))
        if m:
            return {"error": {"code": int(m.group(1), 16), "message": m.group(2)}}
        return {"error": {"code": None, "message": str(e)}}
    cols = list(rs.column_names or [])
    rows = sorted((json.dumps([value_text(v) for v in r], default=str) for r in rs), key=str)
    return {"columns": cols, "rows": [json.loads(r) for r in rows]}


def scenario(host, port, settle):
    out = []
    sessions = {}

    def as_user(user, password="cassandra"):
        if user not in sessions:
            sessions[user] = connect(host, port, user, password)
        return sessions[user][1]

    def drop(user):
        c = sessions.pop(user, None)
        if c:
            c[0].shutdown()

    def step(name, user, query, wait=False, before_s=0.0):
        if settle and before_s:
            time.sleep(before_s)
        result = run(as_user(user, PASSWORDS.get(user, "cassandra")), query)
        out.append({"step": name, "user": user, "query": query, **result})
        if wait and settle:
            time.sleep(2.5)

    def login(name, user, password):
        out.append({"step": name, "login": user, "error": login_error(host, port, user, password)})

    PASSWORDS = {"cassandra": "cassandra", "alice": "alice_pw", "bob": "bob_pw"}
    login("bad password", "cassandra", "wrong")
    login("unknown user", "nobody", "x")
    login("good password", "cassandra", "cassandra")
    su = "cassandra"
    step("drop leftovers", su, f"DROP KEYSPACE IF EXISTS {KS}")
    for r in ("alice", "reader", "bob", "writer"):
        step(f"drop leftover {r}", su, f"DROP ROLE IF EXISTS {r}")
    step("list roles at start", su, "LIST ROLES")
    step("roles table at start", su, "SELECT role, can_login, is_superuser, member_of FROM system_auth.roles")
    step("create alice", su, "CREATE ROLE alice WITH PASSWORD = 'alice_pw' AND LOGIN = true")
    step("create alice again", su, "CREATE ROLE alice WITH PASSWORD = 'x' AND LOGIN = true")
    step("create alice if not exists", su, "CREATE ROLE IF NOT EXISTS alice WITH LOGIN = true")
    step("create reader", su, "CREATE ROLE reader")
    step("list roles", su, "LIST ROLES")
    step("create keyspace", su, f"CREATE KEYSPACE {KS} WITH replication = "
         "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    step("create table", su, f"CREATE TABLE {KS}.t (k int PRIMARY KEY, v int)")
    step("insert as superuser", su, f"INSERT INTO {KS}.t (k, v) VALUES (1, 10)")
    login("alice logs in", "alice", "alice_pw")
    login("alice wrong password", "alice", "nope")
    step("alice reads system.local", "alice", "SELECT cluster_name FROM system.local")
    step("alice reads system_schema", "alice", f"SELECT table_name FROM system_schema.tables WHERE keyspace_name = '{KS}'")
    step("alice select denied", "alice", f"SELECT k, v FROM {KS}.t")
    step("alice insert denied", "alice", f"INSERT INTO {KS}.t (k, v) VALUES (2, 20)")
    step("alice create keyspace denied", "alice", "CREATE KEYSPACE alice_ks WITH replication = "
         "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    step("alice create role denied", "alice", "CREATE ROLE mallory")
    step("alice list all roles", "alice", "LIST ROLES")
    step("grant select on table", su, f"GRANT SELECT ON TABLE {KS}.t TO alice", wait=True)
    step("alice select allowed", "alice", f"SELECT k, v FROM {KS}.t")
    step("alice insert still denied", "alice", f"INSERT INTO {KS}.t (k, v) VALUES (2, 20)")
    step("list permissions of alice", su, "LIST ALL PERMISSIONS OF alice")
    step("alice lists own permissions", "alice", "LIST ALL PERMISSIONS OF alice")
    step("grant modify on keyspace to reader", su, f"GRANT MODIFY ON KEYSPACE {KS} TO reader")
    step("grant select on keyspace to reader", su, f"GRANT SELECT ON KEYSPACE {KS} TO reader")
    step("grant reader to alice", su, "GRANT reader TO alice", wait=True)
    step("alice insert via reader", "alice", f"INSERT INTO {KS}.t (k, v) VALUES (2, 20)")
    step("list roles of alice", su, "LIST ROLES OF alice")
    step("list roles of alice norecursive", su, "LIST ROLES OF alice NORECURSIVE")
    step("list all permissions", su, "LIST ALL PERMISSIONS")
    step("list permissions of alice recursive", su, "LIST ALL PERMISSIONS OF alice")
    step("list permissions of alice norecursive", su, "LIST ALL PERMISSIONS OF alice NORECURSIVE")
    step("list select on table", su, f"LIST SELECT ON TABLE {KS}.t")
    step("list permissions on keyspace", su, f"LIST ALL PERMISSIONS ON KEYSPACE {KS}")
    step("role_members table", su, "SELECT * FROM system_auth.role_members")
    step("role_permissions table", su, "SELECT * FROM system_auth.role_permissions")
    step("roles table", su, "SELECT role, can_login, is_superuser, member_of FROM system_auth.roles")
    step("alice reads roles table", "alice", "SELECT role FROM system_auth.roles")
    step("revoke select on table", su, f"REVOKE SELECT ON TABLE {KS}.t FROM alice", wait=True)
    step("alice select via reader", "alice", f"SELECT k, v FROM {KS}.t")
    step("revoke reader from alice", su, "REVOKE reader FROM alice", wait=True)
    step("alice select denied again", "alice", f"SELECT k, v FROM {KS}.t")
    step("grant to unknown role", su, f"GRANT SELECT ON KEYSPACE {KS} TO nosuchrole")
    step("grant on unknown table", su, f"GRANT SELECT ON TABLE {KS}.nosuch TO alice")
    step("grant on unknown keyspace", su, "GRANT SELECT ON KEYSPACE nosuchks TO alice")
    step("grant unknown role", su, "GRANT nosuchrole TO alice")
    step("grant create on all keyspaces", su, "GRANT CREATE ON ALL KEYSPACES TO alice", wait=True)
    step("alice creates keyspace", "alice", "CREATE KEYSPACE alice_ks WITH replication = "
         "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    step("alice creates table", "alice", "CREATE TABLE alice_ks.t (k int PRIMARY KEY)")
    step("alice writes own table", "alice", "INSERT INTO alice_ks.t (k) VALUES (1)")
    step("alice reads own table", "alice", "SELECT k FROM alice_ks.t")
    step("creator permissions", su, "LIST ALL PERMISSIONS OF alice")
    step("alice drops own keyspace", "alice", "DROP KEYSPACE alice_ks")
    step("permissions after drop", su, "LIST ALL PERMISSIONS OF alice")
    step("alice truncate denied", "alice", f"TRUNCATE {KS}.t")
    step("alice create table denied", "alice", f"CREATE TABLE {KS}.t2 (k int PRIMARY KEY)")
    step("alice alter table denied", "alice", f"ALTER TABLE {KS}.t ADD w int")
    step("alice drop table denied", "alice", f"DROP TABLE {KS}.t")
    step("alice create index denied", "alice", f"CREATE INDEX ON {KS}.t (v)")
    step("alice lwt denied", "alice", f"UPDATE {KS}.t SET v = 1 WHERE k = 1 IF v = 10")
    step("alice reads system_views", "alice", "SELECT name FROM system_views.settings WHERE name = 'cluster_name'")
    step("alice lists everyone's permissions", "alice", "LIST ALL PERMISSIONS")
    step("alice lists cassandra's permissions", "alice", "LIST ALL PERMISSIONS OF cassandra")
    step("alice lists roles of cassandra", "alice", "LIST ROLES OF cassandra")
    step("alice grants without authorize", "alice", f"GRANT SELECT ON TABLE {KS}.t TO reader")
    step("alice grants role without authorize", "alice", "GRANT reader TO alice")
    step("alice drops herself", "alice", "DROP ROLE alice")
    step("alice alters her own login", "alice", "ALTER ROLE alice WITH LOGIN = false")
    step("alice makes herself superuser", "alice", "ALTER ROLE alice WITH SUPERUSER = true")
    step("grant create on all roles", su, "GRANT CREATE ON ALL ROLES TO alice", wait=True)
    step("alice creates dave", "alice", "CREATE ROLE dave WITH LOGIN = false")
    step("alice creates superuser", "alice", "CREATE ROLE eve WITH SUPERUSER = true")
    step("alice permissions on dave", su, "LIST ALL PERMISSIONS ON ROLE dave")
    step("alice grants dave to reader", "alice", "GRANT dave TO reader", wait=True)
    step("circular grant", su, "GRANT reader TO dave")
    step("repeated grant", su, "GRANT dave TO reader")
    step("revoke not granted", su, "REVOKE reader FROM dave")
    step("alice drops dave", "alice", "DROP ROLE dave")
    step("list roles of unknown", su, "LIST ROLES OF nosuchrole")
    step("list permissions of unknown", su, "LIST ALL PERMISSIONS OF nosuchrole")
    step("grant describe on keyspace", su, f"GRANT DESCRIBE ON KEYSPACE {KS} TO alice")
    step("grant all on role", su, "GRANT ALL ON ROLE reader TO alice")
    step("list all on role", su, "LIST ALL PERMISSIONS ON ROLE reader")
    step("revoke all on role", su, "REVOKE ALL ON ROLE reader FROM alice")
    step("grant all functions", su, f"GRANT EXECUTE ON ALL FUNCTIONS IN KEYSPACE {KS} TO alice")
    step("list on all functions", su, "LIST ALL PERMISSIONS ON ALL FUNCTIONS")
    step("superuser drops itself", su, "DROP ROLE cassandra")
    step("superuser demotes itself", su, "ALTER ROLE cassandra WITH SUPERUSER = false")
    step("alter role with options", su, "ALTER ROLE alice WITH OPTIONS = {'a': 'b'}")
    step("create user if not exists", su, "CREATE USER IF NOT EXISTS cassandra WITH PASSWORD 'x'")
    step("list users as alice", "alice", "LIST USERS")
    step("alter alice password", su, "ALTER ROLE alice WITH PASSWORD = 'alice_pw2'", wait=True)
    drop("alice")
    login("alice old password", "alice", "alice_pw")
    login("alice new password", "alice", "alice_pw2")
    step("alter alice nologin", su, "ALTER ROLE alice WITH LOGIN = false", wait=True)
    login("alice cannot login", "alice", "alice_pw2")
    step("alter unknown role", su, "ALTER ROLE nosuchrole WITH LOGIN = true")
    step("create user bob", su, "CREATE USER bob WITH PASSWORD 'bob_pw' NOSUPERUSER")
    step("list users", su, "LIST USERS")
    step("alter user bob", su, "ALTER USER bob WITH PASSWORD 'bob_pw2'",
         # Cassandra 5.0 refuses a second password change within 5 s
         before_s=5.5)
    step("drop user bob", su, "DROP USER bob")
    step("create writer superuser", su, "CREATE ROLE writer WITH SUPERUSER = true AND LOGIN = false")
    step("list roles with writer", su, "LIST ROLES")
    step("drop role writer", su, "DROP ROLE writer")
    step("drop role alice", su, "DROP ROLE alice")
    step("drop role alice again", su, "DROP ROLE alice")
    step("drop role if exists", su, "DROP ROLE IF EXISTS alice")
    step("permissions of dropped", su, "LIST ALL PERMISSIONS")
    step("drop reader", su, "DROP ROLE reader")
    step("list roles at end", su, "LIST ROLES")
    step("drop keyspace", su, f"DROP KEYSPACE {KS}")
    for c, _ in sessions.values():
        c.shutdown()
    return out


def scenario_authn_only(host, port, settle):
    """PasswordAuthenticator with AllowAllAuthorizer: logins are checked, permissions are not."""
    out = []
    sessions = {}
    passwords = {"cassandra": "cassandra", "frank": "frank_pw"}

    def step(name, user, query):
        if user not in sessions:
            sessions[user] = connect(host, port, user, passwords[user])
        out.append({"step": name, "user": user, "query": query, **run(sessions[user][1], query)})

    su = "cassandra"
    step("drop leftovers", su, f"DROP KEYSPACE IF EXISTS {KS}")
    for r in ("frank", "grace"):
        step(f"drop leftover {r}", su, f"DROP ROLE IF EXISTS {r}")
    step("create frank", su, "CREATE ROLE frank WITH PASSWORD = 'frank_pw' AND LOGIN = true")
    step("create keyspace", su, f"CREATE KEYSPACE {KS} WITH replication = "
         "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    step("create table", su, f"CREATE TABLE {KS}.t (k int PRIMARY KEY, v int)")
    out.append({"step": "frank bad password", "login": "frank",
                "error": login_error(host, port, "frank", "nope")})
    step("frank writes", "frank", f"INSERT INTO {KS}.t (k, v) VALUES (1, 1)")
    step("frank reads", "frank", f"SELECT k, v FROM {KS}.t")
    step("frank reads roles table", "frank", "SELECT role FROM system_auth.roles")
    step("frank creates a role", "frank", "CREATE ROLE grace")
    step("frank creates a superuser", "frank", "CREATE ROLE eve WITH SUPERUSER = true")
    step("frank grants a role", "frank", "GRANT grace TO frank")
    step("frank lists roles", "frank", "LIST ROLES")
    step("frank grants a permission", "frank", f"GRANT SELECT ON KEYSPACE {KS} TO grace")
    step("frank revokes a permission", "frank", f"REVOKE SELECT ON KEYSPACE {KS} FROM grace")
    step("superuser lists permissions", su, "LIST ALL PERMISSIONS")
    step("frank drops a role", "frank", "DROP ROLE grace")
    step("drop frank", su, "DROP ROLE frank")
    step("drop keyspace", su, f"DROP KEYSPACE {KS}")
    for c, _ in sessions.values():
        c.shutdown()
    return out


if __name__ == "__main__":
    host, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    which = scenario_authn_only if "--authn-only" in sys.argv else scenario
    result = which(host, port, "--settle" in sys.argv)
    with open(path, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
        f.write("\n")
