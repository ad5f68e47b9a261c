//! How the node's memory comes from the kernel and goes back to it: small pages only, and free
//! memory given back once unused for 10 s (`start_purger`).
//!
//! mimalloc asks for transparent huge pages (`madvise(MADV_HUGEPAGE)`) on its arenas, and gives
//! free memory back (`MADV_DONTNEED`) some time after it is freed. Under writes a node frees a
//! flushed memtable's hundreds of MiB and allocates the next one's, so request threads kept
//! faulting in fresh 2 MiB pages, each zeroed (and, with the kernel's default `defrag=madvise`,
//! compacted for) inside the fault, while holding the memtable's or the commitlog's lock. With
//! latte at 20k writes/s on 2 cores: P99 5.2-6.3 ms and P99.9 10.2-11.2 ms with huge pages,
//! 0.8 ms and ~3-5 ms without, and a smaller RSS (bench/README.md, "Write tail latency").
//! With huge pages, neither moving the purges to a thread of their own nor delaying them helped
//! those tails: the cost was in the faults. (With small pages, the purger below gives memory
//! back without costing writes.) Cassandra's JVM does not use huge pages unless told to either.

/// Turns transparent huge pages off for this process (every mapping, present and future, as the
/// kernel's `PR_SET_THP_DISABLE` does). Best effort: a kernel that refuses leaves them on.
pub fn use_small_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with integer arguments only; it sets a flag of this process.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

extern "C" {
    /// mimalloc's collection of the calling thread's heap, which also carries out the purges
    /// (giving free memory back to the kernel) that are due in every arena of the process.
    fn mi_collect(force: bool);
    /// mimalloc's option setter (the node links mimalloc statically as its global allocator).
    fn mi_option_set(option: i32, value: std::ffi::c_long);
}

/// mimalloc's `mi_option_purge_delay` (its index in the option list of both v2 and v3).
const MI_OPTION_PURGE_DELAY: i32 = 15;
/// Free memory is given back once unused this long (mimalloc's default: 1 s).
const PURGE_DELAY_MS: std::ffi::c_long = 10_000;
/// How often the purger looks for free memory whose purge is due.
const PURGE_CHECK_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// Gives free memory back to the kernel once it has been unused for 10 s, from a thread of its
/// own. mimalloc schedules a purge when memory is freed and carries it out at a later allocator
/// call that finds it due; a node whose writes stopped makes few such calls, so a flushed
/// memtable's hundreds of MiB stayed resident for good (167 MiB after 1M writes and a flush,
/// 55-67 MiB with this) and the read caches grew on top of them (RSS after 1M uniform reads
/// 480 -> 429 MiB, bench/results/ab-20261202-021933-75f97d6.md). The delay is 10 s rather than
/// 1 s or none: either cost 9% more CPU per closed-loop write (the next memtable faulted the
/// pages just purged in again); under writes a flushed memtable's memory is reused within a
/// second or two, so at 10 s it is purged only once writes stop.
pub fn start_purger() {
    // SAFETY: sets one integer option; mimalloc reads its options atomically and allows
    // setting them at any time.
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
    let spawned = std::thread::Builder::new()
        .name("memory-purger".to_string())
        .spawn(|| loop {
            std::thread::sleep(PURGE_CHECK_INTERVAL);
            // SAFETY: a plain call into the allocator, valid from any thread at any time.
            unsafe { mi_collect(false) }
        });
    if let Err(e) = spawned {
        eprintln!("WARN  no memory purger thread ({e}): free memory returns to the kernel later");
    }
}

/// Whether transparent huge pages are off for this process.
#[cfg(all(test, target_os = "linux"))]
fn small_pages_only() -> bool {
    // SAFETY: prctl with integer arguments only; it reads a flag of this process.
    unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) == 1 }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn huge_pages_are_off_after_start_up() {
        use_small_pages();
        assert!(small_pages_only());
    }
}
