//! Schemas, statements and bound values of the built-in workloads: cassandra-stress's
//! `keyspace1.standard1`, the time series of WORKLOADS.md §2 and the wide TTL partitions of §3.
//! YAML user profiles live in `profile.rs` and produce the same [`Workload`].

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use scylla::value::{CqlTimeuuid, CqlValue};

use crate::dist::{ascii_string, fill_bytes, mix64, stress_key, DistSpec, Rng};
use crate::options::{ProfileKind, StressOptions};
use crate::profile::{BindGen, UserProfileError};

/// Rows a time-series read returns at most (tlp-stress BasicTimeSeries's default limit).
pub const TIMESERIES_READ_LIMIT: u32 = 500;
/// Characters in a time-series value (tlp-stress's default).
pub const TIMESERIES_VALUE_LEN: usize = 100;
/// Rows per wide partition (WORKLOADS.md §3).
pub const WIDE_ROWS_PER_PARTITION: u64 = 1000;
/// TTL of wide-partition rows, seconds (WORKLOADS.md §3).
pub const WIDE_TTL_S: u32 = 8640;
/// Rows a wide-partition read returns at most: a log viewer's page of the newest events (at ~16 KB
/// a row, ten rows are a ~160 KB response).
pub const WIDE_READ_LIMIT: u32 = 10;
/// Approximate size of one JSON-ish wide-partition record: 1,000 of them make the ~16 MB partition
/// of WORKLOADS.md §3.
pub const WIDE_PAYLOAD_LEN: usize = 16_000;

/// Why a workload could not be built.
#[derive(Debug)]
pub enum WorkloadError {
    /// An op named in ratio()/ops() that the profile does not have.
    UnknownOp { op: String, available: Vec<String> },
    /// The user profile is unusable.
    Profile(UserProfileError),
}

impl fmt::Display for WorkloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkloadError::UnknownOp { op, available } => {
                write!(
                    f,
                    "unknown operation '{op}'; this profile has: {}",
                    available.join(", ")
                )
            }
            WorkloadError::Profile(e) => write!(f, "user profile: {e}"),
        }
    }
}

impl std::error::Error for WorkloadError {}

impl From<UserProfileError> for WorkloadError {
    fn from(e: UserProfileError) -> Self {
        WorkloadError::Profile(e)
    }
}

/// How an operation's bound values are produced from the key index.
#[derive(Debug, Clone)]
pub enum ValuesGen {
    /// standard1 INSERT: key plus `columns` blobs of `size` bytes.
    StandardWrite { columns: usize, size: DistSpec },
    /// standard1 SELECT by key.
    StandardRead,
    /// Time series INSERT (sensor, fresh timeuuid, text value).
    TimeSeriesInsert,
    /// Time series SELECT of a sensor's latest rows.
    TimeSeriesSelect,
    /// Wide partition INSERT (partition, event timeuuid from the index, JSON-ish payload).
    WideInsert,
    /// Wide partition SELECT of a partition's first rows.
    WideSelect,
    /// User profile statement: one generator per bind marker, filled in after PREPARE.
    User(Vec<BindGen>),
}

/// One operation type of a workload.
#[derive(Debug, Clone)]
pub struct OpDef {
    pub name: String,
    pub weight: u32,
    pub cql: String,
    /// Reads are idempotent and may be retried by the driver; writes here are too (fixed values).
    pub values: ValuesGen,
}

/// Schema and operations of a run.
#[derive(Debug, Clone)]
pub struct Workload {
    /// CREATE KEYSPACE / CREATE TABLE statements, run before the load.
    pub schema_cql: Vec<String>,
    pub ops: Vec<OpDef>,
    /// Key population when `-pop` is not given.
    pub default_population: DistSpec,
}

impl Workload {
    /// Builds the workload the options ask for (reads the YAML file for user profiles).
    pub fn from_options(o: &StressOptions) -> Result<Self, WorkloadError> {
        let all = match &o.profile {
            ProfileKind::Standard => standard1(o),
            ProfileKind::TimeSeries => timeseries(o),
            ProfileKind::WideTtl => widettl(o),
            ProfileKind::User(path) => crate::profile::load(path)?.into_workload()?,
        };
        all.select_ops(&o.ops)
    }

