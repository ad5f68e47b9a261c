//! cassandra-stress YAML user profiles (a subset): `keyspace`, `keyspace_definition`, `table`,
//! `table_definition`, `columnspec` (`name`, `size`, `population`), `queries` (`cql`), and an
//! implicit `insert` op writing every column of the table.
//!
//! Values are derived from the operation's key index: primary-key columns from the index alone
//! (so reads find what inserts wrote), other columns from the index and a per-op random draw.
//! cassandra-stress's `insert:` batching options (partitions, batchtype, select) are not modelled.

use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;

use scylla::frame::response::result::{ColumnType, NativeType};
use scylla::value::{CqlDate, CqlTimestamp, CqlTimeuuid, CqlValue, CqlVarint};

use crate::dist::{ascii_string, fill_bytes, mix64, DistSpec, Rng, Sampler};
use crate::options::parse_dist;
use crate::workload::{timeuuid_at, OpDef, ValuesGen, Workload};

/// Why a user profile could not be used.
#[derive(Debug)]
pub enum UserProfileError {
    Io {
        path: String,
        error: std::io::Error,
    },
    Yaml(serde_yaml::Error),
    /// A required field is absent.
    Missing(&'static str),
    /// A field has an unusable value.
    Invalid {
        field: String,
        reason: String,
    },
    /// A bind marker of a CQL type we cannot generate.
    UnsupportedType {
        column: String,
        typ: String,
    },
}

impl fmt::Display for UserProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UserProfileError::Io { path, error } => write!(f, "cannot read {path}: {error}"),
            UserProfileError::Yaml(e) => write!(f, "invalid YAML: {e}"),
            UserProfileError::Missing(field) => write!(f, "missing field '{field}'"),
            UserProfileError::Invalid { field, reason } => write!(f, "field '{field}': {reason}"),
            UserProfileError::UnsupportedType { column, typ } => {
                write!(f, "column '{column}': cannot generate values of type {typ}")
            }
        }
    }
}

impl std::error::Error for UserProfileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            UserProfileError::Io { error, .. } => Some(error),
            UserProfileError::Yaml(e) => Some(e),
            _ => None,
        }
    }
}

/// The parts of a profile we use.
#[derive(Debug, Clone, PartialEq)]
pub struct UserProfile {
    pub keyspace: String,
    pub keyspace_definition: Option<String>,
    pub table: String,
    pub table_definition: Option<String>,
    /// Column name -> (size, population).
    pub columns: BTreeMap<String, ColumnSpecYaml>,
    /// Query name -> CQL.
    pub queries: Vec<(String, String)>,
    /// Table columns in declaration order (from table_definition) and the primary-key columns.
    pub table_columns: Vec<String>,
    pub key_columns: Vec<String>,
}

/// `columnspec` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnSpecYaml {
    pub size: Option<DistSpec>,
    pub population: Option<DistSpec>,
}

/// Reads and parses a profile file.
pub fn load(path: &Path) -> Result<UserProfile, UserProfileError> {
    let text = std::fs::read_to_string(path).map_err(|e| UserProfileError::Io {
        path: path.display().to_string(),
        error: e,
    })?;
    parse(&text)
}

fn str_field(doc: &serde_yaml::Value, name: &'static str) -> Option<String> {
    doc.get(name)
        .and_then(|v| v.as_str())
        .map(|s| s.trim().trim_end_matches(';').to_string())
}

