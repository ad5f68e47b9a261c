//! Sample messages covering every request and response shape, per protocol version.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};

use bytes::Bytes;
use helenus_protocol::*;
use helenus_types::{CqlType, NativeType, UserType};

pub fn b(s: &[u8]) -> Bytes {
    Bytes::copy_from_slice(s)
}

pub fn full_params(version: u8) -> QueryParameters {
    QueryParameters {
        consistency: Consistency::LocalQuorum,
        values: QueryValues::Positional(vec![
            Value::Bytes(b(&[0, 0, 0, 1])),
            Value::Null,
            Value::Unset,
        ]),
        skip_metadata: true,
        page_size: Some(5000),
        paging_state: Some(b(b"paging-state")),
        serial_consistency: Some(Consistency::LocalSerial),
        default_timestamp: Some(1_700_000_000_000_000),
        keyspace: (version >= 5).then(|| "ks".to_string()),
        now_in_seconds: (version >= 5).then_some(1_700_000_000),
    }
}

pub fn requests(version: u8) -> Vec<Request> {
    let mut startup = BTreeMap::new();
    startup.insert("CQL_VERSION".to_string(), "3.0.0".to_string());
    startup.insert("COMPRESSION".to_string(), "lz4".to_string());
    let rid = (version >= 5).then(|| b(b"rmid"));
    vec![
        Request::Startup(startup),
        Request::Options,
        Request::Query {
            query: "SELECT * FROM t".into(),
            params: QueryParameters::default(),
        },
        Request::Query {
            query: "SELECT * FROM t WHERE k = ?".into(),
            params: full_params(version),
        },
        Request::Query {
            query: "INSERT INTO t (k, v) VALUES (:k, :v)".into(),
            params: QueryParameters {
                values: QueryValues::Named(vec![
                    ("k".into(), Value::Bytes(b(b"key"))),
                    ("v".into(), Value::Null),
                ]),
                ..QueryParameters::default()
            },
        },
        Request::Prepare {
            query: "SELECT v FROM t WHERE k = ?".into(),
            keyspace: None,
        },
        Request::Prepare {
            query: "SELECT 1".into(),
            keyspace: (version >= 5).then(|| "system".to_string()),
        },
        Request::Execute {
            id: b(&[0xAB; 16]),
            result_metadata_id: rid.clone(),
            params: full_params(version),
        },
        Request::Execute {
            id: b(&[1]),
            result_metadata_id: rid,
            params: QueryParameters::default(),
        },
        Request::Batch(Batch {
            batch_type: BatchType::Unlogged,
            statements: vec![
                BatchStatement {
                    query: BatchQuery::Query("INSERT INTO t (k) VALUES (?)".into()),
                    values: vec![Value::Bytes(b(b"a"))],
                },
                BatchStatement {
                    query: BatchQuery::Prepared(b(&[9; 16])),
                    values: vec![Value::Null],
                },
            ],
            consistency: Consistency::Quorum,
            serial_consistency: Some(Consistency::Serial),
            default_timestamp: Some(42),
            keyspace: (version >= 5).then(|| "ks".to_string()),
            now_in_seconds: (version >= 5).then_some(7),
        }),
        Request::Batch(Batch {
            batch_type: BatchType::Counter,
            statements: vec![],
            consistency: Consistency::One,
            serial_consistency: None,
            default_timestamp: None,
            keyspace: None,
            now_in_seconds: None,
        }),
        Request::Register {
            events: vec![
                "TOPOLOGY_CHANGE".into(),
                "STATUS_CHANGE".into(),
                "SCHEMA_CHANGE".into(),
            ],
        },
        Request::AuthResponse {
            token: Some(b(b"\0cassandra\0cassandra")),
        },
        Request::AuthResponse { token: None },
    ]
}

fn col(name: &str, typ: CqlType) -> ColumnSpec {
    ColumnSpec {
        keyspace: "ks".into(),
        table: "t".into(),
        name: name.into(),
        typ,
    }
}

pub fn all_types_columns() -> Vec<ColumnSpec> {
    let udt = CqlType::Udt {
        def: Box::new(UserType {
            keyspace: "ks".into(),
            name: "address".into(),
            fields: vec![
                ("street".into(), CqlType::Native(NativeType::Varchar)),
                ("zip".into(), CqlType::Native(NativeType::Int)),
            ],
        }),
        frozen: false,
    };
    vec![
        col("k", CqlType::Native(NativeType::Uuid)),
        col(
            "l",
            CqlType::List {
                element: Box::new(CqlType::Native(NativeType::Bigint)),
                frozen: false,
            },
        ),
        col(
            "s",
            CqlType::Set {
                element: Box::new(CqlType::Native(NativeType::Inet)),
                frozen: false,
            },
        ),
        col(
            "m",
            CqlType::Map {
                key: Box::new(CqlType::Native(NativeType::Varchar)),
                value: Box::new(udt),
                frozen: false,
            },
        ),
        col(
            "tu",
            CqlType::Tuple(vec![
                CqlType::Native(NativeType::Date),
                CqlType::Native(NativeType::Duration),
            ]),
        ),
        col(
            "v",
            CqlType::Vector {
                element: Box::new(CqlType::Native(NativeType::Float)),
                dimension: 3,
            },
        ),
        col(
            "c",
            CqlType::Custom("org.apache.cassandra.db.marshal.LexicalUUIDType".into()),
        ),
    ]
}

