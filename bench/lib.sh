# Shared pieces of bench/run.sh (one node per server) and bench/cluster.sh (3-node rings): CPU and
# RSS from /proc, the measured helenus-stress run (one manifest line per run), key populations and the
# report step; and the Spark install of bench/spark.sh and bench/analytics.sh (spark_install). Sourced,
# not run. The caller sets ROOT, STRESS, MANIFEST, ROWS, NOISE_MAX_CORES and SERVER_PIDS (the server's
# process ids, space separated: one for a node, three for a ring); a caller may define its own log()
# after sourcing (the functions here call whichever log() is defined when they run).

HZ="$(getconf CLK_TCK)"
log() { echo "[bench $(date -u +%T)] $*" >&2; }

# ---- CPU accounting from /proc ----
# Busy counts steal ($9: the hypervisor ran another guest while this one had work), so "other" CPU
# and the trust check include it; steal is also reported on its own (steal_cpu_s, ab.sh steal_pct).
cpu_busy() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9}' /proc/stat; }     # all CPUs, ticks
cpu_steal_total() { awk '/^cpu /{t = 0; for (i = 2; i <= 9; i++) t += $i; print $9, t}' /proc/stat; }  # steal, all
pid_ticks() { [ -n "${1:-}" ] && awk '{print $14+$15+$16+$17}' "/proc/$1/stat" 2>/dev/null || echo 0; }
rss_mib() { [ -n "${1:-}" ] && awk '/VmRSS/{printf "%d", $2/1024}' "/proc/$1/status" 2>/dev/null || echo 0; }
pids_ticks() { local t=0 p; for p in $1; do t=$((t + $(pid_ticks "$p"))); done; echo "$t"; }   # summed
pids_rss_json() { local out="" p; for p in $1; do out="$out${out:+,}$(rss_mib "$p")"; done; echo "[$out]"; }
port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
wait_port() { local a="$1" p="$2" t0=$SECONDS; while (( SECONDS - t0 < ${3:-120} )); do port_open "$a" "$p" && return 0; sleep 1; done; return 1; }

# Runs helenus-stress with CPU accounting (machine, server processes summed, client) and appends one
# manifest line. STRESS_TIMEOUT (seconds, 0 = none) bounds the run. With STATE_DIR set (one node's
# data directory; bench/run.sh), bench/sample_state.py samples the server's state beside it into
# <json>.state.jsonl.
measured() {  # server workload dist json-file stress-args...
  local s="$1" wl="$2" dist="$3" json="$4"; shift 4
  local b0 s0 w0 b1 s1 w1 t0 t1 ut rc=0 sampler=""
  if [ -n "${STATE_DIR:-}" ]; then
    : > "$json.state.jsonl"
    python3 "$ROOT/bench/sample_state.py" "$json.state.jsonl" "$s" "$STATE_DIR" "$STATE_ADDR" & sampler=$!
  fi
  b0=$(cpu_busy); t0=$(cpu_steal_total); s0=$(pids_ticks "$SERVER_PIDS"); w0=$(date +%s.%N)
  /usr/bin/time -f "%U %S" -o "$json.time" timeout -k 10 "${STRESS_TIMEOUT:-0}" "$STRESS" "$@" -json "$json" > "$json.log" 2>&1 || rc=$?
  b1=$(cpu_busy); t1=$(cpu_steal_total); s1=$(pids_ticks "$SERVER_PIDS"); w1=$(date +%s.%N)
  if [ -n "$sampler" ]; then kill "$sampler" 2>/dev/null || true; wait "$sampler" 2>/dev/null || true; fi
  [ "$rc" = 0 ] || log "stress exited with $rc ($json.log): $(grep -v '^Command exited' "$json.log" | tail -3 | tr '\n' ' ')"
  ut="$(tail -1 "$json.time" 2>/dev/null || echo "0 0")"
  awk -v s="$s" -v wl="$wl" -v d="$dist" -v j="$json" -v hz="$HZ" -v b="$((b1 - b0))" -v sv="$((s1 - s0))" \
      -v st="$((${t1%% *} - ${t0%% *}))" -v w0="$w0" -v w1="$w1" -v ut="$ut" -v rss="$(pids_rss_json "$SERVER_PIDS")" -v noise="$NOISE_MAX_CORES" -v rc="$rc" 'BEGIN{
    split(ut, t, " "); c = t[1] + t[2]; wall = w1 - w0; busy = b / hz; srv = sv / hz; other = busy - srv - c;
    if (other < 0) other = 0;
    n = split(substr(rss, 2, length(rss) - 2), r, ","); total = 0; for (i = 1; i <= n; i++) total += r[i];
    printf "{\"server\":\"%s\",\"workload\":\"%s\",\"dist\":\"%s\",\"json\":\"%s\",\"exit_code\":%d,\"wall_s\":%.2f,\"machine_busy_cpu_s\":%.2f,\"server_cpu_s\":%.2f,\"client_cpu_s\":%.2f,\"other_cpu_s\":%.2f,\"other_cores\":%.3f,\"steal_cpu_s\":%.2f,\"server_rss_mib\":%d,\"server_rss_mib_per_node\":%s,\"trustworthy\":%s}\n",
      s, wl, d, j, rc, wall, busy, srv, c, other, other / (wall > 0 ? wall : 1), st / hz, total, rss, (other / (wall > 0 ? wall : 1) <= noise) ? "true" : "false"
  }' >> "$MANIFEST"
  return 0
}