/// Parses profile text.
pub fn parse(text: &str) -> Result<UserProfile, UserProfileError> {
    let doc: serde_yaml::Value = serde_yaml::from_str(text).map_err(UserProfileError::Yaml)?;
    let keyspace = str_field(&doc, "keyspace").ok_or(UserProfileError::Missing("keyspace"))?;
    let table = str_field(&doc, "table").ok_or(UserProfileError::Missing("table"))?;
    let table_definition = str_field(&doc, "table_definition");
    let mut columns = BTreeMap::new();
    if let Some(specs) = doc.get("columnspec").and_then(|v| v.as_sequence()) {
        for spec in specs {
            let name = spec
                .get("name")
                .and_then(|v| v.as_str())
                .ok_or(UserProfileError::Missing("columnspec[].name"))?;
            let dist = |field: &str| -> Result<Option<DistSpec>, UserProfileError> {
                match spec.get(field).and_then(|v| v.as_str()) {
                    None => Ok(None),
                    Some(s) => {
                        parse_dist(field, s)
                            .map(Some)
                            .map_err(|e| UserProfileError::Invalid {
                                field: format!("columnspec {name}.{field}"),
                                reason: e.to_string(),
                            })
                    }
                }
            };
            columns.insert(
                name.to_string(),
                ColumnSpecYaml {
                    size: dist("size")?,
                    population: dist("population")?,
                },
            );
        }
    }
    let mut queries = Vec::new();
    if let Some(map) = doc.get("queries").and_then(|v| v.as_mapping()) {
        for (k, v) in map {
            let name = k.as_str().ok_or(UserProfileError::Invalid {
                field: "queries".into(),
                reason: "query names must be strings".into(),
            })?;
            let cql = v
                .get("cql")
                .and_then(|c| c.as_str())
                .ok_or(UserProfileError::Invalid {
                    field: format!("queries.{name}"),
                    reason: "needs a cql: entry".into(),
                })?;
            queries.push((
                name.to_string(),
                cql.trim().trim_end_matches(';').to_string(),
            ));
        }
    }
    let (table_columns, key_columns) = match &table_definition {
        Some(def) => parse_table_columns(def)?,
        None => (Vec::new(), Vec::new()),
    };
    Ok(UserProfile {
        keyspace,
        keyspace_definition: str_field(&doc, "keyspace_definition"),
        table,
        table_definition,
        columns,
        queries,
        table_columns,
        key_columns,
    })
}

/// Splits `s` at commas that are not inside parentheses or angle brackets.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' | '<' => depth += 1,
            ')' | '>' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn unquote(name: &str) -> String {
    let n = name.trim();
    match n.strip_prefix('"').and_then(|x| x.strip_suffix('"')) {
        Some(q) => q.to_string(),
        None => n.to_ascii_lowercase(),
    }
}

/// Column names and primary-key columns of a CREATE TABLE statement.
pub fn parse_table_columns(def: &str) -> Result<(Vec<String>, Vec<String>), UserProfileError> {
    let invalid = |reason: &str| UserProfileError::Invalid {
        field: "table_definition".into(),
        reason: reason.into(),
    };
    let open = def.find('(').ok_or_else(|| invalid("no column list"))?;
    let mut depth = 0i32;
    let mut close = None;
    for (i, c) in def[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(open + i);
                    break;
                }
            }
            _ => {}
        }
    }
    let close = close.ok_or_else(|| invalid("unbalanced parentheses"))?;
    let body = &def[open + 1..close];
    let mut cols = Vec::new();
    let mut keys = Vec::new();
    for entry in split_top_level(body) {
        let e = entry.trim();
        if e.is_empty() {
            continue;
        }
        if e.to_ascii_uppercase().starts_with("PRIMARY KEY") {
            let inner = e
                .find('(')
                .and_then(|i| e.rfind(')').map(|j| &e[i + 1..j]))
                .ok_or_else(|| invalid("PRIMARY KEY without columns"))?;
            for part in inner.split(',') {
                let k = unquote(part.trim().trim_start_matches('(').trim_end_matches(')'));
                if !k.is_empty() {
                    keys.push(k);
                }
            }
            continue;
        }
        let name = e
            .split_whitespace()
            .next()
            .ok_or_else(|| invalid("empty column"))?;
        let name = unquote(name);
        if e.to_ascii_uppercase().contains("PRIMARY KEY") {
            keys.push(name.clone());
        }
        cols.push(name);
    }
    if cols.is_empty() || keys.is_empty() {
        return Err(invalid("needs columns and a primary key"));
    }
    Ok((cols, keys))
}

