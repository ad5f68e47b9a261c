//! CRC32C, the checksum of SSTable chunks and commitlog entries.

/// CRC32C (Castagnoli). The `crc32c` crate uses the CPU's CRC instruction (SSE 4.2 / ARMv8):
/// every chunk read and written, and every commitlog entry, is checksummed, and the table-driven
/// loop this replaced ran at ~0.5 GB/s, a sixth of compaction's CPU time.
pub fn crc32c(data: &[u8]) -> u32 {
    ::crc32c::crc32c(data)
}

/// Extends `crc`, the CRC32C of earlier bytes (0 for none), over `data`: a file can be checked
/// as it streams by.
pub fn crc32c_update(crc: u32, data: &[u8]) -> u32 {
    ::crc32c::crc32c_append(crc, data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_matches_known_vector() {
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
    }
}
