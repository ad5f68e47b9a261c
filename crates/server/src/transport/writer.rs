//! The writing half of a connection: gathers the responses that complete together and writes
//! them with one syscall.

use super::{AfterWrite, Outgoing, Writer, WRITE_BATCH_BYTES};
use crate::limits::{RequestCharge, ResponseCharge};
use bytes::BytesMut;
use helenus_protocol as proto;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

/// How long the writer goes on gathering responses that keep completing (see write_loop).
const GATHER_WINDOW: Duration = Duration::from_micros(50);

/// Encodes every queued response into one buffer and writes it with one syscall where possible.
pub(super) async fn write_loop(
    mut writer: Writer,
    mut rx: mpsc::Receiver<Outgoing>,
    max_frame: usize,
) {
    let mut codec = proto::ServerConnectionCodec::new(max_frame);
    let mut out = BytesMut::with_capacity(64 * 1024);
    let mut written_charges = Vec::new();
    while let Some(first) = rx.recv().await {
        // Responses completing alongside this one join its batch (in v5 they share a segment:
        // one segment per response put a boundary every ~70 bytes, where a TCP read can split
        // a header the Python driver cannot survive). Keep yielding while the queue grows, for
        // at most GATHER_WINDOW: waiting up to 32 turns instead held a burst's answers until it
        // had all completed, and a pipelining client and the server took turns, each idle while
        // the other worked (latte, 128 in flight on one connection: 0.7 of 2 cores idle).
        let gather_until = tokio::time::Instant::now() + GATHER_WINDOW;
        let mut queued = rx.len();
        loop {
            tokio::task::yield_now().await;
            let now = rx.len();
            if now == queued || tokio::time::Instant::now() >= gather_until {
                break;
            }
            queued = now;
        }
        let after = encode_queued(&mut codec, first, &mut rx, &mut out, &mut written_charges);
        // `out` is whole here: the batch closed its last segment when encode_queued returned.
        if !out.is_empty() {
            if writer.write_all(&out).await.is_err() {
                return;
            }
            out.clear();
        }
        // Written: these responses' bytes (and their requests') no longer count.
        written_charges.clear();
        // A batch of one huge response must not leave a huge buffer behind.
        if out.capacity() > 4 * WRITE_BATCH_BYTES {
            out = BytesMut::with_capacity(64 * 1024);
        }
        match after {
            AfterWrite::Nothing => {}
            // Everything before this point went out in the old framing; what follows uses
            // the negotiated one, so the switch sits exactly at the READY boundary.
            AfterWrite::Negotiated {
                compression,
                segments,
            } => {
                codec.set_compression(compression);
                if segments {
                    codec.enable_segments();
                }
            }
            AfterWrite::Close => {
                let _ = writer.shutdown().await;
                return;
            }
        }
    }
}

/// Encodes `first` and whatever else is queued into `out` (one batch: in v5 the responses
/// share segments), stopping at [`WRITE_BATCH_BYTES`] or at a response after which the
/// framing changes or the connection closes; returns what must happen after the write.
fn encode_queued(
    codec: &mut proto::ServerConnectionCodec,
    first: Outgoing,
    rx: &mut mpsc::Receiver<Outgoing>,
    out: &mut BytesMut,
    charges: &mut Vec<(RequestCharge, ResponseCharge)>,
) -> AfterWrite {
    let mut batch = codec.batch(out);
    let mut next = Some(first);
    while let Some(mut item) = next.take() {
        charges.extend(item.charges.take());
        let encoded = match &item.decode_error {
            Some(e) => batch.encode_decode_error(e),
            None => batch.encode(&item.frame),
        };
        if let Err(e) = encoded {
            tracing::warn!("cannot encode a response: {e}");
            let body = proto::ErrorBody::new(
                proto::ErrorCode::SERVER,
                format!("cannot encode the response: {e}"),
            );
            let fallback = proto::ResponseFrame::new(
                item.frame.version,
                item.frame.stream,
                proto::Response::Error(body),
            );
            let _ = batch.encode(&fallback);
        }
        if !matches!(item.after, AfterWrite::Nothing) {
            return item.after;
        }
        if batch.len_bytes() > WRITE_BATCH_BYTES {
            break;
        }
        next = rx.try_recv().ok();
    }
    AfterWrite::Nothing
}