impl UserProfile {
    /// The workload: `insert` plus one op per query; bind generators are filled in after PREPARE.
    pub fn into_workload(self) -> Result<Workload, UserProfileError> {
        let mut schema_cql = Vec::new();
        schema_cql.extend(self.keyspace_definition.clone());
        schema_cql.extend(self.table_definition.clone());
        let mut ops = Vec::new();
        if !self.table_columns.is_empty() {
            let quoted: Vec<String> = self
                .table_columns
                .iter()
                .map(|c| format!("\"{c}\""))
                .collect();
            ops.push(OpDef {
                name: "insert".into(),
                weight: 1,
                cql: format!(
                    "INSERT INTO {}.{} ({}) VALUES ({})",
                    self.keyspace,
                    self.table,
                    quoted.join(", "),
                    vec!["?"; quoted.len()].join(", ")
                ),
                values: ValuesGen::User(Vec::new()),
            });
        }
        for (name, cql) in &self.queries {
            ops.push(OpDef {
                name: name.clone(),
                weight: 1,
                cql: cql.clone(),
                values: ValuesGen::User(Vec::new()),
            });
        }
        let first_key = self
            .key_columns
            .first()
            .and_then(|k| self.columns.get(k))
            .and_then(|c| c.population.clone());
        // The first key column's population, else cassandra-stress's default of 100k partitions.
        let default_population = first_key.unwrap_or(DistSpec::Uniform {
            min: 1,
            max: 100_000,
        });
        Ok(Workload {
            schema_cql,
            ops,
            default_population,
        })
    }

    /// A generator for the bind marker `column` of CQL type `typ`.
    pub fn bind_gen(
        &self,
        column: &str,
        typ: &ColumnType<'_>,
    ) -> Result<BindGen, UserProfileError> {
        let native = match typ {
            ColumnType::Native(n) => n.clone(),
            other => {
                return Err(UserProfileError::UnsupportedType {
                    column: column.into(),
                    typ: format!("{other:?}"),
                })
            }
        };
        match native {
            NativeType::Counter | NativeType::Decimal | NativeType::Duration | NativeType::Time => {
                return Err(UserProfileError::UnsupportedType {
                    column: column.into(),
                    typ: format!("{native:?}"),
                })
            }
            _ => {}
        }
        let spec = self.columns.get(column);
        let is_key = self.key_columns.iter().any(|k| k == column);
        let size = spec
            .and_then(|s| s.size.clone())
            .unwrap_or(DistSpec::Uniform { min: 4, max: 8 });
        let population = if is_key {
            None
        } else {
            spec.and_then(|s| s.population.clone()).map(Sampler::new)
        };
        Ok(BindGen {
            native,
            size: Sampler::new(size),
            population,
            is_key,
            salt: name_salt(column),
        })
    }
}

