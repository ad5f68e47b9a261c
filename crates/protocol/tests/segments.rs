//! v5 segments against an independent reading of native_protocol_v5.spec §2.2: random
//! sequences of envelopes (0 B to 300 KiB, compressible or not) written by the server codec and
//! read back by a spec reader written here (its own CRC24, CRC32 and lz4 block decoder), fed in
//! random TCP read chunkings; and the reverse, segments built here in every legal shape
//! (stored, compressed, compressed-but-larger, envelopes spanning segments) decoded by the
//! server codec. Seeded, so a failure names the seed that reproduces it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failing test may panic

use bytes::{Bytes, BytesMut};
use helenus_protocol::{
    ClientConnectionCodec, Compression, QueryParameters, QueryValues, Request, RequestFrame,
    Response, ResponseFrame, ResultBody, Rows, RowsMetadata, ServerConnectionCodec, Value,
    MAX_LZ4_SEGMENT_PAYLOAD, MAX_SEGMENT_PAYLOAD, SHARED_SEGMENT_MAX_ENVELOPE_BYTES,
};

const MAX_FRAME: usize = 1 << 20;
const CASES: u64 = 48;

/// xorshift64*: small, seeded, good enough to pick sizes and cut points.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
    /// `len` bytes, random (lz4 cannot shrink them) or a short repeated pattern.
    fn bytes(&mut self, len: usize, compressible: bool) -> Vec<u8> {
        if compressible {
            let unit: Vec<u8> = (0..1 + self.below(48)).map(|_| self.next() as u8).collect();
            unit.iter().copied().cycle().take(len).collect()
        } else {
            (0..len).map(|_| (self.next() >> 24) as u8).collect()
        }
    }
    /// Mostly small, some medium, some spanning two or three segments.
    fn size(&mut self) -> usize {
        match self.below(10) {
            0..=3 => self.below(200),
            4..=6 => self.below(16 << 10),
            7..=8 => self.below(140 << 10),
            _ => self.below(300 << 10),
        }
    }
}

// ---- the spec reader -------------------------------------------------------------------------

fn spec_crc24(mut v: u64, len: usize) -> u32 {
    let mut crc: u32 = 0x87_5060;
    for _ in 0..len {
        crc ^= ((v & 0xff) as u32) << 16;
        v >>= 8;
        for _ in 0..8 {
            crc <<= 1;
            if crc & 0x100_0000 != 0 {
                crc ^= 0x197_4F0B;
            }
        }
    }
    crc
}

