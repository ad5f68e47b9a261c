"""Combines bench/scan.sh's per-server JSON lines into results JSON and a Markdown table of
Helenus/Cassandra time ratios (below 1: Helenus is faster).

  scan_report.py WORKDIR OUT_PREFIX COMMIT LOADAVG SERVER...
"""
import json
import os
import sys


def read(path):
    out, load_s = {}, None
    if not os.path.exists(path):
        return out, load_s
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if "load_s" in r:
                load_s = r["load_s"]
            else:
                out[(r["phase"], r["scan"], r["fetch_size"])] = r
    return out, load_s


def main():
    work, prefix, commit, loadavg, *servers = sys.argv[1:]
    data = {s: read(os.path.join(work, f"{s}.jsonl")) for s in servers}
    keys = []
    for s in servers:
        for k in data[s][0]:
            if k not in keys:
                keys.append(k)
    rows = []
    for k in keys:
        row = {"phase": k[0], "scan": k[1], "fetch_size": k[2]}
        for s in servers:
            r = data[s][0].get(k)
            if r:
                row[s] = {x: r.get(x) for x in
                          ("rows", "seconds", "client_cpu_s", "server_cpu_s", "timed_out", "rust")}
        h, c = row.get("helenus"), row.get("cassandra")
        if h and c and c["seconds"] > 0 and not h["timed_out"] and not c["timed_out"]:
            row["ratio_helenus_over_cassandra"] = round(h["seconds"] / c["seconds"], 3)
            if h["server_cpu_s"] is not None and c["server_cpu_s"]:
                row["server_cpu_ratio"] = round(h["server_cpu_s"] / c["server_cpu_s"], 3)
        hr, cr = (h or {}).get("rust"), (c or {}).get("rust")
        if hr and cr and cr["seconds"] > 0:
            row["rust_ratio_helenus_over_cassandra"] = round(hr["seconds"] / cr["seconds"], 3)
        rows.append(row)
    result = {"commit": commit, "loadavg_at_end": loadavg,
              "load_s": {s: data[s][1] for s in servers}, "scans": rows}
    with open(prefix + ".json", "w") as f:
        json.dump(result, f, indent=1)
    lines = [f"# Scan benchmark at {commit}", "",
             f"Load average at the end: {loadavg}. Load time (s): "
             + ", ".join(f"{s} {data[s][1]}" for s in servers), "",
             "Each cell: wall seconds (client CPU s / server CPU s). The pager fetches one page at a",
             "time, so the wall time is about the client's CPU plus the server's: the server CPU ratio",
             "is what the server costs, whatever the client's share.", "",
             "| phase | scan | fetch | rows | "
             + " | ".join(f"{s} s (client / server CPU s)" for s in servers)
             + " | Helenus/Cassandra wall | server CPU |",
             "|---|---|---|---|" + "---|" * len(servers) + "---|---|"]
    for r in rows:
        cells = []
        n = ""
        for s in servers:
            v = r.get(s)
            if v:
                n = v["rows"]
                t = ">" if v["timed_out"] else ""
                server = "-" if v.get("server_cpu_s") is None else v["server_cpu_s"]
                cells.append(f"{t}{v['seconds']} ({v['client_cpu_s']} / {server})")
            else:
                cells.append("-")
        ratio = r.get("ratio_helenus_over_cassandra", "-")
        cpu_ratio = r.get("server_cpu_ratio", "-")
        lines.append(f"| {r['phase']} | {r['scan']} | {r['fetch_size']} | {n} | "
                     + " | ".join(cells) + f" | {ratio} | {cpu_ratio} |")
    if any(r.get("rust_ratio_helenus_over_cassandra") for r in rows):
        lines += ["", "## The same scans with helenus-scan (Rust, scylla driver, one page at a time)", "",
                  "A client whose CPU per row is a few percent of the Python driver's: the wall time is",
                  "the server's. Each cell: wall seconds (client CPU s / server CPU s).", "",
                  "| phase | scan | fetch | " + " | ".join(servers) + " | Helenus/Cassandra wall |",
                  "|---|---|---|" + "---|" * len(servers) + "---|"]
        for r in rows:
            cells = []
            for s in servers:
                v = (r.get(s) or {}).get("rust")
                cells.append("-" if not v else
                             f"{v['seconds']} ({v['client_cpu_s']} / {v.get('server_cpu_s', '-')})")
            ratio = r.get("rust_ratio_helenus_over_cassandra", "-")
            lines.append(f"| {r['phase']} | {r['scan']} | {r['fetch_size']} | "
                         + " | ".join(cells) + f" | {ratio} |")
    with open(prefix + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
