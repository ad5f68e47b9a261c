//! A commitlog segment file mapped into memory, as Cassandra's `MemoryMappedSegment`: an append
//! is a copy into the page cache, with no system call, and it survives `kill -9` of the process
//! as a `write` would (the pages belong to the kernel); `fdatasync` of the file makes it durable.
//! Two `write`s per mutation were a tenth of the server's CPU on point writes (perf).
//!
//! The file is allocated to its full size when created (`posix_fallocate`), so a full disk fails
//! the segment's creation with an error instead of a store into the mapping with SIGBUS; the
//! unwritten tail reads as zeros, which replay takes as the end of the log.

use crate::error::StorageError;
use std::fs::File;
use std::path::Path;

/// A writable shared mapping of a whole segment file.
pub(super) struct MappedSegment {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by this value; the commitlog writes it only under its
// writer lock and never hands out references into it.
unsafe impl Send for MappedSegment {}
// SAFETY: as for Send; `&MappedSegment` gives no access to the memory.
unsafe impl Sync for MappedSegment {}

impl MappedSegment {
    /// Allocates `file` to `len` bytes and maps it.
    pub(super) fn new(file: &File, path: &Path, len: usize) -> Result<MappedSegment, StorageError> {
        use std::os::fd::AsRawFd;
        let fd = file.as_raw_fd();
        let io_err = |e: std::io::Error| StorageError::io(path, e);
        // SAFETY: `fd` is an open file for the duration of the call; no pointers are passed.
        let rc = unsafe { libc::posix_fallocate(fd, 0, len as libc::off_t) };
        if rc != 0 {
            return Err(io_err(std::io::Error::from_raw_os_error(rc)));
        }
        // SAFETY: a fresh shared mapping of `len` bytes of an open file (allocated above); the
        // kernel picks the address. The mapping outlives the descriptor's use here.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io_err(std::io::Error::last_os_error()));
        }
        Ok(MappedSegment {
            ptr: ptr.cast(),
            len,
        })
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Copies `parts`, one after another, to `offset`; false (nothing written) when they do
    /// not fit.
    pub(super) fn write_at(&mut self, offset: usize, parts: &[&[u8]]) -> bool {
        let total: usize = parts.iter().map(|p| p.len()).sum();
        if offset.checked_add(total).is_none_or(|end| end > self.len) {
            return false;
        }
        let mut at = offset;
        for part in parts {
            // SAFETY: `at + part.len() <= self.len` (checked above for the sum), the mapping is
            // valid and writable for `self.len` bytes, and `part` is not inside it (callers
            // pass their own buffers).
            unsafe {
                std::ptr::copy_nonoverlapping(part.as_ptr(), self.ptr.add(at), part.len());
            }
            at += part.len();
        }
        true
    }
}

impl Drop for MappedSegment {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly the mapping made in `new`, unmapped only here.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_land_in_the_file_and_the_tail_reads_as_zeros() {
        let dir = crate::test_support::tempdir("mapped-segment");
        let path = dir.join("seg");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .read(true)
            .write(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        let mut seg = MappedSegment::new(&file, &path, 8192).unwrap();
        assert!(seg.write_at(0, &[b"abc", b"def"]));
        assert!(seg.write_at(6, &[b"g"]));
        assert!(!seg.write_at(8190, &[b"xyz"]), "past the end: refused");
        assert!(seg.write_at(8189, &[b"xyz"]));
        drop(seg);
        let data = std::fs::read(&path).unwrap();
        assert_eq!(data.len(), 8192);
        assert_eq!(&data[..7], b"abcdefg");
        assert!(data[7..8189].iter().all(|b| *b == 0));
        assert_eq!(&data[8189..], b"xyz");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
