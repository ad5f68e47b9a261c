"""`helenus nodetool compactionstats`, as Cassandra's: "pending tasks: N" counts the compactions
the tables' strategies would start now plus the running ones, one "- ks.table: n" line per
table with any (they add up to N), then the running ones. So "pending tasks: 0" means the
strategy has nothing left to do, which is what scripts wait for before they measure.
"""

import re
import time

from test_garbagecollect import flush, nodetool, tablestats_number

MIN_THRESHOLD = 4


def pending():
    r = nodetool("compactionstats")
    assert r.returncode == 0, r.stderr
    m = re.match(r"pending tasks: (\d+)\n", r.stdout)
    assert m, r.stdout
    per_table = {t: int(n) for t, n in re.findall(r"^- (\S+): (\d+)$", r.stdout, re.M)}
    assert sum(per_table.values()) == int(m.group(1)), r.stdout
    return int(m.group(1)), per_table


def test_pending_tasks_reach_zero_only_when_the_strategy_is_done(session):
    session.execute(
        "CREATE TABLE IF NOT EXISTS cs_rows (k int PRIMARY KEY, v text) WITH compaction = "
        f"{{'class': 'SizeTieredCompactionStrategy', 'min_threshold': {MIN_THRESHOLD}}}"
    )
    insert = session.prepare("INSERT INTO cs_rows (k, v) VALUES (?, ?)")
    for batch in range(3 * MIN_THRESHOLD):
        for k in range(200):
            session.execute(insert, (batch * 1000 + k, "x" * 100))
        flush(session.keyspace, "cs_rows")
        pending()
    # This table's line only: on a ring (tests/cluster runs this suite against one) other tests'
    # tables may have work of their own.
    mine = f"{session.keyspace}.cs_rows"
    deadline = time.time() + 120
    while time.time() < deadline:
        _, per_table = pending()
        if mine not in per_table:
            break
        time.sleep(0.5)
    assert mine not in per_table, per_table
    # Nothing pending: the size-tiered buckets are all under min_threshold.
    assert tablestats_number(session.keyspace, "cs_rows", "SSTable count") < MIN_THRESHOLD
    assert session.execute("SELECT count(*) FROM cs_rows").one()[0] == 3 * MIN_THRESHOLD * 200
