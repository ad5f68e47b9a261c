//! Bulk storage work of streams and repair (reading and encoding pages, checking a received
//! SSTable, hashing ranges for Merkle trees) on threads at the compaction threads' lower CPU
//! priority, so that on a loaded node the foreground requests win the cores, as they do over
//! compactions.

use helenus_storage as st;

/// Runs `job` on a thread of its own at the lower priority and waits for its answer. A thread
/// per job: jobs are pages of a megabyte or more, or a range's hashing, a few dozen a second at
/// most, and a pooled thread would keep the lowered priority (raising it back needs a
/// privilege) for whatever it runs next.
pub(super) async fn in_background<T: Send + 'static>(
    job: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    spawn_background(move || {
        let _ = tx.send(job());
    })
    .map_err(|e| format!("no thread for stream work: {e}"))?;
    rx.await
        .map_err(|_| "stream work ended without an answer".to_string())?
}

/// Runs `job` on a thread of its own at the lower priority, without waiting for it.
pub(super) fn spawn_background(job: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("stream-io".into())
        .spawn(move || {
            st::lower_thread_priority();
            job();
        })
        .map(|_| ())
}
