//! The mapping of outcomes and errors to protocol responses, BATCH execution and DESCRIBE;
//! the per-opcode dispatch that calls them is the transport's (`transport/dispatch.rs`).

use super::describe::{self, DescribeRow};
use super::error::{ExecError, ExecResult};
use super::select::SelectOutput;
use super::{prepare, Outcome, Prepared, Session};
use crate::node::NodeState;
use bytes::Bytes;
use helenus_cql::ast::{DescribeStatement, DescribeTarget};
use helenus_protocol as proto;
use helenus_types::{CqlType, CqlValue, NativeType};
use std::collections::HashMap;

pub fn error_response(e: ExecError) -> proto::Response {
    use proto::{ErrorBody, ErrorCode, ErrorExtra};
    let message = e.to_string();
    let (code, extra) = match &e {
        ExecError::Syntax(_) => (ErrorCode::SYNTAX, ErrorExtra::None),
        ExecError::Invalid(_) => (ErrorCode::INVALID, ErrorExtra::None),
        ExecError::Config(_) => (ErrorCode::CONFIG, ErrorExtra::None),
        ExecError::AlreadyExists {
            keyspace, table, ..
        } => (
            ErrorCode::ALREADY_EXISTS,
            ErrorExtra::AlreadyExists {
                keyspace: keyspace.clone(),
                table: table.clone(),
            },
        ),
        ExecError::Unprepared(id) => (
            ErrorCode::UNPREPARED,
            ErrorExtra::Unprepared {
                id: Bytes::from(id.clone()),
            },
        ),
        ExecError::Protocol(_) => (ErrorCode::PROTOCOL, ErrorExtra::None),
        ExecError::Overloaded(_) => (ErrorCode::OVERLOADED, ErrorExtra::None),
        ExecError::Unavailable {
            consistency,
            required,
            alive,
            ..
        } => (
            ErrorCode::UNAVAILABLE,
            ErrorExtra::Unavailable {
                consistency: *consistency,
                required: *required,
                alive: *alive,
            },
        ),
        ExecError::WriteTimeout {
            consistency,
            write_type,
            received,
            block_for,
        } => (
            ErrorCode::WRITE_TIMEOUT,
            ErrorExtra::WriteTimeout {
                consistency: *consistency,
                received: *received,
                block_for: *block_for,
                write_type: write_type.clone(),
                contentions: None,
            },
        ),
        ExecError::ReadTimeout {
            consistency,
            received,
            block_for,
            data_present,
        } => (
            ErrorCode::READ_TIMEOUT,
            ErrorExtra::ReadTimeout {
                consistency: *consistency,
                received: *received,
                block_for: *block_for,
                data_present: *data_present,
            },
        ),
        ExecError::WriteFailure {
            consistency,
            received,
            block_for,
            failures,
            write_type,
        } => (
            ErrorCode::WRITE_FAILURE,
            ErrorExtra::WriteFailure {
                consistency: *consistency,
                received: *received,
                block_for: *block_for,
                failures: proto::Failures {
                    num_failures: *failures,
                    reason_map: Vec::new(),
                },
                write_type: write_type.clone(),
            },
        ),
        ExecError::ReadFailure {
            consistency,
            node,
            reason,
            ..
        } => (
            ErrorCode::READ_FAILURE,
            ErrorExtra::ReadFailure {
                consistency: *consistency,
                received: 0,
                block_for: 1,
                failures: proto::Failures {
                    num_failures: 1,
                    reason_map: vec![(*node, *reason)],
                },
                data_present: false,
            },
        ),
        ExecError::Truncate(_) => (ErrorCode::TRUNCATE, ErrorExtra::None),
        ExecError::Unauthorized(_) => (ErrorCode::UNAUTHORIZED, ErrorExtra::None),
        ExecError::BadCredentials(_) => (ErrorCode::BAD_CREDENTIALS, ErrorExtra::None),
        ExecError::FunctionFailure {
            keyspace,
            function,
            arg_types,
            ..
        } => (
            ErrorCode::FUNCTION_FAILURE,
            ErrorExtra::FunctionFailure {
                keyspace: keyspace.clone(),
                function: function.clone(),
                arg_types: arg_types.clone(),
            },
        ),
        ExecError::Server(_) => (ErrorCode::SERVER, ErrorExtra::None),
    };
    proto::Response::Error(ErrorBody {
        code,
        message,
        extra,
    })
}

