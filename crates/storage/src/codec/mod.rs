//! Binary encodings: byte primitives (primitives.rs), CRC32C (crc.rs), data format 1 of
//! partitions, which is also the commitlog's (format1.rs), and the compact data format 2 of new
//! SSTables (compact.rs).

pub(crate) mod compact;
mod crc;
mod format1;
mod primitives;

pub use crc::{crc32c, crc32c_update};
pub use format1::{
    decode_keyed_rows, decode_partition, decode_partition_header, decode_rows, encode_keyed_row,
    encode_partition, encode_partition_header, encode_partition_indexed, encoded_len_hint,
};
pub use primitives::{Reader, Writer};
