"""The server's state during each phase of a helenus-stress `sla` run: bench/lib.sh's sample_state
wrote it once a second beside the run (<json>.state.jsonl), and each phase of the stress JSON says
when it started (started_unix_s) and how long it ran. A step whose latency collapsed can then be
read beside what the server was doing: SSTables piling up (reads touching more files), compactions
pending, writes held for memtable space, or the hypervisor taking the CPU away (steal)."""
import json


def samples(path):
    try:
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError):
        return []


def phases(stress):
    """(name, offered op/s, phase JSON) in the order the run made them: probe, steps, half of max."""
    out = []
    probe = stress.get("probe")
    if probe:
        out.append(("probe", None, probe))
    for i, s in enumerate(stress.get("steps") or []):
        out.append((f"step {i + 1}", s.get("offered_rate_per_s"), s.get("phase") or {}))
    half = stress.get("half_max")
    if half:
        out.append(("50% of max", half.get("offered_rate_per_s"), half.get("phase") or {}))
    return out


def during(state, start, seconds):
    """What the samples inside [start, start + seconds] show: SSTables (min, max), the most
    compactions pending, and the write stalls and stall milliseconds the window added."""
    inside = [s for s in state if start <= s["t"] <= start + seconds]
    if not inside:
        return None
    out = {"samples": len(inside),
           "sstables_min": min(s["sstables"] for s in inside), "sstables_max": max(s["sstables"] for s in inside)}
    pending = [s["pending_compactions"] for s in inside if s.get("pending_compactions") is not None]
    out["pending_compactions_max"] = max(pending) if pending else None
    for key in ("write_stalls", "write_stall_ms"):
        vals = [s[key] for s in inside if s.get(key) is not None]
        out[f"{key}_added"] = vals[-1] - vals[0] if len(vals) > 1 else None
    out["idle_pct"], _ = cpu_share_pct(inside, "idle_jiffies")
    out["steal_pct"], out["steal_pct_max_1s"] = cpu_share_pct(inside, "steal_jiffies")
    return out


def cpu_share_pct(inside, key):
    """(over the window, in its worst second) percent of the machine's CPU time counted by `key`
    (idle: left unused; steal: taken by the hypervisor while this machine had work); (None, None)
    for samples without it (steal is sampled since 2026-12-02)."""
    cpu = [(s[key], s["total_jiffies"]) for s in inside
           if s.get(key) is not None and s.get("total_jiffies") is not None]
    if len(cpu) < 2 or cpu[-1][1] <= cpu[0][1]:
        return None, None
    whole = 100.0 * (cpu[-1][0] - cpu[0][0]) / (cpu[-1][1] - cpu[0][1])
    worst = max(100.0 * (b[0] - a[0]) / (b[1] - a[1]) for a, b in zip(cpu, cpu[1:]) if b[1] > a[1])
    return whole, worst


def per_phase(entry, stress):
    """One row per phase of a manifest entry's run, with the state during it."""
    state = samples(entry["json"] + ".state.jsonl")
    if not state:
        return []
    rows = []
    for name, offered, ph in phases(stress):
        start, secs = ph.get("started_unix_s"), ph.get("elapsed_s")
        if start is None or secs is None:
            continue
        total = ph.get("total") or {}
        rows.append({"phase": name, "offered_per_s": offered, "achieved_per_s": total.get("rate_per_s"),
                     "p99_ms": total.get("latency_p99_ms"), "state": during(state, start, secs)})
    return rows


def markdown(runs, servers, keys, fmt):
    """The report's section: a row per phase, for each workload and server that has samples."""
    by = {(r["server"], r["workload"], r["dist"]): r for r in runs}
    md = ["## Server state per step (helenus-stress)", "",
          "Sampled once a second beside each run (bench/lib.sh `sample_state`): SSTables of keyspace1 on disk "
          "(min-max during the phase); for Helenus also the most compactions pending or running, and the writes "
          "held for memtable space (stalls) and the milliseconds they waited. Cassandra's pending compactions "
          "would need a nodetool JVM a second, so they are not sampled. Idle: the machine's CPU left unused "
          "(client and server share it); a probe with idle cores did not saturate the server. Steal: the machine's CPU "
          "time the hypervisor gave to other guests while this one had work (mean over the phase / its worst second); "
          "a phase's tail with steal in it is partly the host's, whichever server ran.", "",
          "| server | workload | phase | offered op/s | achieved op/s | P99 (ms) | idle % | steal % (mean / worst s) | SSTables | pending compactions | write stalls | stall ms |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    any_rows = False
    for wl, d in keys:
        for s in servers:
            r = by.get((s, wl, d))
            for p in (r or {}).get("phases") or []:
                st = p["state"] or {}
                sst = f"{st['sstables_min']}-{st['sstables_max']}" if st else "-"
                md.append(f"| {s} | {wl}/{d} | {p['phase']} | {fmt(p['offered_per_s'])} | {fmt(p['achieved_per_s'])} | "
                          f"{fmt(p['p99_ms'])} | {fmt(st.get('idle_pct'))} | {fmt(st.get('steal_pct'))} / {fmt(st.get('steal_pct_max_1s'))} | {sst} | {fmt(st.get('pending_compactions_max'))} | "
                          f"{fmt(st.get('write_stalls_added'))} | {fmt(st.get('write_stall_ms_added'))} |")
                any_rows = True
    md.append("")
    return md if any_rows else []