pub fn rows_result(
    keyspace: &str,
    table: &str,
    out: SelectOutput,
    skip_metadata: bool,
    metadata_id: Option<[u8; 16]>,
) -> proto::ResultBody {
    let metadata = proto::RowsMetadata {
        columns_count: out.columns.len(),
        global_table_spec: None,
        columns: if skip_metadata || out.wire_columns.is_some() {
            Vec::new()
        } else {
            proto::ColumnSpec::of_table(keyspace, table, &out.columns)
        },
        paging_state: out.paging_state,
        no_metadata: skip_metadata,
        new_metadata_id: metadata_id.map(|m| Bytes::copy_from_slice(&m)),
        encoded_columns: out.wire_columns,
    };
    match out.encoded {
        Some((count, body)) => proto::ResultBody::EncodedRows(proto::EncodedRows {
            metadata,
            count,
            body,
        }),
        None => proto::ResultBody::Rows(proto::Rows {
            metadata,
            rows: out.rows,
        }),
    }
}

pub fn outcome_response(o: Outcome, skip_metadata: bool) -> proto::Response {
    proto::Response::Result(match o {
        Outcome::Void => proto::ResultBody::Void,
        Outcome::SetKeyspace(ks) => proto::ResultBody::SetKeyspace(ks),
        Outcome::SchemaChange(c) => proto::ResultBody::SchemaChange(c),
        Outcome::Rows {
            keyspace,
            table,
            out,
        } => rows_result(&keyspace, &table, out, skip_metadata, None),
    })
}

pub fn prepared_response(p: &Prepared, version: u8) -> proto::Response {
    let variables = proto::PreparedMetadata {
        pk_indexes: p.pk_indexes.clone(),
        global_table_spec: None,
        columns: p
            .binds
            .iter()
            .map(|b| proto::ColumnSpec {
                keyspace: b.keyspace.clone(),
                table: b.table.clone(),
                name: b.name.clone(),
                typ: b.ty.clone(),
            })
            .collect(),
    };
    let result = match &p.result {
        Some((ks, t, cols)) => proto::RowsMetadata {
            columns_count: cols.len(),
            global_table_spec: None,
            columns: proto::ColumnSpec::of_table(ks, t, cols),
            paging_state: None,
            no_metadata: false,
            new_metadata_id: None,
            encoded_columns: None,
        },
        None => proto::RowsMetadata {
            columns_count: 0,
            global_table_spec: None,
            columns: Vec::new(),
            paging_state: None,
            no_metadata: true,
            new_metadata_id: None,
            encoded_columns: None,
        },
    };
    proto::Response::Result(proto::ResultBody::Prepared(Box::new(proto::Prepared {
        id: Bytes::copy_from_slice(&p.id),
        result_metadata_id: (version >= 5).then(|| Bytes::copy_from_slice(&p.result_metadata_id)),
        metadata: variables,
        result_metadata: result,
    })))
}

pub fn supported() -> proto::Response {
    let mut m: HashMap<String, Vec<String>> = HashMap::new();
    m.insert("CQL_VERSION".into(), vec![crate::CQL_VERSION.into()]);
    m.insert("COMPRESSION".into(), vec!["lz4".into(), "snappy".into()]);
    m.insert(
        "PROTOCOL_VERSIONS".into(),
        vec!["3/v3".into(), "4/v4".into(), "5/v5".into()],
    );
    proto::Response::Supported(m.into_iter().collect())
}

