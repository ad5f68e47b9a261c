//! How the node's memory comes from the kernel: small pages only.
//!
//! mimalloc asks for transparent huge pages (`madvise(MADV_HUGEPAGE)`) on its arenas, and gives
//! free memory back (`MADV_DONTNEED`) a second after it is freed. Under writes a node frees a
//! flushed memtable's hundreds of MiB and allocates the next one's, so request threads kept
//! faulting in fresh 2 MiB pages, each zeroed (and, with the kernel's default `defrag=madvise`,
//! compacted for) inside the fault, while holding the memtable's or the commitlog's lock. With
//! latte at 20k writes/s on 2 cores: P99 5.2-6.3 ms and P99.9 10.2-11.2 ms with huge pages,
//! 0.8 ms and ~3-5 ms without, and a smaller RSS (bench/README.md, "Write tail latency").
//! Neither moving the purges to a thread of their own nor delaying them helped: the cost is in
//! the faults. Cassandra's JVM does not use huge pages unless told to either.

/// Turns transparent huge pages off for this process (every mapping, present and future, as the
/// kernel's `PR_SET_THP_DISABLE` does). Best effort: a kernel that refuses leaves them on.
pub fn use_small_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with integer arguments only; it sets a flag of this process.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
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