    /// Keeps the named ops with the given weights (write/read alias insert/select).
    fn select_ops(mut self, wanted: &[(String, u32)]) -> Result<Self, WorkloadError> {
        let mut chosen = Vec::new();
        for (name, weight) in wanted {
            let canonical = |n: &str| match n {
                "write" | "insert" => "insert".to_string(),
                "read" | "select" => "select".to_string(),
                other => other.to_string(),
            };
            let op = self
                .ops
                .iter()
                .find(|op| canonical(&op.name) == canonical(name))
                .ok_or_else(|| WorkloadError::UnknownOp {
                    op: name.clone(),
                    available: self.ops.iter().map(|o| o.name.clone()).collect(),
                })?;
            let mut op = op.clone();
            op.weight = *weight;
            chosen.push(op);
        }
        self.ops = chosen;
        Ok(self)
    }

    /// Picks an operation index by weight.
    pub fn pick_op(&self, rng: &mut Rng) -> usize {
        let total: u64 = self.ops.iter().map(|o| u64::from(o.weight)).sum();
        if total == 0 || self.ops.len() == 1 {
            return 0;
        }
        let mut x = rng.range_inclusive(0, total - 1);
        for (i, op) in self.ops.iter().enumerate() {
            let w = u64::from(op.weight);
            if x < w {
                return i;
            }
            x -= w;
        }
        0
    }
}

fn keyspace_cql(o: &StressOptions) -> String {
    format!(
        "CREATE KEYSPACE IF NOT EXISTS {} WITH replication = {{'class': '{}', 'replication_factor': '{}'}} AND durable_writes = true",
        o.keyspace, o.replication_class, o.replication_factor
    )
}

fn compaction_clause(o: &StressOptions, default: Option<&str>) -> String {
    match (&o.compaction, default) {
        (Some((class, opts)), _) => {
            let mut parts = vec![format!("'class': '{class}'")];
            parts.extend(opts.iter().map(|(k, v)| format!("'{k}': '{v}'")));
            format!(" WITH compaction = {{{}}}", parts.join(", "))
        }
        (None, Some(d)) => format!(" WITH compaction = {{{d}}}"),
        (None, None) => String::new(),
    }
}

fn default_population(o: &StressOptions) -> DistSpec {
    let n = match o.stop {
        crate::options::StopCondition::Ops(n) => n.max(1),
        crate::options::StopCondition::Duration(_) => 1_000_000,
    };
    if o.command == "write" {
        DistSpec::Seq { min: 1, max: n }
    } else {
        DistSpec::Uniform { min: 1, max: n }
    }
}

/// cassandra-stress's schema and statements, with `-col n=` columns named "C0".."Cn-1".
fn standard1(o: &StressOptions) -> Workload {
    let columns = usize::try_from(o.col_count.max().clamp(1, 1000)).unwrap_or(5);
    let names: Vec<String> = (0..columns).map(|i| format!("\"C{i}\"")).collect();
    let table = format!(
        "CREATE TABLE IF NOT EXISTS {}.standard1 (key blob PRIMARY KEY, {}){}",
        o.keyspace,
        names
            .iter()
            .map(|n| format!("{n} blob"))
            .collect::<Vec<_>>()
            .join(", "),
        compaction_clause(o, None)
    );
    let insert = format!(
        "INSERT INTO {}.standard1 (key, {}) VALUES (?{})",
        o.keyspace,
        names.join(", "),
        ", ?".repeat(columns)
    );
    Workload {
        schema_cql: vec![keyspace_cql(o), table],
        ops: vec![
            OpDef {
                name: "write".into(),
                weight: 1,
                cql: insert,
                values: ValuesGen::StandardWrite {
                    columns,
                    size: o.col_size.clone(),
                },
            },
            OpDef {
                name: "read".into(),
                weight: 1,
                cql: format!("SELECT * FROM {}.standard1 WHERE key = ?", o.keyspace),
                values: ValuesGen::StandardRead,
            },
        ],
        default_population: default_population(o),
    }
}