/// Bitwise CRC32 (IEEE, reflected) over the spec's 4 priming bytes and then `data`.
fn spec_crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in [0xFAu8, 0x2D, 0x55, 0xCA].iter().chain(data) {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn le(b: &[u8]) -> u64 {
    b.iter().rev().fold(0, |acc, x| (acc << 8) | u64::from(*x))
}

fn lz4_ext_len(src: &[u8], i: &mut usize, mut n: usize) -> usize {
    if n == 15 {
        loop {
            let b = src[*i];
            *i += 1;
            n += b as usize;
            if b != 255 {
                break;
            }
        }
    }
    n
}

/// An lz4 block decoder written from the lz4 block format description.
fn spec_lz4_decode(src: &[u8], expected_len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(expected_len);
    let mut i = 0;
    loop {
        let token = src[i];
        i += 1;
        let lit = lz4_ext_len(src, &mut i, usize::from(token >> 4));
        out.extend_from_slice(&src[i..i + lit]);
        i += lit;
        if i == src.len() {
            break;
        }
        let offset = le(&src[i..i + 2]) as usize;
        i += 2;
        assert!(
            offset != 0 && offset <= out.len(),
            "bad lz4 offset {offset}"
        );
        let matched = lz4_ext_len(src, &mut i, usize::from(token & 15)) + 4;
        let start = out.len() - offset;
        for j in 0..matched {
            out.push(out[start + j]);
        }
    }
    assert_eq!(out.len(), expected_len, "lz4 block length");
    out
}

/// Envelope length from its 9-byte header, when the header is there.
fn envelope_len(b: &[u8]) -> Option<usize> {
    b.get(5..9)
        .map(|l| 9 + le(&[l[3], l[2], l[1], l[0]]) as usize)
}

#[derive(Default)]
struct SpecReader {
    lz4: bool,
    wire: Vec<u8>,
    /// Payload of non-self-contained segments: one large envelope being assembled.
    spanning: Vec<u8>,
    envelopes: Vec<Vec<u8>>,
    segments: usize,
    stored_lz4_segments: usize,
}

impl SpecReader {
    fn new(lz4: bool) -> SpecReader {
        SpecReader {
            lz4,
            ..SpecReader::default()
        }
    }

    fn feed(&mut self, chunk: &[u8]) {
        self.wire.extend_from_slice(chunk);
        while let Some(used) = self.segment() {
            self.wire.drain(..used);
        }
    }

    /// Reads one whole segment off the front of `wire`; returns its length.
    fn segment(&mut self) -> Option<usize> {
        let hlen = if self.lz4 { 5 } else { 3 };
        let header = le(self.wire.get(..hlen)?);
        let crc = le(self.wire.get(hlen..hlen + 3)?) as u32;
        assert_eq!(spec_crc24(header, hlen), crc, "header CRC24");
        let payload_len = (header & 0x1_FFFF) as usize;
        let (uncompressed_len, self_contained) = if self.lz4 {
            ((header >> 17) & 0x1_FFFF, header >> 34 & 1 == 1)
        } else {
            (0, header >> 17 & 1 == 1)
        };
        let start = hlen + 3;
        let end = start + payload_len;
        let trailer = self.wire.get(end..end + 4)?;
        let body = &self.wire[start..end];
        assert_eq!(spec_crc32(body), le(trailer) as u32, "payload CRC32");
        let payload = if self.lz4 && uncompressed_len > 0 {
            spec_lz4_decode(body, uncompressed_len as usize)
        } else {
            if self.lz4 {
                self.stored_lz4_segments += 1;
            }
            body.to_vec()
        };
        self.segments += 1;
        self.take_envelopes(payload, self_contained);
        Some(end + 4)
    }

    fn take_envelopes(&mut self, payload: Vec<u8>, self_contained: bool) {
        if !self_contained {
            self.spanning.extend_from_slice(&payload);
            if let Some(len) = envelope_len(&self.spanning) {
                assert!(
                    self.spanning.len() <= len,
                    "a spanning segment holds a 2nd envelope"
                );
                if self.spanning.len() == len {
                    self.envelopes.push(std::mem::take(&mut self.spanning));
                }
            }
            return;
        }
        assert!(
            self.spanning.is_empty(),
            "self-contained segment inside a spanning envelope"
        );
        let mut rest = &payload[..];
        while !rest.is_empty() {
            let len = envelope_len(rest).expect("self-contained segment cuts a header");
            assert!(len <= rest.len(), "self-contained segment cuts an envelope");
            self.envelopes.push(rest[..len].to_vec());
            rest = &rest[len..];
        }
    }
}

/// Feeds `wire` in random read sizes: single bytes, header-sized, typical and large reads.
fn feed_chunked(rng: &mut Rng, wire: &[u8], mut feed: impl FnMut(&[u8])) {
    let mut at = 0;
    while at < wire.len() {
        let n = match rng.below(4) {
            0 => 1 + rng.below(12),
            1 => 1 + rng.below(4096),
            2 => 1 + rng.below(65536),
            _ => 1 + rng.below(300_000),
        };
        let end = (at + n).min(wire.len());
        feed(&wire[at..end]);
        at = end;
    }
}

// ---- server -> client --------------------------------------------------------------------------

fn blob_response(stream: i16, cell: Vec<u8>) -> ResponseFrame {
    let rows = Rows {
        metadata: RowsMetadata::without_metadata(1),
        rows: vec![vec![Some(Bytes::from(cell))]],
    };
    ResponseFrame::new(5, stream, Response::Result(ResultBody::Rows(rows)))
}

/// The envelope exactly as a connection without segments or compression writes it.
fn plain_envelope(frame: &ResponseFrame) -> Vec<u8> {
    let mut out = BytesMut::new();
    ServerConnectionCodec::new(MAX_FRAME)
        .encode(frame, &mut out)
        .unwrap();
    out.to_vec()
}

/// Segments a greedy packer needs for envelopes of these lengths written in one batch
/// (envelopes over SHARED_SEGMENT_MAX_ENVELOPE_BYTES go alone).
fn greedy_segments(lens: &[usize], max: usize) -> usize {
    let (mut open, mut n) = (0, 0);
    for &len in lens {
        if len > SHARED_SEGMENT_MAX_ENVELOPE_BYTES {
            n += usize::from(open > 0) + len.div_ceil(max);
            open = 0;
        } else if open + len > max {
            n += 1;
            open = len;
        } else {
            open += len;
        }
    }
    n + usize::from(open > 0)
}

/// A random response; some sized so their envelope lands right at a segment limit.
fn random_response(rng: &mut Rng, stream: i16, max: usize) -> ResponseFrame {
    if rng.chance(12) {
        return ResponseFrame::new(5, stream, Response::Ready);
    }
    let compressible = rng.chance(2);
    let size = if rng.chance(8) {
        let overhead = plain_envelope(&blob_response(stream, Vec::new())).len();
        let limit = if rng.chance(2) {
            max
        } else {
            SHARED_SEGMENT_MAX_ENVELOPE_BYTES
        };
        (limit + rng.below(5)).saturating_sub(2 + overhead)
    } else {
        rng.size()
    };
    blob_response(stream, rng.bytes(size, compressible))
}

fn server_case(seed: u64) {
    let mut rng = Rng::new(seed);
    let lz4 = seed.is_multiple_of(2);
    let max = if lz4 {
        MAX_LZ4_SEGMENT_PAYLOAD
    } else {
        MAX_SEGMENT_PAYLOAD
    };
    let mut server = ServerConnectionCodec::new(MAX_FRAME);
    server.set_compression(lz4.then_some(Compression::Lz4));
    server.enable_segments();
    let mut wire = BytesMut::new();
    let mut expected = Vec::new();
    let mut all_frames = Vec::new();
    let mut expected_segments = 0;
    let batches = 1 + rng.below(6);
    for _ in 0..batches {
        let frames: Vec<_> = (0..1 + rng.below(12))
            .map(|i| random_response(&mut rng, i as i16, max))
            .collect();
        let lens: Vec<_> = frames.iter().map(|f| plain_envelope(f).len()).collect();
        if frames.len() == 1 && rng.chance(2) {
            server.encode(&frames[0], &mut wire).unwrap();
        } else {
            let mut batch = server.batch(&mut wire);
            for f in &frames {
                batch.encode(f).unwrap();
            }
        }
        expected_segments += greedy_segments(&lens, max);
        expected.extend(frames.iter().map(plain_envelope));
        all_frames.extend(frames);
    }
    let mut reader = SpecReader::new(lz4);
    feed_chunked(&mut rng, &wire, |c| reader.feed(c));
    assert!(reader.wire.is_empty(), "seed {seed}: trailing bytes");
    assert!(
        reader.spanning.is_empty(),
        "seed {seed}: unfinished envelope"
    );
    assert!(
        reader.envelopes == expected,
        "seed {seed}: envelopes differ"
    );
    assert_eq!(reader.segments, expected_segments, "seed {seed}: packing");
    assert_eq!(
        reader.stored_lz4_segments, 0,
        "seed {seed}: stored lz4 segment"
    );

    // The crate's own client decoder agrees, under a different chunking.
    let mut client = ClientConnectionCodec::new(MAX_FRAME);
    client.set_compression(lz4.then_some(Compression::Lz4));
    client.enable_segments();
    let mut buf = BytesMut::new();
    let mut got = Vec::new();
    feed_chunked(&mut rng, &wire, |c| {
        buf.extend_from_slice(c);
        while let Some(f) = client.decode(&mut buf).unwrap() {
            got.push(f);
        }
    });
    assert!(got == all_frames, "seed {seed}: client codec disagrees");
}

#[test]
fn server_segments_round_trip_through_a_spec_reader() {
    for seed in 0..CASES {
        server_case(seed);
    }
}

#[test]
fn a_batch_of_small_responses_shares_one_segment() {
    for lz4 in [false, true] {
        let mut server = ServerConnectionCodec::new(MAX_FRAME);
        server.set_compression(lz4.then_some(Compression::Lz4));
        server.enable_segments();
        let mut wire = BytesMut::new();
        let mut batch = server.batch(&mut wire);
        let frames: Vec<_> = (0..3000)
            .map(|i| blob_response(i, vec![i as u8; 60]))
            .collect();
        for f in &frames {
            batch.encode(f).unwrap();
        }
        drop(batch);
        let mut reader = SpecReader::new(lz4);
        reader.feed(&wire);
        assert_eq!(reader.envelopes.len(), 3000);
        let lens: Vec<_> = frames.iter().map(|f| plain_envelope(f).len()).collect();
        let max = if lz4 {
            MAX_LZ4_SEGMENT_PAYLOAD
        } else {
            MAX_SEGMENT_PAYLOAD
        };
        // ~250 KB of envelopes: two full segments and a partial one.
        assert_eq!(reader.segments, greedy_segments(&lens, max), "lz4={lz4}");
        assert_eq!(reader.segments, 3, "lz4={lz4}");
    }
}

#[test]
fn incompressible_lz4_payloads_still_go_out_compressed() {
    let mut rng = Rng::new(7);
    let mut server = ServerConnectionCodec::new(MAX_FRAME);
    server.set_compression(Some(Compression::Lz4));
    server.enable_segments();
    let mut wire = BytesMut::new();
    for (i, size) in [1usize, 30, 1000, 127 << 10, 300 << 10]
        .into_iter()
        .enumerate()
    {
        let f = blob_response(i as i16, rng.bytes(size, false));
        server.encode(&f, &mut wire).unwrap();
    }
    let mut reader = SpecReader::new(true);
    reader.feed(&wire);
    assert_eq!(reader.envelopes.len(), 5);
    assert_eq!(reader.stored_lz4_segments, 0);
}

// ---- client -> server --------------------------------------------------------------------------

/// An lz4 block of literals only: valid, and always larger than its input.
fn lz4_literals(data: &[u8]) -> Vec<u8> {
    let n = data.len();
    let mut out = vec![(n.min(15) as u8) << 4];
    if n >= 15 {
        let mut rest = n - 15;
        while rest >= 255 {
            out.push(255);
            rest -= 255;
        }
        out.push(rest as u8);
    }
    out.extend_from_slice(data);
    out
}

/// One segment in whichever legal lz4 form `rng` picks.
fn spec_segment(rng: &mut Rng, out: &mut Vec<u8>, payload: &[u8], self_contained: bool, lz4: bool) {
    let sc = u64::from(self_contained);
    let (body, header, hlen) = if lz4 {
        let literals = lz4_literals(payload);
        let (body, ulen) = match rng.below(3) {
            0 => (payload.to_vec(), 0),
            1 if literals.len() <= MAX_SEGMENT_PAYLOAD && !payload.is_empty() => {
                (literals, payload.len())
            }
            _ => {
                let c = lz4_flex::block::compress(payload);
                if c.len() <= MAX_SEGMENT_PAYLOAD && !payload.is_empty() {
                    (c, payload.len())
                } else {
                    (payload.to_vec(), 0)
                }
            }
        };
        let h = body.len() as u64 | (ulen as u64) << 17 | sc << 34;
        (body, h, 5)
    } else {
        let h = payload.len() as u64 | sc << 17;
        (payload.to_vec(), h, 3)
    };
    out.extend_from_slice(&header.to_le_bytes()[..hlen]);
    out.extend_from_slice(&spec_crc24(header, hlen).to_le_bytes()[..3]);
    out.extend_from_slice(&body);
    out.extend_from_slice(&spec_crc32(&body).to_le_bytes());
}

fn blob_request(rng: &mut Rng, stream: i16) -> RequestFrame {
    if rng.chance(10) {
        return RequestFrame::new(5, stream, Request::Options);
    }
    let size = rng.size();
    let compressible = rng.chance(2);
    let params = QueryParameters {
        values: QueryValues::Positional(vec![Value::Bytes(Bytes::from(
            rng.bytes(size, compressible),
        ))]),
        ..QueryParameters::default()
    };
    let query = "INSERT INTO t (k, v) VALUES (0, ?)".to_string();
    RequestFrame::new(5, stream, Request::Query { query, params })
}

fn client_case(seed: u64) {
    let mut rng = Rng::new(seed);
    let lz4 = !seed.is_multiple_of(2);
    let frames: Vec<_> = (0..1 + rng.below(30))
        .map(|i| blob_request(&mut rng, i as i16))
        .collect();
    let mut wire = Vec::new();
    let mut open = Vec::new();
    for f in &frames {
        let mut env = BytesMut::new();
        ClientConnectionCodec::new(MAX_FRAME)
            .encode(f, &mut env)
            .unwrap();
        // Close the open segment early at random, or when this envelope does not fit.
        if !open.is_empty() && (rng.chance(3) || open.len() + env.len() > MAX_SEGMENT_PAYLOAD) {
            spec_segment(&mut rng, &mut wire, &open, true, lz4);
            open.clear();
        }
        if env.len() > MAX_SEGMENT_PAYLOAD || rng.chance(10) {
            if !open.is_empty() {
                spec_segment(&mut rng, &mut wire, &open, true, lz4);
                open.clear();
            }
            let mut rest = &env[..];
            while !rest.is_empty() {
                let n = (1 + rng.below(MAX_SEGMENT_PAYLOAD)).min(rest.len());
                spec_segment(&mut rng, &mut wire, &rest[..n], false, lz4);
                rest = &rest[n..];
            }
        } else {
            open.extend_from_slice(&env);
        }
    }
    if !open.is_empty() {
        spec_segment(&mut rng, &mut wire, &open, true, lz4);
    }
    let mut server = ServerConnectionCodec::new(MAX_FRAME);
    server.set_compression(lz4.then_some(Compression::Lz4));
    server.enable_segments();
    let mut buf = BytesMut::new();
    let mut got = Vec::new();
    feed_chunked(&mut rng, &wire, |c| {
        buf.extend_from_slice(c);
        while let Some(f) = server.decode(&mut buf).unwrap() {
            got.push(f);
        }
    });
    assert!(buf.is_empty(), "seed {seed}: trailing bytes");
    assert!(got == frames, "seed {seed}: requests differ");
}

#[test]
fn spec_segments_from_a_client_decode_on_the_server() {
    for seed in 0..CASES {
        client_case(seed);
    }
}
