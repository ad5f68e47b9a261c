#!/usr/bin/env python3
"""GDELT 1.0 events, generated: the data set of the analytics study (issue 15, bench/analytics.sh).

  gdelt.py gen --rows N [--seed 1979] [--pickle FILE] [--csv FILE [--header]]   rows + cardinalities (JSON)
  gdelt.py ddl [--keyspace KS] [--layout narrow|wide|compact]                  the CQL of each layout
  gdelt.py load HOST FILE --layout L [--keyspace KS]                            loads a pickle (JSON out)

The 57 columns of the GDELT 1.0 event backfile (1979-2013) with their real names (lower-cased in CQL, as
CQL folds unquoted names) and CQL types. The 1979-1984 events of the study (4.16M rows) have no SOURCEURL:
that 58th column only exists in the daily files from April 2013 on. Deterministic for a (rows, seed).
Cardinalities: Actor1Name ~5,000 values (Zipf), Actor1CountryCode ~220 values with USA ~9% and ALB ~0.1%,
MonthYear 197901-198412 with ~1% in 198012, AvgTone around 0, SQLDATE/MonthYear/Year/FractionDate of one
date, actor2 and geo fields often empty (None here: nothing is written for them, like an empty CSV field).
"""
import argparse
import csv
import json
import pickle
import random
import sys

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
COLUMN_NAMES = [c for c, _ in GDELT_COLUMNS]

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


def generate(n, seed=1979):
    """`n` events as tuples in GDELT_COLUMNS order (None for an empty field). Column-wise generation
    (random.choices over the whole column), then rows; the same rows for the same (n, seed).
    AvgTone keeps the many decimals of the real files: it is (positive - negative words) / words * 100."""
    rng = random.Random(seed)
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
    return rows


def data_stats(rows, seed):
    """The cardinalities the study depends on, measured on the generated rows."""
    n = len(rows)
    ccol = COLUMN_NAMES.index("Actor1CountryCode")
    return {"rows": n, "seed": seed,
            "share_actor1_usa": round(sum(r[ccol] == "USA" for r in rows) / n, 4),
            "share_actor1_alb": round(sum(r[ccol] == "ALB" for r in rows) / n, 4),
            "share_month_198012": round(sum(r[2] == 198012 for r in rows) / n, 4),
            "distinct_actor1_country": len({r[ccol] for r in rows} - {None}),
            "distinct_actor1_name": len({r[ccol - 1] for r in rows} - {None}),
            "null_cells_share": round(sum(v is None for r in rows for v in r) / (n * 57), 3)}


# ---------------------------------------------------------------------------------------- layouts

KEYSPACE = "bench_analytics"
# Layout -> (table name, primary key, table options). narrow: one row per partition (the study's "CQL
# rows"); wide: a partition per month, events clustered in it (a month's aggregate is one partition
# read); compact: narrow with COMPACT STORAGE (the study's second Cassandra layout); columnar: narrow in
# Helenus's columnar layout (issue 15; Cassandra would take the option and store rows, so it is Helenus's).
LAYOUTS = {
    "narrow": ("narrow", "PRIMARY KEY (globaleventid)", ""),
    "wide": ("wide", "PRIMARY KEY ((monthyear), globaleventid)", ""),
    "compact": ("compact_narrow", "PRIMARY KEY (globaleventid)", " WITH COMPACT STORAGE"),
    # zstd chunks, as the Parquet export's: the size aim compares with Parquet (zstd).
    "columnar": ("columnar_narrow", "PRIMARY KEY (globaleventid)",
                 " WITH extensions = {'helenus.layout': 'columnar'}"
                 " AND compression = {'class': 'ZstdCompressor'}"),
}
# Layouts only Helenus has.
HELENUS_ONLY = {"columnar"}
# Storage-attached indexes declared on a layout's table after it is created. On the columnar table an SAI
# index is its column (no index table, nothing built or written: the chunks' statistics and dictionary
# codes answer it), and declaring it is what lets the Spark connector push `=`/range filters on the
# column down into CQL (connector's DsePredicateRules), as Spark pushes them into Parquet's row groups.
LAYOUT_INDEXES = {
    "columnar": ("actor1countrycode", "monthyear"),
}


def table_name(layout):
    return LAYOUTS[layout][0]


def keyspace_ddl(ks=KEYSPACE):
    return (f"CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = "
            "{'class': 'SimpleStrategy', 'replication_factor': 1}")


def table_ddl(layout, ks=KEYSPACE):
    name, pk, opts = LAYOUTS[layout]
    cols = ", ".join(f"{c.lower()} {t}" for c, t in GDELT_COLUMNS)
    return f"CREATE TABLE IF NOT EXISTS {ks}.{name} ({cols}, {pk}){opts}"


def index_ddl(layout, ks=KEYSPACE):
    """The CREATE INDEX statements of LAYOUT_INDEXES for `layout` (none for most layouts)."""
    name = LAYOUTS[layout][0]
    return [f"CREATE CUSTOM INDEX IF NOT EXISTS ON {ks}.{name} ({c}) USING 'StorageAttachedIndex'"
            for c in LAYOUT_INDEXES.get(layout, ())]


