//! Where a columnar segment's bytes go: `cargo run --release -p helenus-storage --example
//! segment_sizes -- FILE-Columns.db...` prints each stream's bytes, largest first.

fn main() {
    for path in std::env::args().skip(1) {
        let seg = match helenus_storage::columnar::SegmentReader::open(path.as_ref(), &[]) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("{path}: {e}");
                continue;
            }
        };
        let mut sizes = seg.stream_sizes();
        let total: u64 = sizes.iter().map(|(_, b)| b).sum();
        sizes.sort_by_key(|(_, b)| std::cmp::Reverse(*b));
        println!(
            "{path}: {} entries, {} row groups, {total} bytes in chunks",
            seg.entries(),
            seg.row_groups()
        );
        for (name, bytes) in sizes.iter().filter(|(_, b)| *b > 0) {
            println!(
                "{bytes:>12} {:>5.1}%  {name}",
                *bytes as f64 * 100.0 / total as f64
            );
        }
    }
}