fn name_salt(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Produces values for one bind marker.
#[derive(Debug, Clone)]
pub struct BindGen {
    native: NativeType,
    size: Sampler,
    /// Population of a non-key column's values; `None`: a fresh random value per op.
    population: Option<Sampler>,
    is_key: bool,
    salt: u64,
}

impl BindGen {
    /// The value for key index `index`.
    pub fn value(&self, index: u64, rng: &mut Rng) -> CqlValue {
        let seed = if self.is_key {
            mix64(index ^ self.salt)
        } else {
            match &self.population {
                Some(p) => mix64(p.next(rng) ^ self.salt),
                None => rng.next_u64(),
            }
        };
        // Sizes come from the seed so a key column always has the same length for one index.
        let mut size_rng = Rng::new(seed);
        let len = usize::try_from(self.size.next(&mut size_rng))
            .unwrap_or(8)
            .min(1 << 20);
        match self.native {
            NativeType::Ascii => CqlValue::Ascii(ascii_string(seed, len)),
            NativeType::Text => CqlValue::Text(ascii_string(seed, len)),
            NativeType::Blob => {
                let mut b = vec![0u8; len];
                fill_bytes(seed, &mut b);
                CqlValue::Blob(b)
            }
            NativeType::Boolean => CqlValue::Boolean(seed & 1 == 1),
            NativeType::TinyInt => CqlValue::TinyInt(seed as i8),
            NativeType::SmallInt => CqlValue::SmallInt(seed as i16),
            NativeType::Int => CqlValue::Int(seed as i32),
            NativeType::BigInt => CqlValue::BigInt(seed as i64),
            NativeType::Varint => CqlValue::Varint(CqlVarint::from_signed_bytes_be(
                (seed as i64).to_be_bytes().to_vec(),
            )),
            NativeType::Float => CqlValue::Float((seed % 1_000_000) as f32 / 100.0),
            NativeType::Double => CqlValue::Double((seed % 1_000_000_000) as f64 / 1000.0),
            NativeType::Timestamp => CqlValue::Timestamp(CqlTimestamp(
                1_600_000_000_000 + (seed % 200_000_000_000) as i64,
            )),
            NativeType::Date => CqlValue::Date(CqlDate((1u32 << 31) + (seed % 20_000) as u32)),
            NativeType::Uuid => CqlValue::Uuid(uuid::Uuid::from_u64_pair(seed, mix64(seed))),
            NativeType::Timeuuid => CqlValue::Timeuuid(CqlTimeuuid::from_bytes(timeuuid_at(
                0x01B2_1DD2_1381_4000 + (seed >> 8),
                seed,
            ))),
            NativeType::Inet => CqlValue::Inet(IpAddr::V4(Ipv4Addr::from((seed >> 32) as u32))),
            // Rejected in bind_gen; a blob keeps this total without a panic path.
            _ => CqlValue::Blob(Vec::new()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROFILE: &str = r#"
keyspace: stress_ks
keyspace_definition: |
  CREATE KEYSPACE stress_ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};
table: events
table_definition: |
  CREATE TABLE events (
    "Id" text,
    seq int,
    body blob,
    tags map<text, int>,
    PRIMARY KEY ((  "Id"), seq)
  ) WITH compaction = { 'class':'LeveledCompactionStrategy' };
columnspec:
  - name: Id
    size: fixed(12)
    population: uniform(1..1000)
  - name: body
    size: uniform(10..20)
insert:
  partitions: fixed(1)
queries:
  q1:
    cql: SELECT * FROM events WHERE "Id" = ? LIMIT 10
    fields: samerow
"#;

    #[test]
    fn parses_the_cassandra_stress_profile_subset() {
        let p = parse(PROFILE).unwrap();
        assert_eq!(p.keyspace, "stress_ks");
        assert_eq!(p.table, "events");
        assert_eq!(p.table_columns, vec!["Id", "seq", "body", "tags"]);
        assert_eq!(p.key_columns, vec!["Id", "seq"]);
        assert_eq!(
            p.queries,
            vec![(
                "q1".to_string(),
                "SELECT * FROM events WHERE \"Id\" = ? LIMIT 10".to_string()
            )]
        );
        assert_eq!(
            p.columns["Id"].population,
            Some(DistSpec::Uniform { min: 1, max: 1000 })
        );
    }

    #[test]
    fn workload_inserts_every_column_and_draws_keys_from_the_key_population() {
        let p = parse(PROFILE).unwrap();
        let w = p.into_workload().unwrap();
        assert_eq!(w.ops[0].cql, "INSERT INTO stress_ks.events (\"Id\", \"seq\", \"body\", \"tags\") VALUES (?, ?, ?, ?)");
        assert_eq!(w.ops[1].name, "q1");
        assert_eq!(
            w.default_population,
            DistSpec::Uniform { min: 1, max: 1000 }
        );
    }

    #[test]
    fn key_values_depend_only_on_the_index() {
        let p = parse(PROFILE).unwrap();
        let g = p
            .bind_gen("Id", &ColumnType::Native(NativeType::Text))
            .unwrap();
        let mut r1 = Rng::new(1);
        let mut r2 = Rng::new(2);
        let a = g.value(77, &mut r1);
        assert_eq!(a, g.value(77, &mut r2));
        assert!(matches!(a, CqlValue::Text(ref s) if s.len() == 12));
        assert!(p
            .bind_gen("c", &ColumnType::Native(NativeType::Counter))
            .is_err());
    }

    #[test]
    fn bad_profiles_are_errors() {
        assert!(matches!(
            parse("table: t"),
            Err(UserProfileError::Missing("keyspace"))
        ));
        assert!(matches!(parse(": : :"), Err(UserProfileError::Yaml(_))));
        assert!(parse("keyspace: k\ntable: t\ntable_definition: CREATE TABLE t (a int)").is_err());
        assert!(
            parse("keyspace: k\ntable: t\ncolumnspec:\n  - name: a\n    size: zipf(1)").is_err()
        );
    }
}