# ---------------------------------------------------------------------------------------- output

def write_csv(rows, path, header):
    """Tab-separated like the real GDELT files (which are named .CSV); an empty field for None."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f, delimiter="\t", lineterminator="\n")
        if header:
            w.writerow(COLUMN_NAMES)
        for r in rows:
            w.writerow("" if v is None else v for v in r)


def read_pickle(path):
    with open(path, "rb") as f:
        return pickle.load(f)


# Rows per unlogged batch: one partition per batch on the wide layout (a single mutation); 57 columns
# keep a batch of 20 well under Cassandra's 50 KiB batch_size_fail_threshold.
BATCH_ROWS = 20


def batches(rows, layout, insert):
    """Unlogged batches of BATCH_ROWS rows; on the wide layout each batch holds rows of one month."""
    from cassandra.query import UNSET_VALUE, BatchStatement, BatchType
    month = COLUMN_NAMES.index("MonthYear")
    if layout == "wide":
        rows = sorted(rows, key=lambda r: (r[month], r[0]))
    pending, key = [], None
    for r in rows:
        k = r[month] if layout == "wide" else None
        if pending and (len(pending) == BATCH_ROWS or k != key):
            yield make_batch(pending, insert, BatchStatement, BatchType), None
            pending = []
        key = k
        # Empty GDELT fields are not written at all (UNSET: no cell and no tombstone).
        pending.append(tuple(UNSET_VALUE if v is None else v for v in r))
    if pending:
        yield make_batch(pending, insert, BatchStatement, BatchType), None


def make_batch(values, insert, batch_statement, batch_type):
    b = batch_statement(batch_type=batch_type.UNLOGGED)
    for v in values:
        b.add(insert, v)
    return b


def load_rows(session, rows, layout, ks=KEYSPACE, concurrency=32):
    """Creates the layout's table and loads `rows` into it; returns the load's JSON summary."""
    # storage_client's loader (execute_concurrent over a generator, errors counted) and CPU clock.
    from storage_client import cpu_s, load
    session.execute(keyspace_ddl(ks))
    session.execute(table_ddl(layout, ks))
    for ddl in index_ddl(layout, ks):
        session.execute(ddl)
    names = ", ".join(c.lower() for c in COLUMN_NAMES)
    insert = session.prepare(f"INSERT INTO {ks}.{table_name(layout)} ({names}) "
                             f"VALUES ({', '.join('?' * len(COLUMN_NAMES))})")
    c0 = cpu_s()
    elapsed, errors, first = load(session, batches(rows, layout, insert), concurrency)
    return {"rows": len(rows), "columns": len(COLUMN_NAMES), "load_s": round(elapsed, 3),
            "rows_per_s": round(len(rows) / elapsed, 1), "errors": errors, "first_error": first,
            "client_cpu_s": round(cpu_s() - c0, 2), "batch_rows": BATCH_ROWS, "concurrency": concurrency}


# ---------------------------------------------------------------------------------------- CLI

def cmd_gen(a):
    rows = generate(a.rows, a.seed)
    if a.pickle:
        with open(a.pickle, "wb") as f:
            pickle.dump(rows, f, protocol=pickle.HIGHEST_PROTOCOL)
    if a.csv:
        write_csv(rows, a.csv, a.header)
    print(json.dumps(data_stats(rows, a.seed)))


def cmd_ddl(a):
    print(keyspace_ddl(a.keyspace) + ";")
    for layout in ([a.layout] if a.layout else LAYOUTS):
        print(table_ddl(layout, a.keyspace) + ";")
        for ddl in index_ddl(layout, a.keyspace):
            print(ddl + ";")


def cmd_load(a):
    from storage_client import connect
    cluster, session = connect(a.host, timeout=120)
    try:
        out = load_rows(session, read_pickle(a.file), a.layout, a.keyspace, a.concurrency)
        print(json.dumps({"layout": a.layout, **out}))
    finally:
        cluster.shutdown()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("--rows", type=int, default=100_000, help="the study: 4160000")
    g.add_argument("--seed", type=int, default=1979)
    g.add_argument("--pickle")
    g.add_argument("--csv")
    g.add_argument("--header", action="store_true")
    d = sub.add_parser("ddl")
    d.add_argument("--keyspace", default=KEYSPACE)
    d.add_argument("--layout", choices=sorted(LAYOUTS))
    ld = sub.add_parser("load")
    ld.add_argument("host")
    ld.add_argument("file")
    ld.add_argument("--layout", choices=sorted(LAYOUTS), required=True)
    ld.add_argument("--keyspace", default=KEYSPACE)
    ld.add_argument("--concurrency", type=int, default=32)
    a = p.parse_args()
    {"gen": cmd_gen, "ddl": cmd_ddl, "load": cmd_load}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
