//! Writes responses through the server codec's v5 segment writer and reads them back with the
//! client codec, in read sizes the input picks. The input is a recipe, not a byte stream:
//! byte 0 picks lz4 or not; then each 4-byte group adds one response whose cell size (up to
//! ~300 KiB, so envelopes span segments), compressibility and batch boundary it encodes; the
//! last byte sets the read size. Every response must come back equal, in order.
#![no_main]

use bytes::{Bytes, BytesMut};
use helenus_protocol::{
    ClientConnectionCodec, Compression, Response, ResponseFrame, ResultBody, Rows, RowsMetadata,
    ServerConnectionCodec,
};
use libfuzzer_sys::fuzz_target;

const MAX_FRAME: usize = 1 << 20;

fn cell(size: usize, compressible: bool, salt: u8) -> Vec<u8> {
    if compressible {
        (0..size).map(|i| (i % 7) as u8 ^ salt).collect()
    } else {
        let mut x = 0x9E37_79B9u32 ^ u32::from(salt);
        (0..size)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect()
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, recipe)) = data.split_first() else {
        return;
    };
    let lz4 = mode & 1 != 0;
    let mut server = ServerConnectionCodec::new(MAX_FRAME);
    let mut client = ClientConnectionCodec::new(MAX_FRAME);
    let compression = lz4.then_some(Compression::Lz4);
    server.set_compression(compression);
    client.set_compression(compression);
    server.enable_segments();
    client.enable_segments();

    let mut frames = Vec::new();
    let mut wire = BytesMut::new();
    let mut batch = server.batch(&mut wire);
    for (i, g) in recipe.chunks_exact(4).take(16).enumerate() {
        let size = usize::from(u16::from_le_bytes([g[0], g[1]])) * usize::from(1 + (g[2] & 3));
        let rows = Rows {
            metadata: RowsMetadata::without_metadata(1),
            rows: vec![vec![Some(Bytes::from(cell(size, g[2] & 4 != 0, g[3])))]],
        };
        let f = ResponseFrame::new(5, i as i16, Response::Result(ResultBody::Rows(rows)));
        if batch.encode(&f).is_err() {
            return;
        }
        frames.push(f);
        if g[2] & 8 != 0 {
            drop(batch);
            batch = server.batch(&mut wire);
        }
    }
    drop(batch);

    let read_size = 1 + usize::from(*recipe.last().unwrap_or(&0)) * 97;
    let mut buf = BytesMut::new();
    let mut got = Vec::new();
    for piece in wire.chunks(read_size) {
        buf.extend_from_slice(piece);
        while let Some(f) = client.decode(&mut buf).expect("own segments must decode") {
            got.push(f);
        }
    }
    assert!(buf.is_empty(), "bytes left over");
    assert!(got == frames, "responses differ");
});