# latte (a client nobody on the project wrote) on the same matrix: bench/standard1.rn's
# <op>_<dist> functions, a closed-loop run of PROBE seconds for the maximum, then a fixed-rate run
# at half of it for the percentiles; one manifest line ("client":"latte") with both reports.
# The caller sets LATTE_BIN, LATTE_THREADS, LATTE_CONCURRENCY, SERVER_ADDR, PROBE, STEP_DUR, WORK.
latte_fns() {  # workload dist -> latte -f argument
  case "$1" in
    write|read) echo "$1_$2" ;;
    mixed) echo "read_$2:0.5,write_$2:0.5" ;;
  esac
}
latte_run() {  # out-json latte-run-args... (runs in $WORK: latte writes its logs to the cwd)
  local json="$1"; shift
  (cd "$WORK" && /usr/bin/time -f "%U %S" -o "$json.time" timeout -k 10 "${STRESS_TIMEOUT:-0}" "$LATTE_BIN" run -q -t "$LATTE_THREADS" -p "$LATTE_CONCURRENCY" \
    "$@" -o "$json" "$ROOT/bench/standard1.rn" -P rows="$ROWS" --consistency ONE -c 1 "$SERVER_ADDR") > "$json.log" 2>&1
}
measured_latte() {  # server workload dist json-prefix
  local s="$1" wl="$2" dist="$3" pre="$4" fns b0 s0 w0 b1 s1 w1 t0 t1 ut0 ut1 rc=0 half=0
  fns="$(latte_fns "$wl" "$dist")"
  # The warm-up runs on its own, before the CPU is counted: run inside the probe (latte -w), its
  # server CPU was counted but its operations were not (a 2 s warm-up beside 5 s + 5 s of
  # measured runs put ~25% on every server's CPU per operation).
  if [ -z "${LATTE_FIXED_RATE:-}" ] && [ "${LATTE_WARMUP:-2s}" != 0s ]; then
    latte_run "$pre-warmup.json" -w 0s -d "${LATTE_WARMUP:-2s}" -f "$fns" || true
  fi
  b0=$(cpu_busy); t0=$(cpu_steal_total); s0=$(pids_ticks "$SERVER_PIDS"); w0=$(date +%s.%N)
  if [ -n "${LATTE_FIXED_RATE:-}" ]; then  # the rate is given: no closed-loop run
    half="$LATTE_FIXED_RATE"
  else
    latte_run "$pre-max.json" -w 0s -d "$PROBE" -f "$fns" || rc=$?
    [ "$rc" = 0 ] && half="$(jq -r '.result.cycle_throughput.value / 2 | floor' "$pre-max.json" 2>/dev/null || echo 0)"
  fi
  if [ "$rc" = 0 ] && [ "${half:-0}" -ge 1 ]; then latte_run "$pre-half.json" -w 0s -d "$STEP_DUR" -r "$half" -f "$fns" || rc=$?; fi
  b1=$(cpu_busy); t1=$(cpu_steal_total); s1=$(pids_ticks "$SERVER_PIDS"); w1=$(date +%s.%N)
  [ "$rc" = 0 ] || log "latte exited with $rc ($pre-*.json.log): $(tail -3 "$pre-max.json.log" 2>/dev/null | tr '\n' ' ')"
  # the client's CPU: user + system of both measured latte processes, start-up included
  # (a run given its rate has no closed-loop part: no max.json.time, and pipefail must not stop us)
  ut0="$(awk '{print $1 + $2}' "$pre-max.json.time" 2>/dev/null | tail -1 || true)"
  ut1="$(awk '{print $1 + $2}' "$pre-half.json.time" 2>/dev/null | tail -1 || true)"
  awk -v s="$s" -v wl="$wl" -v d="$dist" -v j="$pre-max.json" -v hj="$pre-half.json" -v hz="$HZ" -v b="$((b1 - b0))" \
      -v sv="$((s1 - s0))" -v st="$((${t1%% *} - ${t0%% *}))" -v w0="$w0" -v w1="$w1" -v c="$(awk -v a="${ut0:-0}" -v b="${ut1:-0}" 'BEGIN{print a + b}')" \
      -v rss="$(pids_rss_json "$SERVER_PIDS")" -v noise="$NOISE_MAX_CORES" -v rc="$rc" -v half="${half:-0}" 'BEGIN{
    wall = w1 - w0; busy = b / hz; srv = sv / hz; other = busy - srv - c; if (other < 0) other = 0;
    n = split(substr(rss, 2, length(rss) - 2), r, ","); total = 0; for (i = 1; i <= n; i++) total += r[i];
    printf "{\"client\":\"latte\",\"server\":\"%s\",\"workload\":\"%s\",\"dist\":\"%s\",\"json\":\"%s\",\"half_json\":\"%s\",\"half_rate_per_s\":%d,\"exit_code\":%d,\"wall_s\":%.2f,\"machine_busy_cpu_s\":%.2f,\"server_cpu_s\":%.2f,\"client_cpu_s\":%.2f,\"other_cpu_s\":%.2f,\"other_cores\":%.3f,\"steal_cpu_s\":%.2f,\"server_rss_mib\":%d,\"server_rss_mib_per_node\":%s,\"trustworthy\":%s}\n",
      s, wl, d, j, hj, half, rc, wall, busy, srv, c, other, other / (wall > 0 ? wall : 1), st / hz, total, rss, (other / (wall > 0 ? wall : 1) <= noise) ? "true" : "false"
  }' >> "$MANIFEST"
  return 0
}