pub fn rows(n: usize) -> Rows {
    let metadata = RowsMetadata::new(vec![
        col("k", CqlType::Native(NativeType::Int)),
        col("v", CqlType::Native(NativeType::Varchar)),
    ]);
    let rows = (0..n)
        .map(|i| {
            vec![
                Some(Bytes::from((i as i32).to_be_bytes().to_vec())),
                (i % 3 != 0).then(|| b(b"value")),
            ]
        })
        .collect();
    Rows { metadata, rows }
}

fn sc(target: SchemaChangeTarget) -> SchemaChange {
    SchemaChange {
        change_type: SchemaChangeType::Created,
        target,
    }
}

pub fn responses(version: u8) -> Vec<Response> {
    let cl = Consistency::Quorum;
    let failures = if version >= 5 {
        Failures {
            num_failures: 2,
            reason_map: vec![
                ("10.0.0.1".parse::<IpAddr>().unwrap(), 0),
                ("::1".parse().unwrap(), 6),
            ],
        }
    } else {
        Failures {
            num_failures: 2,
            reason_map: vec![],
        }
    };
    let err = |code, extra| {
        Response::Error(ErrorBody {
            code,
            message: "boom".into(),
            extra,
        })
    };
    let mut supported = BTreeMap::new();
    supported.insert(
        "COMPRESSION".to_string(),
        vec!["lz4".to_string(), "snappy".to_string()],
    );
    supported.insert(
        "PROTOCOL_VERSIONS".to_string(),
        vec!["3/v3".into(), "4/v4".into(), "5/v5".into()],
    );
    let addr: SocketAddr = "127.0.0.2:9042".parse().unwrap();
    let mut paged = rows(3);
    paged.metadata.paging_state = Some(b(b"next"));
    if version >= 5 {
        paged.metadata.new_metadata_id = Some(b(b"newid"));
    }
    let mut no_meta = rows(2);
    no_meta.metadata = RowsMetadata::without_metadata(2);
    let mut mixed_tables = Rows {
        metadata: RowsMetadata::new(all_types_columns()),
        rows: vec![],
    };
    mixed_tables.metadata.columns[0].table = "other".into();
    mixed_tables.metadata.global_table_spec = None;
    let prepared = Prepared {
        id: b(&[7; 16]),
        result_metadata_id: (version >= 5).then(|| b(b"rmid")),
        metadata: PreparedMetadata::new(
            vec![
                col("k", CqlType::Native(NativeType::Int)),
                col("c", CqlType::Native(NativeType::Ascii)),
            ],
            if version >= 4 { vec![0] } else { vec![] },
        ),
        result_metadata: RowsMetadata::new(all_types_columns()),
    };
    let wt_type = if version >= 5 { "CAS" } else { "SIMPLE" };
    vec![
        err(ErrorCode::SERVER, ErrorExtra::None),
        err(ErrorCode::PROTOCOL, ErrorExtra::None),
        err(ErrorCode::BAD_CREDENTIALS, ErrorExtra::None),
        err(
            ErrorCode::UNAVAILABLE,
            ErrorExtra::Unavailable {
                consistency: cl,
                required: 3,
                alive: 1,
            },
        ),
        err(ErrorCode::OVERLOADED, ErrorExtra::None),
        err(ErrorCode::IS_BOOTSTRAPPING, ErrorExtra::None),
        err(ErrorCode::TRUNCATE, ErrorExtra::None),
        err(
            ErrorCode::WRITE_TIMEOUT,
            ErrorExtra::WriteTimeout {
                consistency: cl,
                received: 1,
                block_for: 2,
                write_type: wt_type.into(),
                contentions: (version >= 5).then_some(3),
            },
        ),
        err(
            ErrorCode::READ_TIMEOUT,
            ErrorExtra::ReadTimeout {
                consistency: cl,
                received: 1,
                block_for: 2,
                data_present: true,
            },
        ),
        err(
            ErrorCode::READ_FAILURE,
            ErrorExtra::ReadFailure {
                consistency: cl,
                received: 1,
                block_for: 2,
                failures: failures.clone(),
                data_present: false,
            },
        ),
        err(
            ErrorCode::FUNCTION_FAILURE,
            ErrorExtra::FunctionFailure {
                keyspace: "ks".into(),
                function: "f".into(),
                arg_types: vec!["int".into()],
            },
        ),
        err(
            ErrorCode::WRITE_FAILURE,
            ErrorExtra::WriteFailure {
                consistency: cl,
                received: 1,
                block_for: 2,
                failures,
                write_type: "BATCH".into(),
            },
        ),
        err(ErrorCode::CDC_WRITE_FAILURE, ErrorExtra::None),
        err(
            ErrorCode::CAS_WRITE_UNKNOWN,
            ErrorExtra::CasWriteUnknown {
                consistency: cl,
                received: 0,
                block_for: 2,
            },
        ),
        err(ErrorCode::SYNTAX, ErrorExtra::None),
        err(ErrorCode::UNAUTHORIZED, ErrorExtra::None),
        err(ErrorCode::INVALID, ErrorExtra::None),
        err(ErrorCode::CONFIG, ErrorExtra::None),
        err(
            ErrorCode::ALREADY_EXISTS,
            ErrorExtra::AlreadyExists {
                keyspace: "ks".into(),
                table: "t".into(),
            },
        ),
        err(
            ErrorCode::UNPREPARED,
            ErrorExtra::Unprepared { id: b(&[1, 2, 3]) },
        ),
        Response::Ready,
        Response::Authenticate {
            authenticator: "org.apache.cassandra.auth.PasswordAuthenticator".into(),
        },
        Response::Supported(supported),
        Response::Result(ResultBody::Void),
        Response::Result(ResultBody::Rows(rows(10))),
        Response::Result(ResultBody::Rows(paged)),
        Response::Result(ResultBody::Rows(no_meta)),
        Response::Result(ResultBody::Rows(mixed_tables)),
        Response::Result(ResultBody::SetKeyspace("ks".into())),
        Response::Result(ResultBody::Prepared(Box::new(prepared))),
        Response::Result(ResultBody::SchemaChange(sc(SchemaChangeTarget::Keyspace {
            keyspace: "ks".into(),
        }))),
        Response::Result(ResultBody::SchemaChange(sc(SchemaChangeTarget::Table {
            keyspace: "ks".into(),
            name: "t".into(),
        }))),
        Response::Result(ResultBody::SchemaChange(sc(SchemaChangeTarget::Type {
            keyspace: "ks".into(),
            name: "ty".into(),
        }))),
        Response::Result(ResultBody::SchemaChange(sc(SchemaChangeTarget::Function {
            keyspace: "ks".into(),
            name: "f".into(),
            arg_types: vec!["int".into(), "text".into()],
        }))),
        Response::Result(ResultBody::SchemaChange(SchemaChange {
            change_type: SchemaChangeType::Dropped,
            target: SchemaChangeTarget::Aggregate {
                keyspace: "ks".into(),
                name: "a".into(),
                arg_types: vec![],
            },
        })),
        Response::Event(Event::TopologyChange {
            change: TopologyChangeType::NewNode,
            address: addr,
        }),
        Response::Event(Event::TopologyChange {
            change: TopologyChangeType::RemovedNode,
            address: addr,
        }),
        Response::Event(Event::TopologyChange {
            change: TopologyChangeType::MovedNode,
            address: addr,
        }),
        Response::Event(Event::StatusChange {
            change: StatusChangeType::Up,
            address: addr,
        }),
        Response::Event(Event::StatusChange {
            change: StatusChangeType::Down,
            address: addr,
        }),
        Response::Event(Event::SchemaChange(SchemaChange {
            change_type: SchemaChangeType::Updated,
            target: SchemaChangeTarget::Table {
                keyspace: "ks".into(),
                name: "t".into(),
            },
        })),
        Response::AuthChallenge {
            token: Some(b(b"challenge")),
        },
        Response::AuthSuccess { token: None },
    ]
}

/// All the wire modes a connection can be in for `version`.
#[derive(Debug, Clone, Copy)]
pub struct Mode {
    pub compression: Option<Compression>,
    pub segments: bool,
}

pub fn modes(version: u8) -> Vec<Mode> {
    if version >= 5 {
        vec![
            Mode {
                compression: None,
                segments: false,
            },
            Mode {
                compression: None,
                segments: true,
            },
            Mode {
                compression: Some(Compression::Lz4),
                segments: true,
            },
        ]
    } else {
        vec![
            Mode {
                compression: None,
                segments: false,
            },
            Mode {
                compression: Some(Compression::Lz4),
                segments: false,
            },
            Mode {
                compression: Some(Compression::Snappy),
                segments: false,
            },
        ]
    }
}

pub fn codecs(mode: Mode, max: usize) -> (ServerConnectionCodec, ClientConnectionCodec) {
    let mut s = ServerConnectionCodec::new(max);
    let mut c = ClientConnectionCodec::new(max);
    s.set_compression(mode.compression);
    c.set_compression(mode.compression);
    if mode.segments {
        s.enable_segments();
        c.enable_segments();
    }
    (s, c)
}
