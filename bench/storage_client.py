#!/usr/bin/env python3
"""Python client parts of bench/storage.sh (DataStax driver, the same code for both servers).

  storage_client.py wide-load  HOST --partitions P --rows R [--value-size 100]
  storage_client.py wide-slice HOST --partitions P --rows R --query limit|range --duration S
  storage_client.py gdelt-gen  FILE --rows N [--seed 1979]      (a deterministic GDELT 1.0-shaped data set)
  storage_client.py gdelt-load HOST FILE

Each command prints one JSON object on stdout. helenus-stress user profiles derive every key column from
the operation's index, so they cannot express "few partitions, random clustering start" or GDELT's skewed
country codes: hence this script. Latency is measured in the client from the request to the callback
(Python + driver included, the same for both servers); `client_cpu_s` says how busy the client was.
"""
import argparse
import json
import pickle
import random
import resource
import sys
import threading
import time

from cassandra import ConsistencyLevel
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
from cassandra.concurrent import execute_concurrent
from cassandra.policies import RetryPolicy, WhiteListRoundRobinPolicy
from cassandra.query import UNSET_VALUE, BatchStatement, BatchType, tuple_factory

WIDE_KS, WIDE_TABLE = "bench_wide", "t"
GDELT_KS, GDELT_TABLE = "bench_gdelt", "events"


def connect(host, timeout=30):
    profile = ExecutionProfile(
        load_balancing_policy=WhiteListRoundRobinPolicy([host]),
        retry_policy=RetryPolicy(),
        row_factory=tuple_factory,
        request_timeout=timeout,
        consistency_level=ConsistencyLevel.ONE,
    )
    cluster = Cluster([host], port=9042, protocol_version=4,
                      execution_profiles={EXEC_PROFILE_DEFAULT: profile},
                      schema_metadata_enabled=False, token_metadata_enabled=False,
                      connect_timeout=30, control_connection_timeout=30, max_schema_agreement_wait=10)
    return cluster, cluster.connect()


def cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def load(session, stmts, concurrency=64):
    """Executes (statement, params) pairs; returns (elapsed_s, errors, first_error)."""
    t0 = time.perf_counter()
    errors, first = 0, None
    for ok, res in execute_concurrent(session, stmts, concurrency=concurrency, raise_on_first_error=False,
                                      results_generator=True):
        if not ok:
            errors += 1
            first = first or repr(res)
    return time.perf_counter() - t0, errors, first


def pct(sorted_ms, q):
    if not sorted_ms:
        return None
    return round(sorted_ms[min(len(sorted_ms) - 1, int(q * len(sorted_ms)))], 3)


class FixedDuration:
    """`concurrency` chains of requests, each issuing the next one from the previous one's callback,
    until `duration` seconds have passed (closed loop, no rate limit)."""

    def __init__(self, session, stmt, params, concurrency, duration):
        self.session, self.stmt, self.params = session, stmt, params
        self.concurrency, self.duration = concurrency, duration
        self.lock = threading.Lock()
        self.lat_ms, self.rows, self.errors, self.first_error = [], 0, 0, None
        self.done = threading.Event()

    def run(self):
        self.inflight = self.concurrency
        self.t0 = time.perf_counter()
        self.deadline = self.t0 + self.duration
        c0 = cpu_s()
        for _ in range(self.concurrency):
            self.issue()
        self.done.wait(self.duration + 120)
        elapsed = time.perf_counter() - self.t0
        lat = sorted(self.lat_ms)
        return {
            "ops": len(lat), "errors": self.errors, "first_error": self.first_error,
            "elapsed_s": round(elapsed, 3), "rate_per_s": round(len(lat) / elapsed, 1),
            "rows_per_op": round(self.rows / len(lat), 1) if lat else None,
            "latency_p50_ms": pct(lat, 0.50), "latency_p99_ms": pct(lat, 0.99),
            "latency_mean_ms": round(sum(lat) / len(lat), 3) if lat else None,
            "concurrency": self.concurrency, "client_cpu_s": round(cpu_s() - c0, 2),
        }

    def finish_chain(self):
        with self.lock:
            self.inflight -= 1
            if self.inflight == 0:
                self.done.set()

    def issue(self):
        if time.perf_counter() >= self.deadline:
            self.finish_chain()
            return
        t = time.perf_counter()
        try:
            f = self.session.execute_async(self.stmt, self.params())
        except Exception as e:  # noqa: BLE001 - counted, the chain goes on
            self.on_err(e, t)
            return
        f.add_callbacks(self.on_ok, self.on_err, callback_args=(t,), errback_args=(t,))

    def on_ok(self, rows, t):
        ms = (time.perf_counter() - t) * 1000
        with self.lock:
            self.lat_ms.append(ms)
            self.rows += len(rows)
        self.issue()

    def on_err(self, exc, t):
        with self.lock:
            self.errors += 1
            self.first_error = self.first_error or repr(exc)
        if self.errors > 1000:
            self.deadline = 0
        self.issue()


