//! Randomised corruption: valid frames in every version and mode are mutated and truncated
//! 20,000 times; decoding must return `Ok`/`Err` (never panic), and no single allocation may
//! exceed a small multiple of the input (lz4's inherent 255x ratio is the largest factor).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failing test may panic

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use bytes::BytesMut;
use common::*;
use helenus_protocol::*;

struct Tracking;

thread_local! {
    static TRACK: Cell<bool> = const { Cell::new(false) };
    static MAX_ALLOC: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    let _ = TRACK.try_with(|t| {
        if t.get() {
            let _ = MAX_ALLOC.try_with(|m| m.set(m.get().max(size)));
        }
    });
}

unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Tracking = Tracking;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, input: &[u8]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..=rng.below(4) {
        match rng.below(6) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            1 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] = rng.next() as u8;
            }
            2 => v.truncate(rng.below(v.len() + 1)),
            3 => {
                // Plant a hostile length (0x7fffffff / 0xffff / -1 / -2) somewhere.
                let pats: [&[u8]; 4] = [
                    &[0x7f, 0xff, 0xff, 0xff],
                    &[0xff, 0xff],
                    &[0xff; 4],
                    &[0xff, 0xff, 0xff, 0xfe],
                ];
                let p = pats[rng.below(4)];
                let i = rng.below(v.len() + 1);
                for (k, b) in p.iter().enumerate() {
                    if let Some(x) = v.get_mut(i + k) {
                        *x = *b;
                    }
                }
            }
            4 => {
                let i = rng.below(v.len() + 1);
                v.insert(i, rng.next() as u8);
            }
            _ if v.len() > 1 => {
                let i = rng.below(v.len());
                v.remove(i);
            }
            _ => {}
        }
    }
    v
}

const MAX_FRAME: usize = 256 * 1024;

fn decode_all(mode: Mode, responses: bool, input: &[u8]) {
    let (mut server, mut client) = codecs(mode, MAX_FRAME);
    let mut buf = BytesMut::from(input);
    for _ in 0..1000 {
        let r = if responses {
            client.decode(&mut buf).map(|o| o.is_some())
        } else {
            server.decode(&mut buf).map(|o| o.is_some())
        };
        match r {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) if e.can_continue() => {
                let mut out = BytesMut::new();
                if let Some(f) = e.to_error_frame() {
                    let _ = server.encode(&f, &mut out);
                }
            }
            Err(e) => {
                let mut out = BytesMut::new();
                let _ = encode_fatal_error(&e, &mut out);
                return;
            }
        }
    }
}

#[test]
fn mutated_and_truncated_frames_never_panic_or_over_allocate() {
    let mut corpus: Vec<(Mode, bool, Vec<u8>)> = Vec::new();
    for version in 3..=5u8 {
        for mode in modes(version) {
            let (mut s, mut c) = codecs(mode, MAX_FRAME);
            for r in requests(version) {
                let mut out = BytesMut::new();
                c.encode(&RequestFrame::new(version, 1, r), &mut out)
                    .unwrap();
                corpus.push((mode, false, out.to_vec()));
            }
            for r in responses(version) {
                let mut out = BytesMut::new();
                s.encode(&ResponseFrame::new(version, 1, r), &mut out)
                    .unwrap();
                corpus.push((mode, true, out.to_vec()));
            }
        }
    }
    let mut rng = Rng(0x2545F4914F6CDD1D);
    let mut worst_ratio = 0f64;
    for _ in 0..20_000 {
        let (mode, responses, frame) = &corpus[rng.below(corpus.len())];
        let input = mutate(&mut rng, frame);
        MAX_ALLOC.with(|m| m.set(0));
        TRACK.with(|t| t.set(true));
        decode_all(*mode, *responses, &input);
        TRACK.with(|t| t.set(false));
        let max = MAX_ALLOC.with(|m| m.get());
        // Fixed slack covers the codec's own small buffers; lz4 can legitimately expand 255x.
        let limit = 256 * input.len() + 8 * 1024;
        assert!(
            max <= limit,
            "allocated {max} bytes for a {}-byte input ({mode:?})",
            input.len()
        );
        worst_ratio =
            worst_ratio.max(max.saturating_sub(8 * 1024) as f64 / (input.len().max(1)) as f64);
    }
    eprintln!("worst (single allocation - 8 KiB) / input length: {worst_ratio:.1}");
}

#[test]
fn hostile_lengths_in_headers_do_not_reserve_memory() {
    for version in 3..=5u8 {
        let mut buf = BytesMut::from(&[version, 0, 0, 1, 0x07, 0x00, 0x03, 0xff, 0xff][..]);
        TRACK.with(|t| t.set(true));
        MAX_ALLOC.with(|m| m.set(0));
        let r = ServerConnectionCodec::new(MAX_FRAME).decode(&mut buf);
        TRACK.with(|t| t.set(false));
        assert!(matches!(r, Ok(None)));
        assert!(MAX_ALLOC.with(|m| m.get()) < 4096);
    }
}

/// Writes one valid frame per (version, mode, message) into $FUZZ_SEED_DIR as a fuzz seed
/// (first byte = the fuzz target's mode byte). Used by fuzz/run.sh; ignored otherwise.
#[test]
#[ignore]
fn write_fuzz_seeds() {
    let Ok(dir) = std::env::var("FUZZ_SEED_DIR") else {
        return;
    };
    std::fs::create_dir_all(&dir).unwrap();
    let mut n = 0;
    for version in 3..=5u8 {
        for mode in modes(version) {
            let (mut s, mut c) = codecs(mode, MAX_FRAME);
            let mode_byte = match mode.compression {
                Some(Compression::Lz4) => 1u8,
                Some(Compression::Snappy) => 2,
                None => 0,
            } | if mode.segments { 4 } else { 0 };
            for r in requests(version) {
                let mut out = vec![mode_byte];
                let mut b = BytesMut::new();
                c.encode(&RequestFrame::new(version, 1, r), &mut b).unwrap();
                out.extend_from_slice(&b);
                std::fs::write(format!("{dir}/seed-{n:04}"), out).unwrap();
                n += 1;
            }
            for r in responses(version) {
                let mut out = vec![mode_byte | 8];
                let mut b = BytesMut::new();
                s.encode(&ResponseFrame::new(version, 1, r), &mut b)
                    .unwrap();
                out.extend_from_slice(&b);
                std::fs::write(format!("{dir}/seed-{n:04}"), out).unwrap();
                n += 1;
            }
        }
    }
}
