//! Micro-benchmark: decode of a typical EXECUTE frame and encode of a 100-row RESULT.
//! Plain `main` (no criterion); prints ns/op as one JSON object.
//! Run: `cargo bench -p helenus-protocol --bench codec`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failing test may panic

use std::hint::black_box;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use helenus_protocol::*;
use helenus_types::{CqlType, NativeType};

const FRAMES_PER_BATCH: usize = 10_000;

fn execute_frame(version: u8) -> BytesMut {
    let params = QueryParameters {
        consistency: Consistency::LocalQuorum,
        values: QueryValues::Positional(vec![
            Value::Bytes(Bytes::from_static(&[0, 0, 0, 0, 0, 0, 0, 42])),
            Value::Bytes(Bytes::from_static(b"some text value of moderate size")),
            Value::Bytes(Bytes::from_static(&[0x3f, 0x80, 0, 0])),
        ]),
        skip_metadata: true,
        page_size: Some(5000),
        default_timestamp: Some(1_700_000_000_000_000),
        ..QueryParameters::default()
    };
    let req = Request::Execute {
        id: Bytes::from_static(&[0xAB; 16]),
        result_metadata_id: (version >= 5).then(|| Bytes::from_static(&[0xCD; 16])),
        params,
    };
    let mut out = BytesMut::new();
    ClientConnectionCodec::new(1 << 24)
        .encode(&RequestFrame::new(version, 7, req), &mut out)
        .unwrap();
    out
}

fn bench_decode_execute(version: u8, segments: bool) -> f64 {
    let mut client = ClientConnectionCodec::new(1 << 24);
    if segments {
        client.enable_segments();
    }
    let one = execute_frame(version);
    let mut many = BytesMut::new();
    for _ in 0..FRAMES_PER_BATCH {
        if segments {
            write_envelope_segments(&mut many, &one, false);
        } else {
            many.extend_from_slice(&one);
        }
    }
    let many = many.freeze();
    let mut best = f64::MAX;
    for _ in 0..20 {
        let mut server = ServerConnectionCodec::new(1 << 24);
        if segments {
            server.enable_segments();
        }
        let mut buf = BytesMut::from(&many[..]);
        let t = Instant::now();
        let mut n = 0;
        while let Some(f) = server.decode(&mut buf).unwrap() {
            black_box(&f);
            n += 1;
        }
        let ns = t.elapsed().as_nanos() as f64 / n as f64;
        assert_eq!(n, FRAMES_PER_BATCH);
        best = best.min(ns);
    }
    best
}

fn metadata() -> RowsMetadata {
    let col = |name: &str, t| ColumnSpec {
        keyspace: "ks".into(),
        table: "users".into(),
        name: name.into(),
        typ: CqlType::Native(t),
    };
    RowsMetadata::new(vec![
        col("id", NativeType::Bigint),
        col("name", NativeType::Varchar),
        col("score", NativeType::Double),
        col("ts", NativeType::Timestamp),
    ])
}

fn bench_encode_rows(streaming: bool, compression: Option<Compression>) -> f64 {
    let md = metadata();
    let cells: Vec<[Vec<u8>; 4]> = (0..100i64)
        .map(|i| {
            [
                i.to_be_bytes().to_vec(),
                format!("user-{i:06}").into_bytes(),
                (i as f64 * 1.5).to_be_bytes().to_vec(),
                (1_700_000_000_000i64 + i).to_be_bytes().to_vec(),
            ]
        })
        .collect();
    let rows = Rows {
        metadata: md.clone(),
        rows: cells
            .iter()
            .map(|r| r.iter().map(|c| Some(Bytes::copy_from_slice(c))).collect())
            .collect(),
    };
    let frame = ResponseFrame::new(4, 1, Response::Result(ResultBody::Rows(rows)));
    let mut codec = ServerConnectionCodec::new(1 << 24);
    codec.set_compression(compression);
    let mut out = BytesMut::with_capacity(64 * 1024);
    let iters = 2_000;
    let mut best = f64::MAX;
    for _ in 0..10 {
        let t = Instant::now();
        for _ in 0..iters {
            out.clear();
            if streaming {
                codec
                    .encode_rows(4, 1, &md, &mut out, |w| {
                        for r in &cells {
                            for c in r {
                                w.cell(Some(c))?;
                            }
                        }
                        Ok(())
                    })
                    .unwrap();
            } else {
                codec.encode(&frame, &mut out).unwrap();
            }
            black_box(&out);
        }
        best = best.min(t.elapsed().as_nanos() as f64 / iters as f64);
    }
    best
}

fn main() {
    let results = [
        ("decode_execute_v4_ns", bench_decode_execute(4, false)),
        (
            "decode_execute_v5_segments_ns",
            bench_decode_execute(5, true),
        ),
        (
            "encode_result_100_rows_rows_writer_ns",
            bench_encode_rows(true, None),
        ),
        (
            "encode_result_100_rows_materialised_ns",
            bench_encode_rows(false, None),
        ),
        (
            "encode_result_100_rows_lz4_ns",
            bench_encode_rows(true, Some(Compression::Lz4)),
        ),
    ];
    let body: Vec<String> = results
        .iter()
        .map(|(k, v)| format!("\"{k}\": {v:.1}"))
        .collect();
    println!("{{{}}}", body.join(", "));
}