fn timeseries(o: &StressOptions) -> Workload {
    // The `timeseries` command sets its own limit and sensor count; `profile=timeseries` keeps
    // tlp-stress's defaults.
    let (limit, sensors) = o
        .timeseries
        .as_ref()
        .map_or((TIMESERIES_READ_LIMIT, 10_000), |t| {
            (t.read_limit, t.partitions)
        });
    let table = format!(
        "CREATE TABLE IF NOT EXISTS {}.sensor_data (sensor_id text, ts timeuuid, value text, PRIMARY KEY (sensor_id, ts)) \
         WITH CLUSTERING ORDER BY (ts DESC) AND{}",
        o.keyspace,
        compaction_clause(o, Some("'class': 'TimeWindowCompactionStrategy', 'compaction_window_unit': 'HOURS', 'compaction_window_size': '1'"))
            .trim_start_matches(" WITH")
    );
    Workload {
        schema_cql: vec![keyspace_cql(o), table],
        ops: vec![
            OpDef {
                name: "insert".into(),
                weight: 8,
                cql: format!(
                    "INSERT INTO {}.sensor_data (sensor_id, ts, value) VALUES (?, ?, ?)",
                    o.keyspace
                ),
                values: ValuesGen::TimeSeriesInsert,
            },
            OpDef {
                name: "select".into(),
                weight: 2,
                cql: format!(
                    "SELECT * FROM {}.sensor_data WHERE sensor_id = ? LIMIT {limit}",
                    o.keyspace
                ),
                values: ValuesGen::TimeSeriesSelect,
            },
        ],
        // Sensors, not rows: each sensor's partition grows with the run.
        default_population: DistSpec::Uniform {
            min: 1,
            max: sensors,
        },
    }
}

fn widettl(o: &StressOptions) -> Workload {
    let table = format!(
        "CREATE TABLE IF NOT EXISTS {}.wide_events (partition_key text, event_id timeuuid, payload text, \
         PRIMARY KEY (partition_key, event_id)) WITH default_time_to_live = {WIDE_TTL_S}{}",
        o.keyspace,
        compaction_clause(o, None).replace(" WITH ", " AND ")
    );
    Workload {
        schema_cql: vec![keyspace_cql(o), table],
        ops: vec![
            OpDef {
                name: "insert".into(),
                weight: 1,
                cql: format!("INSERT INTO {}.wide_events (partition_key, event_id, payload) VALUES (?, ?, ?) USING TTL {WIDE_TTL_S}", o.keyspace),
                values: ValuesGen::WideInsert,
            },
            OpDef {
                name: "select".into(),
                weight: 1,
                cql: format!("SELECT * FROM {}.wide_events WHERE partition_key = ? LIMIT {WIDE_READ_LIMIT}", o.keyspace),
                values: ValuesGen::WideSelect,
            },
        ],
        default_population: default_population(o),
    }
}

/// Offset between the UUID epoch (1582-10-15) and the Unix epoch, in 100 ns units.
const UUID_EPOCH_OFFSET_100NS: u64 = 0x01B2_1DD2_1381_4000;
static LAST_TIMEUUID_TICK: AtomicU64 = AtomicU64::new(0);

/// A version-1 UUID for `ticks_100ns` since the UUID epoch, with clock sequence and node from `seed`.
pub fn timeuuid_at(ticks_100ns: u64, seed: u64) -> [u8; 16] {
    let t = ticks_100ns & 0x0FFF_FFFF_FFFF_FFFF;
    let time_low = (t & 0xFFFF_FFFF) as u32;
    let time_mid = ((t >> 32) & 0xFFFF) as u16;
    let time_hi_version = (((t >> 48) & 0x0FFF) as u16) | 0x1000;
    let tail = mix64(seed);
    let clock_seq = (((tail >> 48) as u16) & 0x3FFF) | 0x8000;
    let mut b = [0u8; 16];
    b[0..4].copy_from_slice(&time_low.to_be_bytes());
    b[4..6].copy_from_slice(&time_mid.to_be_bytes());
    b[6..8].copy_from_slice(&time_hi_version.to_be_bytes());
    b[8..10].copy_from_slice(&clock_seq.to_be_bytes());
    b[10..16].copy_from_slice(&tail.to_be_bytes()[2..8]);
    b
}