/// Runs a BATCH request's statements.
pub async fn run_batch(
    node: &NodeState,
    session: &parking_lot::Mutex<Session>,
    b: proto::Batch,
) -> ExecResult<Outcome> {
    let ks = b
        .keyspace
        .clone()
        .or_else(|| session.lock().keyspace.clone());
    let timestamp_us = b
        .default_timestamp
        .filter(|&t| t != i64::MIN)
        .unwrap_or_else(|| node.exec.next_timestamp_us());
    let mut prepared = Vec::with_capacity(b.statements.len());
    for s in &b.statements {
        let p = match &s.query {
            proto::BatchQuery::Query(q) => prepare(node, ks.as_deref(), q)?,
            proto::BatchQuery::Prepared(id) => {
                super::cached(node, id).ok_or_else(|| ExecError::Unprepared(id.to_vec()))?
            }
        };
        super::check_value_count(&p, s.values.len())?;
        prepared.push(p);
    }
    let user = session.lock().user.clone();
    for p in &prepared {
        super::access::authorize(node, user.as_deref(), p)?;
    }
    let mut plans = Vec::with_capacity(prepared.len());
    for p in &prepared {
        let super::Planned::Write(plan) = &p.plan else {
            return Err(ExecError::Invalid("Invalid statement in batch: only UPDATE, INSERT and DELETE statements are allowed.".into()));
        };
        plans.push(plan.as_ref());
    }
    let kind = match b.batch_type {
        proto::BatchType::Logged => helenus_cql::ast::BatchKind::Logged,
        proto::BatchType::Unlogged => helenus_cql::ast::BatchKind::Unlogged,
        proto::BatchType::Counter => helenus_cql::ast::BatchKind::Counter,
    };
    super::batch::check_kind(kind, &plans)?;
    // One moment for the whole batch: its TTLs, deletion times and now() agree.
    let now = node.exec.now();
    let ctx = super::write::WriteContext {
        timestamp_us,
        now_s: now.s,
        lists: None,
        prepends: node.exec.prepends(),
        consistency: super::consistency_level(b.consistency),
        serial_consistency: super::serial_level(b.serial_consistency),
        max_mutation_bytes: node.config.max_mutation_bytes(),
    };
    let binds: Vec<super::values::Binds> = b
        .statements
        .iter()
        .map(|s| super::values::Binds {
            values: &s.values,
            now,
            planning: false,
        })
        .collect();
    if plans.iter().any(|p| p.condition.is_some()) {
        let statements: Vec<_> = plans.iter().copied().zip(&binds).collect();
        return super::lwt::execute_batch(node, &statements, &ctx).await;
    }
    let mut muts = Vec::new();
    for (plan, binds) in plans.iter().zip(&binds) {
        muts.extend(super::write::batch_child_mutations(plan, binds, &ctx)?);
    }
    super::batch::check_limits(node, kind, &plans, &muts)?;
    ctx.consistency.validate_for_write()?;
    super::apply_batch_mutations(node, muts, ctx.consistency, kind).await?;
    Ok(Outcome::Void)
}

fn text(s: &str) -> Option<Bytes> {
    Some(super::values::serialize(&CqlValue::Text(s.to_string())))
}

fn describe_output(rows: Vec<DescribeRow>, with_statement: bool) -> SelectOutput {
    let t = CqlType::Native(NativeType::Varchar);
    let mut columns = vec![
        ("keyspace_name".to_string(), t.clone()),
        ("type".to_string(), t.clone()),
        ("name".to_string(), t.clone()),
    ];
    if with_statement {
        columns.push(("create_statement".to_string(), t));
    }
    let rows = rows
        .into_iter()
        .map(|r| {
            let mut cells = vec![text(&r.keyspace), text(r.kind), text(&r.name)];
            if with_statement {
                cells.push(r.statement.as_deref().and_then(text));
            }
            cells
        })
        .collect();
    SelectOutput {
        columns: columns.into(),
        wire_columns: None,
        rows,
        paging_state: None,
        encoded: None,
    }
}

pub fn describe(
    node: &NodeState,
    d: &DescribeStatement,
    session_ks: Option<&str>,
) -> ExecResult<Outcome> {
    let schema = node.schema();
    let out = match &d.target {
        DescribeTarget::Cluster => describe_cluster(node),
        DescribeTarget::Schema { full } => {
            describe_output(describe::schema_rows(&schema, *full), true)
        }
        DescribeTarget::Keyspaces => {
            describe_output(describe::listing(&schema, "keyspace", None), false)
        }
        DescribeTarget::Tables => {
            describe_output(describe::listing(&schema, "table", session_ks), false)
        }
        DescribeTarget::Types => {
            describe_output(describe::listing(&schema, "type", session_ks), false)
        }
        DescribeTarget::Functions | DescribeTarget::Aggregates => {
            describe_output(Vec::new(), false)
        }
        DescribeTarget::Keyspace { only, name } => {
            let n = match name {
                Some(n) => n.name.clone(),
                None => session_ks.map(str::to_string).ok_or_else(|| {
                    ExecError::Invalid("No keyspace specified and no current keyspace".into())
                })?,
            };
            describe_output(
                describe::keyspace_rows(&*find_ks(&schema, &n)?, *only),
                true,
            )
        }
        DescribeTarget::Table(q) => {
            describe_table(&*find_ks(&schema, &ks_of(q, session_ks)?)?, &q.name.name)?
        }
        DescribeTarget::Type(q) => {
            describe_type(&*find_ks(&schema, &ks_of(q, session_ks)?)?, &q.name.name)?
        }
        DescribeTarget::Index(q) => {
            describe_index(&*find_ks(&schema, &ks_of(q, session_ks)?)?, &q.name.name)?
        }
        DescribeTarget::Name(q) => {
            // A bare name is a keyspace if one has it, else a table.
            if q.keyspace.is_none() {
                if let Some(ks) = schema.keyspaces.get(&q.name.name) {
                    return Ok(Outcome::Rows {
                        keyspace: String::new(),
                        table: String::new(),
                        out: describe_output(describe::keyspace_rows(ks, false), true),
                    });
                }
            }
            let inner = DescribeStatement {
                target: DescribeTarget::Table(q.clone()),
                with_internals: d.with_internals,
            };
            return describe(node, &inner, session_ks);
        }
        DescribeTarget::Function(_)
        | DescribeTarget::Aggregate(_)
        | DescribeTarget::MaterializedView(_) => {
            return Err(ExecError::Invalid(
                "Functions, aggregates and materialized views are not supported by Helenus yet"
                    .into(),
            ))
        }
    };
    Ok(Outcome::Rows {
        keyspace: String::new(),
        table: String::new(),
        out,
    })
}

