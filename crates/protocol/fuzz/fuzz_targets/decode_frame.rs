//! Feeds arbitrary bytes to the connection codecs in every mode. The first byte picks the mode
//! (side, compression, segments, and how the input is split into reads); the rest is the stream.
#![no_main]

use bytes::BytesMut;
use helenus_protocol::{ClientConnectionCodec, Compression, ServerConnectionCodec};
use libfuzzer_sys::fuzz_target;

const MAX_FRAME: usize = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, input)) = data.split_first() else { return };
    let compression = match mode & 0x03 {
        1 => Some(Compression::Lz4),
        2 => Some(Compression::Snappy),
        _ => None,
    };
    let segments = mode & 0x04 != 0;
    let client_side = mode & 0x08 != 0;
    // Split the input into reads of this size, to exercise partial buffering.
    let chunk = if mode & 0x10 != 0 { 1 + (mode as usize >> 5) } else { input.len().max(1) };

    let mut server = ServerConnectionCodec::new(MAX_FRAME);
    let mut client = ClientConnectionCodec::new(MAX_FRAME);
    server.set_compression(compression);
    client.set_compression(compression);
    if segments {
        server.enable_segments();
        client.enable_segments();
    }
    let mut buf = BytesMut::new();
    for piece in input.chunks(chunk) {
        buf.extend_from_slice(piece);
        loop {
            let r = if client_side {
                client.decode(&mut buf).map(|f| f.is_some())
            } else {
                server.decode(&mut buf).map(|f| f.is_some())
            };
            match r {
                Ok(true) => continue,
                Ok(false) => break,
                Err(e) if e.can_continue() => {
                    if let Some(f) = e.to_error_frame() {
                        let mut out = BytesMut::new();
                        let _ = server.encode(&f, &mut out);
                    }
                }
                Err(e) => {
                    let mut out = BytesMut::new();
                    let _ = helenus_protocol::encode_fatal_error(&e, &mut out);
                    return;
                }
            }
        }
    }
});