/// A fresh timeuuid for now; strictly increasing within this process.
pub fn timeuuid_now(rng: &mut Rng) -> CqlTimeuuid {
    let now_100ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| (d.as_nanos() / 100) as u64)
        .unwrap_or(0)
        + UUID_EPOCH_OFFSET_100NS;
    let prev = LAST_TIMEUUID_TICK.fetch_max(now_100ns, Ordering::Relaxed);
    let tick = if prev >= now_100ns {
        LAST_TIMEUUID_TICK.fetch_add(1, Ordering::Relaxed) + 1
    } else {
        now_100ns
    };
    CqlTimeuuid::from_bytes(timeuuid_at(tick, rng.next_u64()))
}

/// The JSON-ish record stored in a wide partition.
fn wide_payload(index: u64) -> String {
    let body = ascii_string(index, WIDE_PAYLOAD_LEN.saturating_sub(80));
    format!("{{\"event\":\"e{index}\",\"level\":\"INFO\",\"source\":\"svc-{}\",\"message\":\"{body}\"}}", index % 97)
}

/// Bound values of op `op` for key index `index`.
pub fn bind_values(op: &OpDef, index: u64, rng: &mut Rng) -> Vec<CqlValue> {
    match &op.values {
        ValuesGen::StandardWrite { columns, size } => {
            let mut v = Vec::with_capacity(columns + 1);
            v.push(CqlValue::Blob(stress_key(index).to_vec()));
            for c in 0..*columns {
                let len = usize::try_from(size.draw(rng)).unwrap_or(34).min(1 << 20);
                let mut bytes = vec![0u8; len];
                fill_bytes(mix64(index) ^ c as u64, &mut bytes);
                v.push(CqlValue::Blob(bytes));
            }
            v
        }
        ValuesGen::StandardRead => vec![CqlValue::Blob(stress_key(index).to_vec())],
        ValuesGen::TimeSeriesInsert => vec![
            CqlValue::Text(format!("sensor-{index}")),
            CqlValue::Timeuuid(timeuuid_now(rng)),
            CqlValue::Text(ascii_string(rng.next_u64(), TIMESERIES_VALUE_LEN)),
        ],
        ValuesGen::TimeSeriesSelect => vec![CqlValue::Text(format!("sensor-{index}"))],
        ValuesGen::WideInsert => {
            // The event id is a function of the index, so re-inserting an index overwrites its row.
            let ticks = UUID_EPOCH_OFFSET_100NS + 16_000_000_000_000_000 + index * 10;
            vec![
                CqlValue::Text(format!("part-{}", index / WIDE_ROWS_PER_PARTITION)),
                CqlValue::Timeuuid(CqlTimeuuid::from_bytes(timeuuid_at(ticks, index))),
                CqlValue::Text(wide_payload(index)),
            ]
        }
        ValuesGen::WideSelect => vec![CqlValue::Text(format!(
            "part-{}",
            index / WIDE_ROWS_PER_PARTITION
        ))],
        ValuesGen::User(gens) => gens.iter().map(|g| g.value(index, rng)).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::parse_args;

    fn opts(s: &str) -> StressOptions {
        parse_args(&s.split_whitespace().map(str::to_string).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn standard1_matches_cassandra_stress_schema() {
        let w = Workload::from_options(&opts("write n=10")).unwrap();
        assert_eq!(
            w.schema_cql[1],
            "CREATE TABLE IF NOT EXISTS keyspace1.standard1 (key blob PRIMARY KEY, \"C0\" blob, \"C1\" blob, \"C2\" blob, \"C3\" blob, \"C4\" blob)"
        );
        assert_eq!(w.ops.len(), 1);
        assert_eq!(w.ops[0].cql, "INSERT INTO keyspace1.standard1 (key, \"C0\", \"C1\", \"C2\", \"C3\", \"C4\") VALUES (?, ?, ?, ?, ?, ?)");
        let mut rng = Rng::new(1);
        let v = bind_values(&w.ops[0], 255, &mut rng);
        assert_eq!(v.len(), 6);
        assert_eq!(v[0], CqlValue::Blob(b"00000000FF".to_vec()));
        assert!(matches!(&v[1], CqlValue::Blob(b) if b.len() == 34));
        assert_eq!(w.default_population, DistSpec::Seq { min: 1, max: 10 });
    }

    #[test]
    fn mixed_selects_ops_with_weights_and_rejects_unknown_ones() {
        let w = Workload::from_options(&opts("mixed ratio(write=1,read=3)")).unwrap();
        assert_eq!(
            w.ops
                .iter()
                .map(|o| (o.name.as_str(), o.weight))
                .collect::<Vec<_>>(),
            vec![("write", 1), ("read", 3)]
        );
        let mut rng = Rng::new(5);
        let reads = (0..4000).filter(|_| w.pick_op(&mut rng) == 1).count();
        assert!((2800..3200).contains(&reads), "{reads}");
        assert!(matches!(
            Workload::from_options(&opts("mixed ratio(write=1,scan=1)")),
            Err(WorkloadError::UnknownOp { .. })
        ));
    }

    #[test]
    fn timeseries_uses_twcs_desc_and_fresh_increasing_timeuuids() {
        let w = Workload::from_options(&opts("mixed profile=timeseries")).unwrap();
        assert!(w.schema_cql[1].contains("CLUSTERING ORDER BY (ts DESC)"));
        assert!(w.schema_cql[1].contains("TimeWindowCompactionStrategy"));
        let mut rng = Rng::new(2);
        let a = timeuuid_now(&mut rng);
        let b = timeuuid_now(&mut rng);
        let ticks = |u: &CqlTimeuuid| {
            let x = u.as_bytes();
            let hi = u64::from(u16::from_be_bytes([x[6], x[7]]) & 0x0FFF);
            let mid = u64::from(u16::from_be_bytes([x[4], x[5]]));
            let low = u64::from(u32::from_be_bytes([x[0], x[1], x[2], x[3]]));
            (hi << 48) | (mid << 32) | low
        };
        assert!(ticks(&b) > ticks(&a));
        assert_eq!(a.as_bytes()[6] >> 4, 1, "version 1");
        assert_eq!(a.as_bytes()[8] & 0xC0, 0x80, "RFC 4122 variant");
    }

    #[test]
    fn timeseries_command_binds_sensor_and_reads_its_latest_rows() {
        let w = Workload::from_options(&opts("timeseries limit=50 partitions=300 readrate=0.25"))
            .unwrap();
        assert_eq!(
            w.ops
                .iter()
                .map(|o| (o.name.as_str(), o.weight))
                .collect::<Vec<_>>(),
            vec![("insert", 750), ("select", 250)]
        );
        assert_eq!(
            w.ops[0].cql,
            "INSERT INTO keyspace1.sensor_data (sensor_id, ts, value) VALUES (?, ?, ?)"
        );
        assert_eq!(
            w.ops[1].cql,
            "SELECT * FROM keyspace1.sensor_data WHERE sensor_id = ? LIMIT 50"
        );
        assert!(w.schema_cql[1].starts_with(
            "CREATE TABLE IF NOT EXISTS keyspace1.sensor_data (sensor_id text, ts timeuuid, value text, \
             PRIMARY KEY (sensor_id, ts)) WITH CLUSTERING ORDER BY (ts DESC) AND compaction = {'class': 'TimeWindowCompactionStrategy'"
        ));
        assert_eq!(w.default_population, DistSpec::Uniform { min: 1, max: 300 });
        let mut rng = Rng::new(3);
        let insert = bind_values(&w.ops[0], 42, &mut rng);
        assert_eq!(insert[0], CqlValue::Text("sensor-42".into()));
        assert!(matches!(&insert[1], CqlValue::Timeuuid(_)));
        assert!(matches!(&insert[2], CqlValue::Text(v) if v.len() == TIMESERIES_VALUE_LEN));
        assert_eq!(
            bind_values(&w.ops[1], 42, &mut rng),
            vec![CqlValue::Text("sensor-42".into())]
        );
    }

    #[test]
    fn widettl_groups_indexes_into_partitions_with_a_ttl() {
        let w = Workload::from_options(&opts("write profile=widettl")).unwrap();
        assert!(w.schema_cql[1].contains("default_time_to_live = 8640"));
        assert!(w.ops[0].cql.ends_with("USING TTL 8640"));
        let mut rng = Rng::new(0);
        let v = bind_values(&w.ops[0], 2500, &mut rng);
        assert_eq!(v[0], CqlValue::Text("part-2".into()));
        assert_eq!(v[1], bind_values(&w.ops[0], 2500, &mut rng)[1]);
        // 1,000 rows of ~16 KB: the ~16 MB partition of WORKLOADS.md §3.
        assert!(matches!(&v[2], CqlValue::Text(p) if (15_000..17_000).contains(&p.len())));
    }
}
