//! Starting the disk write of data just written, without waiting for it (RocksDB's
//! `bytes_per_sync`, Cassandra's `trickle_fsync`). A large file fsynced in one go holds the ext4
//! journal's commit until all of it is on disk, and meanwhile every writer that needs the journal
//! waits, among them the commitlog's page faults on the request path: tens to hundreds of
//! milliseconds of foreground latency per big fsync. Handing the data to writeback as it is
//! written leaves the closing fsync little to do.

use std::fs::File;

/// Asks the kernel to start writing `len` bytes of `file` from `offset` back to disk. Advisory:
/// a failure leaves the work to the closing fsync, which reports errors.
pub(crate) fn start(file: &File, offset: u64, len: u64) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let (Ok(offset), Ok(len)) = (
            libc::off64_t::try_from(offset),
            libc::off64_t::try_from(len),
        ) else {
            return;
        };
        // SAFETY: the descriptor is `file`'s, open for the duration of the call; the call takes
        // no pointers.
        unsafe {
            libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, offset, len);
}