/// The keyspace a DESCRIBE target names, or the session's.
fn ks_of(q: &helenus_cql::ast::QualifiedName, session_ks: Option<&str>) -> ExecResult<String> {
    match (&q.keyspace, session_ks) {
        (Some(k), _) => Ok(k.name.clone()),
        (None, Some(k)) => Ok(k.to_string()),
        (None, None) => Err(ExecError::Invalid(
            "No keyspace specified and no current keyspace".into(),
        )),
    }
}

fn find_ks(
    schema: &helenus_schema::Schema,
    name: &str,
) -> ExecResult<std::sync::Arc<helenus_schema::KeyspaceMeta>> {
    schema
        .keyspaces
        .get(name)
        .cloned()
        .ok_or_else(|| ExecError::Invalid(format!("'{name}' not found in keyspaces")))
}

fn describe_cluster(node: &NodeState) -> SelectOutput {
    let t = CqlType::Native(NativeType::Varchar);
    SelectOutput {
        columns: [
            ("cluster".into(), t.clone()),
            ("partitioner".into(), t.clone()),
            ("snitch".into(), t),
        ]
        .into(),
        wire_columns: None,
        rows: vec![vec![
            text(&node.config.cluster_name),
            text("Murmur3Partitioner"),
            text("DynamicEndpointSnitch"),
        ]],
        paging_state: None,
        encoded: None,
    }
}

/// A table and its indexes.
fn describe_table(ks: &helenus_schema::KeyspaceMeta, name: &str) -> ExecResult<SelectOutput> {
    let t = ks.tables.get(name).ok_or_else(|| {
        ExecError::Invalid(format!("'{name}' not found in keyspace '{}'", ks.name))
    })?;
    let mut rows = vec![DescribeRow {
        keyspace: ks.name.clone(),
        kind: "table",
        name: describe::maybe_quote(&t.name),
        statement: Some(describe::table_statement(t)),
    }];
    for idx in &t.indexes {
        rows.push(DescribeRow {
            keyspace: ks.name.clone(),
            kind: "index",
            name: describe::maybe_quote(&idx.name),
            statement: Some(describe::index_statement(t, idx)),
        });
    }
    Ok(describe_output(rows, true))
}

fn describe_type(ks: &helenus_schema::KeyspaceMeta, name: &str) -> ExecResult<SelectOutput> {
    let ut = ks.types.get(name).ok_or_else(|| {
        ExecError::Invalid(format!(
            "User defined type '{name}' not found in '{}'",
            ks.name
        ))
    })?;
    Ok(describe_output(
        vec![DescribeRow {
            keyspace: ks.name.clone(),
            kind: "type",
            name: describe::maybe_quote(&ut.name),
            statement: Some(describe::type_statement(&ks.name, ut)),
        }],
        true,
    ))
}

fn describe_index(ks: &helenus_schema::KeyspaceMeta, name: &str) -> ExecResult<SelectOutput> {
    let found = ks.tables.values().find_map(|t| {
        t.indexes
            .iter()
            .find(|i| i.name == name)
            .map(|i| (t.clone(), i.clone()))
    });
    let (t, idx) = found
        .ok_or_else(|| ExecError::Invalid(format!("Index '{name}' not found in '{}'", ks.name)))?;
    Ok(describe_output(
        vec![DescribeRow {
            keyspace: ks.name.clone(),
            kind: "index",
            name: describe::maybe_quote(&idx.name),
            statement: Some(describe::index_statement(&t, &idx)),
        }],
        true,
    ))
}
