//! Every request and response, in v3/v4/v5, with compression off/on and v5 segments, travels
//! client -> server (requests) and server -> client (responses) unchanged.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failing test may panic

mod common;

use bytes::{BufMut, Bytes, BytesMut};
use common::*;
use helenus_protocol::*;

const MAX: usize = 16 * 1024 * 1024;

#[test]
fn every_request_round_trips_in_every_version_and_mode() {
    for version in 3..=5u8 {
        for mode in modes(version) {
            let (mut server, mut client) = codecs(mode, MAX);
            let mut wire = BytesMut::new();
            let reqs = requests(version);
            for (i, r) in reqs.iter().enumerate() {
                let mut f = RequestFrame::new(version, i as i16, r.clone());
                if i % 2 == 0 {
                    f.flags |= FLAG_TRACING;
                }
                if version >= 4 && i % 3 == 0 {
                    let mut p = BytesMap::new();
                    p.insert("k".into(), Some(Bytes::from_static(b"v")));
                    f.custom_payload = Some(p);
                }
                client.encode(&f, &mut wire).unwrap();
            }
            for (i, r) in reqs.iter().enumerate() {
                let got = server
                    .decode(&mut wire)
                    .unwrap()
                    .unwrap_or_else(|| panic!("v{version} {mode:?} #{i}"));
                assert_eq!(&got.request, r, "v{version} {mode:?}");
                assert_eq!(got.stream, i as i16);
                assert_eq!(got.tracing(), i % 2 == 0);
            }
            assert!(wire.is_empty());
        }
    }
}

#[test]
fn every_response_round_trips_in_every_version_and_mode() {
    for version in 3..=5u8 {
        for mode in modes(version) {
            let (mut server, mut client) = codecs(mode, MAX);
            let mut wire = BytesMut::new();
            let resps = responses(version);
            let mut frames = Vec::new();
            for (i, r) in resps.iter().enumerate() {
                let mut f = ResponseFrame::new(version, i as i16, r.clone());
                if i % 4 == 1 {
                    f.tracing_id = Some([i as u8; 16]);
                }
                if version >= 4 && i % 5 == 2 {
                    f.warnings = vec!["Aggregation query used without partition key".into()];
                    let mut p = BytesMap::new();
                    p.insert("x".into(), None);
                    f.custom_payload = Some(p);
                }
                server.encode(&f, &mut wire).unwrap();
                frames.push(f);
            }
            for f in &frames {
                let got = client.decode(&mut wire).unwrap().unwrap();
                assert_eq!(&got, f, "v{version} {mode:?}");
            }
            assert!(wire.is_empty());
        }
    }
}

#[test]
fn frames_fed_one_byte_at_a_time_decode_identically() {
    for version in [4u8, 5] {
        for mode in modes(version) {
            let (mut server, mut client) = codecs(mode, MAX);
            let mut wire = BytesMut::new();
            for r in requests(version) {
                client
                    .encode(&RequestFrame::new(version, 1, r), &mut wire)
                    .unwrap();
            }
            let mut buf = BytesMut::new();
            let mut got = Vec::new();
            for byte in wire.iter() {
                buf.put_u8(*byte);
                while let Some(f) = server.decode(&mut buf).unwrap() {
                    got.push(f.request);
                }
            }
            assert_eq!(got, requests(version));
        }
    }
}

#[test]
fn a_300_kib_frame_spans_three_segments_and_reassembles() {
    for lz4 in [false, true] {
        let mode = Mode {
            compression: lz4.then_some(Compression::Lz4),
            segments: true,
        };
        let (mut server, mut client) = codecs(mode, MAX);
        // Mostly incompressible cells so the segments really carry ~300 KiB.
        let mut seed = 0x9E3779B97F4A7C15u64;
        let mut cell = vec![0u8; 300 * 1024];
        for b in cell.iter_mut() {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            *b = seed as u8;
        }
        let mut rows = rows(1);
        rows.rows[0][1] = Some(Bytes::from(cell));
        let f = ResponseFrame::new(5, 9, Response::Result(ResultBody::Rows(rows)));
        let mut wire = BytesMut::new();
        server.encode(&f, &mut wire).unwrap();
        // Walk the segment headers: 3 non-self-contained segments.
        let mut probe = wire.clone();
        let mut n = 0;
        while let Some(seg) = decode_segment(&mut probe, lz4).unwrap() {
            assert!(!seg.self_contained);
            assert!(seg.payload.len() <= MAX_SEGMENT_PAYLOAD);
            n += 1;
        }
        assert_eq!(n, 3);
        assert_eq!(client.decode(&mut wire).unwrap().unwrap(), f);
    }
}