pop_for() {
  case "$1" in
    uniform)  echo "dist=UNIFORM(1..$ROWS)" ;;
    gaussian) echo "dist=GAUSSIAN(1..$ROWS,5)" ;;       # mean in the middle, 5 stdev to each end
    inmem)    echo "dist=UNIFORM(1..$(( ROWS / 100 > 1 ? ROWS / 100 : 1 )))" ;;
  esac
}

# ---- report: venv with matplotlib (created once), then bench/report.py ARGS... ----
make_report() {
  local venv="$HOME/.cache/helenus/bench-venv"
  if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import matplotlib' 2>/dev/null; then
    log "creating $venv (matplotlib)"
    python3 -m venv "$venv" && "$venv/bin/pip" install -q matplotlib >&2 || log "matplotlib unavailable: report without PNGs"
  fi
  local py="$venv/bin/python"; [ -x "$py" ] || py=python3
  "$py" "$ROOT/bench/report.py" "$@"
}

# ---- Spark (bench/spark.sh, bench/analytics.sh) ----
# pyspark 3.5 from PyPI in a venv at SPARK_VENV (~/.cache/helenus/spark-venv), installed once; sets
# SPARK_PY and SPARK_VERSION. The DataStax connector comes on the session's first start through
# spark.jars.packages into ~/.cache/helenus/spark-ivy (bench/spark_bench.py's spark_session).
spark_install() {
  SPARK_VENV="${SPARK_VENV:-$HOME/.cache/helenus/spark-venv}"
  if ! "$SPARK_VENV/bin/python" -c 'import pyspark; assert pyspark.__version__.startswith("3.5")' 2>/dev/null; then
    log "installing pyspark 3.5 into $SPARK_VENV"
    python3 -m venv "$SPARK_VENV" || return 1
    timeout 900 "$SPARK_VENV/bin/pip" install -q 'pyspark==3.5.*' >&2 || return 1
  fi
  SPARK_PY="$SPARK_VENV/bin/python"
  SPARK_VERSION="$("$SPARK_PY" -c 'import pyspark; print(pyspark.__version__)')"
  java -version 2>&1 | head -1 | grep -q '"17' || log "warning: Spark 3.5 is tested here with Java 17; found: $(java -version 2>&1 | head -1)"
}
# The Spark driver JVM whose pid a Spark client wrote to FILE (bench/spark_bench.py's --pid-file): TERM if
# still alive. It exits with its Python parent; this is the backstop.
kill_pidfile() {  # file
  if [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; then kill -TERM "$(cat "$1")" 2>/dev/null || true; fi
}