# ---------------------------------------------------------------------------------------- wide partitions

def wide_value(rng, size):
    return "".join(rng.choices("abcdefghijklmnopqrstuvwxyz0123456789", k=size))


def wide_load(a):
    cluster, s = connect(a.host)
    try:
        s.execute(f"CREATE KEYSPACE IF NOT EXISTS {WIDE_KS} WITH replication = "
                  "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute(f"CREATE TABLE IF NOT EXISTS {WIDE_KS}.{WIDE_TABLE} (pk int, ck int, v text, "
                  "PRIMARY KEY ((pk), ck))")
        ins = s.prepare(f"INSERT INTO {WIDE_KS}.{WIDE_TABLE} (pk, ck, v) VALUES (?, ?, ?)")
        rng = random.Random(a.seed)
        # 64 distinct values reused: generating 1M random strings in Python would dominate the load time;
        # rotating 64 of them still defeats run-length tricks but compresses like repeated text.
        values = [wide_value(rng, a.value_size) for _ in range(64)]

        def batches():
            # Unlogged batches of `batch` rows of one partition (a single mutation), partitions interleaved.
            end = a.rows if a.ck_to is None else min(a.rows, a.ck_to)
            for start in range(a.ck_from, end, a.batch):
                for pk in range(a.partitions):
                    b = BatchStatement(batch_type=BatchType.UNLOGGED)
                    for ck in range(start, min(end, start + a.batch)):
                        b.add(ins, (pk, ck, values[(pk * 7 + ck) % 64]))
                    yield b, None

        c0 = cpu_s()
        elapsed, errors, first = load(s, batches(), a.concurrency)
        n = a.partitions * ((a.rows if a.ck_to is None else min(a.rows, a.ck_to)) - a.ck_from)
        print(json.dumps({"rows": n, "partitions": a.partitions, "rows_per_partition": a.rows,
                          "value_bytes": a.value_size, "batch_rows": a.batch, "load_s": round(elapsed, 3),
                          "rows_per_s": round(n / elapsed, 1), "errors": errors, "first_error": first,
                          "client_cpu_s": round(cpu_s() - c0, 2)}))
    finally:
        cluster.shutdown()


def wide_slice(a):
    cluster, s = connect(a.host)
    try:
        span = 100
        if a.query == "limit":
            cql = f"SELECT * FROM {WIDE_KS}.{WIDE_TABLE} WHERE pk = ? AND ck >= ? LIMIT {span}"
        else:
            cql = f"SELECT * FROM {WIDE_KS}.{WIDE_TABLE} WHERE pk = ? AND ck >= ? AND ck < ?"
        stmt = s.prepare(cql)
        stmt.fetch_size = 1000  # one page per query
        rng = random.Random(a.seed)
        top = max(1, a.rows - span)

        def params():
            pk, ck = rng.randrange(a.partitions), rng.randrange(top)
            return (pk, ck) if a.query == "limit" else (pk, ck, ck + span)

        out = FixedDuration(s, stmt, params, a.concurrency, a.duration).run()
        out.update({"query": cql.replace(f"{WIDE_KS}.", ""), "rows_per_slice": span})
        print(json.dumps(out))
    finally:
        cluster.shutdown()


# ---------------------------------------------------------------------------------------- GDELT

# The 57 columns of the GDELT 1.0 event backfile (1979-2013); SOURCEURL (column 58) only exists in the daily
# files from April 2013 on, so the 1979-1984 events have none.
GDELT_COLUMNS = [
    ("GLOBALEVENTID", "bigint"), ("SQLDATE", "int"), ("MonthYear", "int"), ("Year", "int"),
    ("FractionDate", "double"),
    ("Actor1Code", "text"), ("Actor1Name", "text"), ("Actor1CountryCode", "text"),
    ("Actor1KnownGroupCode", "text"), ("Actor1EthnicCode", "text"), ("Actor1Religion1Code", "text"),
    ("Actor1Religion2Code", "text"), ("Actor1Type1Code", "text"), ("Actor1Type2Code", "text"),
    ("Actor1Type3Code", "text"),
    ("Actor2Code", "text"), ("Actor2Name", "text"), ("Actor2CountryCode", "text"),
    ("Actor2KnownGroupCode", "text"), ("Actor2EthnicCode", "text"), ("Actor2Religion1Code", "text"),
    ("Actor2Religion2Code", "text"), ("Actor2Type1Code", "text"), ("Actor2Type2Code", "text"),
    ("Actor2Type3Code", "text"),
    ("IsRootEvent", "int"), ("EventCode", "text"), ("EventBaseCode", "text"), ("EventRootCode", "text"),
    ("QuadClass", "int"), ("GoldsteinScale", "double"), ("NumMentions", "int"), ("NumSources", "int"),
    ("NumArticles", "int"), ("AvgTone", "double"),
    ("Actor1Geo_Type", "int"), ("Actor1Geo_FullName", "text"), ("Actor1Geo_CountryCode", "text"),
    ("Actor1Geo_ADM1Code", "text"), ("Actor1Geo_Lat", "double"), ("Actor1Geo_Long", "double"),
    ("Actor1Geo_FeatureID", "int"),
    ("Actor2Geo_Type", "int"), ("Actor2Geo_FullName", "text"), ("Actor2Geo_CountryCode", "text"),
    ("Actor2Geo_ADM1Code", "text"), ("Actor2Geo_Lat", "double"), ("Actor2Geo_Long", "double"),
    ("Actor2Geo_FeatureID", "int"),
    ("ActionGeo_Type", "int"), ("ActionGeo_FullName", "text"), ("ActionGeo_CountryCode", "text"),
    ("ActionGeo_ADM1Code", "text"), ("ActionGeo_Lat", "double"), ("ActionGeo_Long", "double"),
    ("ActionGeo_FeatureID", "int"),
    ("DATEADDED", "int"),
]
assert len(GDELT_COLUMNS) == 57

# ISO 3166 alpha-3 codes (CAMEO uses them for countries); USA and ALB get fixed shares below.
COUNTRIES = """USA GBR RUS CHN FRA DEU ISR IND JPN PAK IRN IRQ EGY AFG CAN AUS ZAF SYR LBN TUR ITA KOR PRK
MEX BRA ARG POL VNM NGA KEN PHL IDN SAU JOR ESP GRC CUB NIC SLV ZWE ETH SOM SDN LBY UGA AGO MOZ NAM BWA ZMB
TZA COD COG CMR GHA CIV SEN MLI NER TCD BFA GIN LBR SLE TGO BEN MRT MAR DZA TUN YEM OMN ARE KWT QAT BHR
CYP LKA BGD NPL BTN MMR THA KHM LAO MYS SGP BRN TWN HKG MNG KAZ UZB TKM KGZ TJK AZE ARM GEO UKR BLR MDA
LTU LVA EST FIN SWE NOR DNK ISL IRL NLD BEL LUX CHE AUT CZE SVK HUN ROU BGR SRB HRV SVN BIH MKD MNE PRT
MLT CHL PER BOL ECU COL VEN GUY SUR URY PRY PAN CRI HND GTM BLZ JAM HTI DOM TTO BHS BRB GRD LCA VCT DMA
ATG KNA NZL PNG FJI SLB VUT WSM TON KIR TUV NRU FSM MHL PLW MDG MUS SYC COM DJI ERI RWA BDI MWI LSO SWZ
GAB GNQ CAF STP CPV GMB GNB ESH PSE VAT SMR MCO AND LIE TLS MDV ABW AIA BMU CYM GRL FRO GIB PRI GUM ASM
VGB VIR MSR TCA NCL PYF REU GLP MTQ GUF MYT SPM WLF COK NIU TKL PCN SHN FLK""".split()
COUNTRIES = [c for c in COUNTRIES if c != "ALB"]
TYPES = ("GOV MIL COP BUS MED OPP REB JUD LEG CVL EDU REF ELI LAB AGR HLH CRM SPY UAF IGO NGO MOD RAD "
         "IMG SET DEV ENV REL").split()
RELIGIONS = "CHR MOS JEW BUD HIN CTH SHI SUN PRO ORT".split()
GROUPS = "UNO EEC NAT ARL OPC AFR WHO IMF WBK ICR PLO".split()
ETHNIC = "kur pas arb tam bal heb hau yor igb zul".split()
# (EventRootCode, QuadClass, share): CAMEO roots 01..20.
ROOTS = [("01", 1, 10), ("02", 1, 6), ("03", 1, 8), ("04", 1, 20), ("05", 1, 9), ("06", 2, 3),
         ("07", 2, 3), ("08", 2, 3), ("09", 2, 1), ("10", 3, 2), ("11", 3, 6), ("12", 3, 3),
         ("13", 3, 3), ("14", 3, 2), ("15", 4, 1), ("16", 4, 2), ("17", 4, 4), ("18", 4, 5),
         ("19", 4, 8), ("20", 4, 1)]


def zipf_cum(n, s):
    acc, out = 0.0, []
    for r in range(1, n + 1):
        acc += 1.0 / r ** s
        out.append(acc)
    return out


def syllable_name(rng, words):
    syl = ["AL", "BA", "CO", "DE", "EN", "FA", "GI", "HA", "IN", "JO", "KA", "LO", "MA", "NI", "OR", "PA",
           "RA", "SA", "TI", "UR", "VA", "WE", "YA", "ZE"]
    return " ".join("".join(rng.choices(syl, k=rng.randint(2, 4))) for _ in range(words))


def gdelt_gen(a):
    """Column-wise generation (random.choices over the whole column), then rows; deterministic for a seed."""
    rng = random.Random(a.seed)
    n = a.rows
    # Months 197901..198412, weights growing with time (news volume grew) so that 198012 holds ~1%.
    months = [y * 100 + m for y in range(1979, 1985) for m in range(1, 13)]
    mw = [1 + 4 * i / 71 for i in range(72)]
    month = rng.choices(months, weights=mw, k=n)
    day = [rng.randint(1, 28) for _ in range(n)]
    # Country codes: USA 9%, ALB 0.1%, ~200 others Zipf-like, 35% empty (as in the real 1979-84 events).
    others = [c for c in COUNTRIES if c != "USA"]
    share_rest = 0.65 - 0.10 - 0.0011  # actor 1 is absent in 10% of events: USA ~9%, ALB ~0.1% of all rows
    z = zipf_cum(len(others), 1.0)
    cum, acc = [], 0.0
    for code_w in ([0.35, 0.10, 0.0011] + [share_rest * (z[i] - (z[i - 1] if i else 0)) / z[-1]
                                         for i in range(len(others))]):
        acc += code_w
        cum.append(acc)
    codes = [None, "USA", "ALB"] + others

    def countries():
        return rng.choices(codes, cum_weights=cum, k=n)

    names = sorted({syllable_name(rng, rng.randint(1, 2)) for _ in range(6000)})[:5000]
    name_cum = zipf_cum(len(names), 1.05)
    places = []
    for i in range(3000):
        cc = rng.choice(COUNTRIES)[:2]
        t = rng.choices([1, 2, 3, 4, 5], weights=[30, 10, 15, 35, 10])[0]
        full = syllable_name(rng, 1).title() + ", " + syllable_name(rng, 1).title() + ", " + cc
        places.append((t, full, cc, cc + f"{rng.randint(1, 40):02d}", round(rng.uniform(-60, 70), 4),
                       round(rng.uniform(-180, 180), 4), rng.randint(-3_000_000, 3_000_000)))
    place_cum = zipf_cum(len(places), 0.9)
    events = []
    for root, quad, share in ROOTS:
        for sub in range(rng.randint(3, 12)):
            base = root + str(sub)
            events.append((base, base, root, quad, share / (sub + 1)))
            if rng.random() < 0.3:
                events.append((base + str(rng.randint(1, 9)), base, root, quad, share / (sub + 3)))
    goldstein = {e[0]: round(rng.uniform(-10, 10) if e[3] >= 3 else rng.uniform(-2, 8), 1) for e in events}
    ev = rng.choices(events, weights=[e[4] for e in events], k=n)

    def actor(present_p):
        cc = countries()
        nm = rng.choices(names, cum_weights=name_cum, k=n)
        out = []
        for i in range(n):
            if rng.random() >= present_p:
                out.append((None,) * 10)
                continue
            t1 = rng.choice(TYPES) if rng.random() < 0.45 else None
            t2 = rng.choice(TYPES) if t1 and rng.random() < 0.1 else None
            t3 = rng.choice(TYPES) if t2 and rng.random() < 0.1 else None
            kg = rng.choice(GROUPS) if rng.random() < 0.02 else None
            et = rng.choice(ETHNIC) if rng.random() < 0.01 else None
            r1 = rng.choice(RELIGIONS) if rng.random() < 0.03 else None
            r2 = rng.choice(RELIGIONS) if r1 and rng.random() < 0.2 else None
            code = "".join(x for x in (cc[i], kg, r1, t1, t2, t3) if x) or None
            name = nm[i] if code else None
            out.append((code, name, cc[i], kg, et, r1, r2, t1, t2, t3))
        return out

    def geo(present_p):
        pl = rng.choices(places, cum_weights=place_cum, k=n)
        return [p if rng.random() < present_p else (0, None, None, None, None, None, None) for p in pl]

    a1, a2 = actor(0.9), actor(0.7)
    g1, g2, g3 = geo(0.65), geo(0.55), geo(0.85)
    rows = []
    for i in range(n):
        ym, d = month[i], day[i]
        y, m = divmod(ym, 100)
        code, base, root, quad, _ = ev[i]
        mentions = max(1, int(rng.expovariate(1 / 6)))
        sources = max(1, min(mentions, int(rng.expovariate(1 / 1.5)) + 1))
        words = rng.randint(80, 1200)
        tone = round(rng.gauss(0.002, 0.035) * words) * 100 / words  # (positive - negative words) / words
        rows.append((i + 1, ym * 100 + d, ym, y, round(y + ((m - 1) * 30.4 + d) / 365, 4),
                     *a1[i], *a2[i], 1 if rng.random() < 0.55 else 0, code, base, root, quad,
                     goldstein[code], mentions, sources, mentions, tone, *g1[i], *g2[i], *g3[i], 20130203))
    with open(a.file, "wb") as f:
        pickle.dump(rows, f, protocol=pickle.HIGHEST_PROTOCOL)
    ccol = [c for c, _ in GDELT_COLUMNS].index("Actor1CountryCode")
    stats = {"rows": n, "seed": a.seed,
             "share_actor1_usa": round(sum(r[ccol] == "USA" for r in rows) / n, 4),
             "share_actor1_alb": round(sum(r[ccol] == "ALB" for r in rows) / n, 4),
             "share_month_198012": round(sum(r[2] == 198012 for r in rows) / n, 4),
             "distinct_actor1_country": len({r[ccol] for r in rows} - {None}),
             "distinct_actor1_name": len({r[ccol - 1] for r in rows} - {None}),
             "null_cells_share": round(sum(v is None for r in rows for v in r) / (n * 57), 3)}
    print(json.dumps(stats))


def gdelt_load(a):
    with open(a.file, "rb") as f:
        rows = pickle.load(f)
    # Part K of P: a contiguous range of event ids (one SSTable per part when each is followed by a flush).
    lo, hi = (a.part - 1) * len(rows) // a.parts, a.part * len(rows) // a.parts
    rows = rows[lo:hi]
    cluster, s = connect(a.host)
    try:
        s.execute(f"CREATE KEYSPACE IF NOT EXISTS {GDELT_KS} WITH replication = "
                  "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        cols = ", ".join(f"{c} {t}" + (" PRIMARY KEY" if i == 0 else "") for i, (c, t) in enumerate(GDELT_COLUMNS))
        s.execute(f"CREATE TABLE IF NOT EXISTS {GDELT_KS}.{GDELT_TABLE} ({cols})")
        names = ", ".join(c for c, _ in GDELT_COLUMNS)
        ins = s.prepare(f"INSERT INTO {GDELT_KS}.{GDELT_TABLE} ({names}) VALUES ({', '.join('?' * 57)})")
        # Empty GDELT fields are not written at all (UNSET, no cell and no tombstone).
        stmts = ((ins, tuple(UNSET_VALUE if v is None else v for v in r)) for r in rows)
        c0 = cpu_s()
        elapsed, errors, first = load(s, stmts, a.concurrency)
        print(json.dumps({"rows": len(rows), "columns": 57, "load_s": round(elapsed, 3),
                          "rows_per_s": round(len(rows) / elapsed, 1), "errors": errors, "first_error": first,
                          "client_cpu_s": round(cpu_s() - c0, 2)}))
    finally:
        cluster.shutdown()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("wide-load")
    w.add_argument("host")
    w.add_argument("--partitions", type=int, default=20)
    w.add_argument("--rows", type=int, default=50000)
    w.add_argument("--value-size", type=int, default=100)
    w.add_argument("--batch", type=int, default=25)
    w.add_argument("--concurrency", type=int, default=32)
    w.add_argument("--seed", type=int, default=42)
    w.add_argument("--ck-from", type=int, default=0, help="load clustering keys [ck-from, ck-to) only")
    w.add_argument("--ck-to", type=int, default=None)
    r = sub.add_parser("wide-slice")
    r.add_argument("host")
    r.add_argument("--partitions", type=int, default=20)
    r.add_argument("--rows", type=int, default=50000)
    r.add_argument("--query", choices=["limit", "range"], default="limit")
    r.add_argument("--duration", type=float, default=20)
    r.add_argument("--concurrency", type=int, default=32)
    r.add_argument("--seed", type=int, default=7)
    g = sub.add_parser("gdelt-gen")
    g.add_argument("file")
    g.add_argument("--rows", type=int, default=200000)
    g.add_argument("--seed", type=int, default=1979)
    gl = sub.add_parser("gdelt-load")
    gl.add_argument("host")
    gl.add_argument("file")
    gl.add_argument("--concurrency", type=int, default=64)
    gl.add_argument("--part", type=int, default=1)
    gl.add_argument("--parts", type=int, default=1)
    a = p.parse_args()
    {"wide-load": wide_load, "wide-slice": wide_slice, "gdelt-gen": gdelt_gen, "gdelt-load": gdelt_load}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