#[test]
fn rows_writer_path_equals_materialised_rows_through_the_codec() {
    for version in 3..=5u8 {
        for mode in modes(version) {
            let (mut server, _) = codecs(mode, MAX);
            let (mut server2, mut client) = codecs(mode, MAX);
            let rows = rows(100);
            let mut a = BytesMut::new();
            server
                .encode_rows(version, 3, &rows.metadata, &mut a, |w| {
                    for r in &rows.rows {
                        w.row(r.iter().map(|c| c.as_deref()))?;
                    }
                    Ok(())
                })
                .unwrap();
            let f = ResponseFrame::new(version, 3, Response::Result(ResultBody::Rows(rows)));
            let mut b = BytesMut::new();
            server2.encode(&f, &mut b).unwrap();
            assert_eq!(a, b);
            assert_eq!(client.decode(&mut a).unwrap().unwrap(), f);
        }
    }
}

// Golden vectors written out from native_protocol_v4.spec / v5.spec byte layouts.

#[test]
fn golden_v4_startup_request() {
    let mut m = StringMap::new();
    m.insert("CQL_VERSION".into(), "3.0.0".into());
    let mut out = BytesMut::new();
    ClientConnectionCodec::new(MAX)
        .encode(&RequestFrame::new(4, 0, Request::Startup(m)), &mut out)
        .unwrap();
    let mut expected = vec![
        0x04, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x16, 0x00, 0x01, 0x00, 0x0b,
    ];
    expected.extend_from_slice(b"CQL_VERSION");
    expected.extend_from_slice(&[0x00, 0x05]);
    expected.extend_from_slice(b"3.0.0");
    assert_eq!(&out[..], &expected[..]);
}

#[test]
fn golden_ready_and_options() {
    let mut out = BytesMut::new();
    ServerConnectionCodec::new(MAX)
        .encode(&ResponseFrame::new(4, 1, Response::Ready), &mut out)
        .unwrap();
    assert_eq!(&out[..], &[0x84, 0, 0, 1, 0x02, 0, 0, 0, 0]);
    let mut wire = BytesMut::from(&[0x05u8, 0, 0x7f, 0xff, 0x05, 0, 0, 0, 0][..]);
    let f = ServerConnectionCodec::new(MAX)
        .decode(&mut wire)
        .unwrap()
        .unwrap();
    assert_eq!(
        (f.version, f.stream, f.request),
        (5, i16::MAX, Request::Options)
    );
}

#[test]
fn golden_query_flags_are_a_byte_in_v4_and_an_int_in_v5() {
    let q = Request::Query {
        query: "SELECT".into(),
        params: QueryParameters {
            page_size: Some(100),
            ..QueryParameters::default()
        },
    };
    let mut v4 = BytesMut::new();
    q.encode(4, &mut v4).unwrap();
    assert_eq!(
        &v4[..],
        &[0, 0, 0, 6, b'S', b'E', b'L', b'E', b'C', b'T', 0, 1, 0x04, 0, 0, 0, 100]
    );
    let mut v5 = BytesMut::new();
    q.encode(5, &mut v5).unwrap();
    assert_eq!(&v5[10..], &[0, 1, 0, 0, 0, 0x04, 0, 0, 0, 100]);
}

#[test]
fn golden_void_result_and_set_keyspace() {
    let mut out = BytesMut::new();
    ResultBody::Void.encode(4, &mut out).unwrap();
    assert_eq!(&out[..], &[0, 0, 0, 1]);
    out.clear();
    ResultBody::SetKeyspace("ks".into())
        .encode(4, &mut out)
        .unwrap();
    assert_eq!(&out[..], &[0, 0, 0, 3, 0, 2, b'k', b's']);
}

#[test]
fn v5_only_fields_are_refused_in_v4() {
    let q = Request::Query {
        query: "x".into(),
        params: full_params(5),
    };
    assert!(matches!(
        q.encode(4, &mut BytesMut::new()),
        Err(EncodeError::UnsupportedInVersion { .. })
    ));
}

#[test]
fn compressed_frame_without_negotiation_is_a_recoverable_error() {
    let mut s = ServerConnectionCodec::new(MAX);
    let mut wire = BytesMut::from(&[0x04u8, FLAG_COMPRESSION, 0, 2, 0x05, 0, 0, 0, 0][..]);
    let e = s.decode(&mut wire).unwrap_err();
    assert!(e.can_continue());
    assert_eq!(e.kind, DecodeErrorKind::CompressionNotNegotiated);
}
