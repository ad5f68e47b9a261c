//! Tests of the partition summary (sstable/index.rs): lookups at and between samples, page
//! boundaries, tiny and empty indexes, both Index.db encodings, entries larger than a read
//! window, and corrupt files; `decode_index` (the whole file at once) is the reference.

use super::*;
use crate::codec::crc32c;
use crate::sstable::RowBlock;
use std::sync::Arc;

fn formats() -> [DataFormat; 2] {
    [DataFormat::Fixed, DataFormat::Compact { base_us: 0 }]
}

/// `n` entries in (token, key) order: runs of three keys share a token, lengths vary, and
/// every 7th entry has a row index (one of them far larger than `INDEX_READ_BYTES`).
fn entries(n: usize) -> Vec<IndexEntry> {
    let mut out = Vec::with_capacity(n);
    let mut position = 0u64;
    for i in 0..n {
        let token = (i / 3) as i64 * 10 - 500;
        // Keys of one token sort by their index; the "b" suffix leaves room for absent keys.
        let key = Bytes::from(format!("k{:05}b", i).into_bytes());
        let length = 50 + (i as u32 * 37) % 300;
        let n_blocks = match i {
            _ if i == 10 => 6000,
            _ if i % 7 == 0 => 3,
            _ => 0,
        };
        let blocks = (0..n_blocks)
            .map(|b| RowBlock {
                first: vec![Bytes::from(format!("clustering-{b:08}").into_bytes())],
                offset: b * 10,
                length: 10,
                rows: 1,
            })
            .collect();
        out.push(IndexEntry {
            token,
            key,
            position,
            length,
            header_len: 7,
            blocks,
        });
        position += u64::from(length);
    }
    out
}

fn write_index(dir: &Path, name: &str, format: DataFormat, index: &[IndexEntry]) -> PathBuf {
    let mut ix = MAGIC.to_vec();
    format.encode_index(&mut ix, index);
    let crc = crc32c(&ix);
    ix.extend_from_slice(&crc.to_be_bytes());
    let path = dir.join(name);
    std::fs::write(&path, ix).unwrap();
    path
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("helenus-ix-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn same(a: &IndexEntry, b: &IndexEntry) {
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
}

/// Every lookup of a summary over `n` entries with pages of `interval` agrees with a full decode.
fn check(dir: &Path, format: DataFormat, n: usize, interval: usize) {
    let written = entries(n);
    let path = write_index(dir, &format!("{n}-{interval}"), format, &written);
    let body = std::fs::read(&path).unwrap();
    let full = format.decode_index(&body[4..body.len() - 4]).unwrap();
    assert_eq!(full.len(), n);
    let ix = PartitionIndex::open_with_interval(&path, format, interval, None).unwrap();
    assert_eq!(ix.samples.len(), n.div_ceil(interval));
    let starts = [
        0,
        1,
        interval - 1,
        interval,
        interval + 1,
        n.saturating_sub(1),
        n,
    ];
    check_lookups(&ix, &full, &starts);
}

#[test]
fn summary_lookups_agree_with_a_full_decode() {
    let dir = temp_dir("lookups");
    for format in formats() {
        for (n, interval) in [
            (0, 4),
            (1, 4),
            (1, 128),
            (3, 4),
            (4, 4),
            (5, 4),
            (8, 4),
            (9, 4),
            (40, 1),
            (127, 128),
            (128, 128),
            (129, 128),
            (1000, 128),
        ] {
            check(&dir, format, n, interval);
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn empty_index_finds_nothing() {
    let dir = temp_dir("empty");
    for format in formats() {
        let path = write_index(&dir, "empty", format, &[]);
        let ix = PartitionIndex::open(&path, format, None).unwrap();
        assert_eq!(ix.len(), 0);
        assert!(ix.search(0, b"k").unwrap().is_none());
        assert!(ix.entry(0).is_err());
        assert_eq!(ix.iter_from(0).count(), 0);
        let b = Bound::Included((0, Bytes::from_static(b"k")));
        assert_eq!(ix.lower_bound(&b).unwrap(), 0);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn summary_holds_one_sample_per_interval() {
    let dir = temp_dir("size");
    let format = DataFormat::Compact { base_us: 0 };
    let path = write_index(&dir, "big", format, &entries(2000));
    let ix = PartitionIndex::open(&path, format, None).unwrap();
    assert_eq!(ix.samples.len(), 2000usize.div_ceil(MIN_INDEX_INTERVAL));
    assert!(ix.summary_bytes() < 2000 * 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn corrupt_index_files_are_errors() {
    let dir = temp_dir("corrupt");
    for format in formats() {
        let path = write_index(&dir, "good", format, &entries(300));
        let good = std::fs::read(&path).unwrap();
        let mut cases: Vec<Vec<u8>> = vec![
            Vec::new(),
            good[..6].to_vec(),
            good[..good.len() / 2].to_vec(),
            good[..good.len() - 1].to_vec(),
        ];
        for at in [0, 4, 5, 9, good.len() / 3, good.len() - 2] {
            let mut bad = good.clone();
            bad[at] ^= 0x5a;
            cases.push(bad);
        }
        // A huge entry count with a valid checksum.
        let mut huge = good[..4].to_vec();
        huge.extend_from_slice(&[0xff, 0xff, 0xff, 0x7f]);
        let crc = crc32c(&huge);
        huge.extend_from_slice(&crc.to_be_bytes());
        cases.push(huge);
        for (i, bytes) in cases.iter().enumerate() {
            let p = dir.join(format!("bad-{i}"));
            std::fs::write(&p, bytes).unwrap();
            assert!(
                PartitionIndex::open(&p, format, None).is_err(),
                "case {i} of {format:?} opened"
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_page_changed_after_open_is_an_error_not_a_panic() {
    let dir = temp_dir("changed");
    let format = DataFormat::Compact { base_us: 0 };
    let path = write_index(&dir, "ix", format, &entries(500));
    let ix = PartitionIndex::open(&path, format, None).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    for b in bytes.iter_mut().skip(4) {
        *b = 0xff;
    }
    std::fs::write(&path, &bytes).unwrap();
    for i in [0, 1, 200, 499] {
        let _ = ix.entry(i);
    }
    let _ = ix.search(-500, b"k00000b");
    assert!(ix.iter_from(0).any(|e| e.is_err()));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// 1000 entries of bigint keys `i * step` in (token, key) order with positions from their
/// lengths (1 to `max_len` entries): every fifth has the made-up token `odd_token(i)`, the others
/// their key's Murmur3 token.
fn bigint_entries(step: u64, odd_token: impl Fn(u64) -> i64, max_len: u32) -> Vec<IndexEntry> {
    let mut written: Vec<IndexEntry> = (0..1000u64)
        .map(|i| {
            let key = Bytes::from((i * step).to_be_bytes().to_vec());
            let token = match i % 5 {
                0 => odd_token(i),
                _ => helenus_types::murmur3_token(&key),
            };
            IndexEntry {
                token,
                key,
                position: 0,
                length: 1 + (i as u32 % max_len),
                header_len: 0,
                blocks: Vec::new(),
            }
        })
        .collect();
    written.sort_by(|a, b| (a.token, &a.key).cmp(&(b.token, &b.key)));
    let mut position = 0;
    for e in &mut written {
        e.position = position;
        position += u64::from(e.length);
    }
    written
}

/// Every entry of `written` found by position and key, bounds at and after each, absent keys
/// just below and above each (within and across pages) found nowhere and bounded where they
/// would sort, and walks from each of `starts` giving the rest in order.
fn check_lookups(ix: &PartitionIndex, written: &[IndexEntry], starts: &[usize]) {
    let n = written.len();
    assert_eq!(ix.len(), n);
    for (i, e) in written.iter().enumerate() {
        same(&ix.entry(i).unwrap(), e);
        let (at, found) = ix.search(e.token, &e.key).unwrap().unwrap();
        assert_eq!(at, i);
        same(&found, e);
        let key = Bound::Included((e.token, e.key.clone()));
        assert_eq!(ix.lower_bound(&key).unwrap(), i);
        let key = Bound::Excluded((e.token, e.key.clone()));
        assert_eq!(ix.lower_bound(&key).unwrap(), i + 1);
        for (token, key) in [
            (e.token, e.key.slice(..e.key.len() - 1)),
            (e.token, Bytes::from([e.key.as_ref(), b"x"].concat())),
            (e.token - 1, Bytes::from_static(b"zzz")),
            (e.token + 1, Bytes::new()),
            (e.token + 1, e.key.clone()),
        ] {
            assert!(ix.search(token, &key).unwrap().is_none());
            let expect = written.partition_point(|f| (f.token, &f.key) < (token, &key));
            let b = Bound::Included((token, key.clone()));
            assert_eq!(ix.lower_bound(&b).unwrap(), expect);
        }
    }
    assert!(ix.entry(n).is_err());
    assert_eq!(ix.lower_bound(&Bound::Unbounded).unwrap(), 0);
    for &from in starts {
        let walked: Vec<IndexEntry> = ix.iter_from(from).map(Result::unwrap).collect();
        assert_eq!(walked.len(), n.saturating_sub(from));
        for (w, e) in walked.iter().zip(written.iter().skip(from)) {
            same(w, e);
        }
    }
}

/// A columnar SSTable's keyed Index.db: tokens that are the key's Murmur3 token are not
/// stored (and come back derived), others are; lookups, bounds and walks agree with what was
/// written, and the derived entries take 10 bytes for an 8-byte key.
#[test]
fn keyed_entries_derive_murmur3_tokens_and_keep_the_others() {
    let dir = temp_dir("keyed");
    let written = bigint_entries(1, |i| i as i64 * 7 - 3000, 60);
    let mut body = Vec::new();
    for e in &written {
        crate::sstable::format::encode_keyed_index_entry(&mut body, e);
    }
    // 800 derived entries of 10 bytes, 200 with their 8-byte token.
    assert_eq!(body.len(), 800 * 10 + 200 * 18);
    let format = DataFormat::Compact { base_us: 0 };
    let mut file = KEYED_MAGIC.to_vec();
    format.encode_index_count(&mut file, written.len());
    file.extend_from_slice(&body);
    let crc = crc32c(&file);
    file.extend_from_slice(&crc.to_be_bytes());
    let path = dir.join("keyed");
    std::fs::write(&path, &file).unwrap();
    for interval in [1, 4, 128] {
        let ix = PartitionIndex::open_with_interval(&path, format, interval, None).unwrap();
        check_lookups(&ix, &written, &[3]);
    }
    // The keyed magic is only read as such for format 2.
    assert!(PartitionIndex::open(&path, DataFormat::Fixed, None).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The segment of a sampled index, as a list: entry positions to (token, key).
struct ListedKeys(std::collections::BTreeMap<u64, (i64, Bytes)>);

impl EntryKeys for ListedKeys {
    fn keys_at(&self, positions: &[u64]) -> Result<Vec<(i64, Bytes)>, StorageError> {
        positions
            .iter()
            .map(|p| {
                self.0
                    .get(p)
                    .cloned()
                    .ok_or(StorageError::Decode { what: "keys" })
            })
            .collect()
    }
}

fn sampled_file(dir: &Path, name: &str, written: &[IndexEntry], interval: usize) -> PathBuf {
    let mut body = Vec::new();
    for (i, e) in written.iter().enumerate() {
        encode_sampled_entry(&mut body, e, i, interval);
    }
    let mut file = SAMPLED_MAGIC.to_vec();
    encode_sampled_header(&mut file, written.len(), interval);
    file.extend_from_slice(&body);
    with_checksum(dir, name, file)
}

/// Writes `file` with its checksum appended as `dir/name`.
fn with_checksum(dir: &Path, name: &str, mut file: Vec<u8>) -> PathBuf {
    let crc = crc32c(&file);
    file.extend_from_slice(&crc.to_be_bytes());
    let path = dir.join(name);
    std::fs::write(&path, &file).unwrap();
    path
}

#[test]
fn a_sampled_index_reads_keys_from_its_segment_and_checks_its_samples_against_it() {
    let dir = temp_dir("sampled");
    // Bigint keys, every fifth with a token that is not its Murmur3 one, entry counts varying.
    let written = bigint_entries(7919, |i| i as i64 * 1_000_003 - 400_000_000, 3);
    let segment: std::collections::BTreeMap<u64, (i64, Bytes)> = written
        .iter()
        .map(|e| (e.position, (e.token, e.key.clone())))
        .collect();
    let keys: Arc<dyn EntryKeys> = Arc::new(ListedKeys(segment.clone()));
    let format = DataFormat::Compact { base_us: 0 };
    for interval in [1, 7, 128] {
        let path = sampled_file(&dir, &format!("s{interval}"), &written, interval);
        // The index is the lengths and one key a page: under 2 bytes an entry beside 10.
        let per_entry = std::fs::metadata(&path).unwrap().len() as usize / written.len();
        assert!(interval == 1 || per_entry < 3, "{per_entry} bytes an entry");
        // The file's interval wins over the one asked for.
        let ix = PartitionIndex::open_with_interval(&path, format, 3, Some(keys.clone())).unwrap();
        assert_eq!(ix.samples.len(), written.len().div_ceil(interval));
        check_lookups(&ix, &written, &[0, 3, interval, 999]);
        // Without its segment a sampled index does not open.
        assert!(PartitionIndex::open(&path, format, None).is_err());
    }
    // A segment whose keys differ from the index's samples is reported, not read as another
    // partition.
    let path = sampled_file(&dir, "mismatch", &written, 128);
    let mut other = segment.clone();
    if let Some(first) = other.get_mut(&0) {
        first.1 = Bytes::from_static(b"another");
    }
    let ix = PartitionIndex::open(&path, format, Some(Arc::new(ListedKeys(other)))).unwrap();
    assert!(ix.entry(1).is_err());
    assert!(ix.iter_from(0).next().unwrap().is_err());
    // A header declaring a sampling interval of 0.
    let mut file = SAMPLED_MAGIC.to_vec();
    encode_sampled_header(&mut file, 1, 0);
    encode_sampled_entry(&mut file, &written[0], 0, 1);
    let crc = crc32c(&file);
    file.extend_from_slice(&crc.to_be_bytes());
    std::fs::write(dir.join("zero"), &file).unwrap();
    assert!(PartitionIndex::open(&dir.join("zero"), format, Some(keys)).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A sampled Index.db as the SSTable writer makes it (`SampledIndexBody`).
fn written_sampled_file(
    dir: &Path,
    name: &str,
    written: &[IndexEntry],
    interval: usize,
) -> PathBuf {
    let mut body = SampledIndexBody::default();
    for (i, e) in written.iter().enumerate() {
        body.push(e, i, interval);
    }
    let (mut file, rest) = body.finish(written.len(), interval);
    file.extend_from_slice(&rest);
    with_checksum(dir, name, file)
}

#[test]
fn one_entry_partitions_get_an_index_of_samples_only() {
    let dir = temp_dir("uniform");
    let format = DataFormat::Compact { base_us: 0 };
    let segment_of = |w: &[IndexEntry]| -> Arc<dyn EntryKeys> {
        Arc::new(ListedKeys(
            w.iter()
                .map(|e| (e.position, (e.token, e.key.clone())))
                .collect(),
        ))
    };
    // Every partition one segment entry (a table of one-row partitions).
    let ones = bigint_entries(7919, |i| i as i64 * 1_000_003 - 400_000_000, 1);
    for interval in [1, 7, 128] {
        let path = written_sampled_file(&dir, &format!("u{interval}"), &ones, interval);
        let bytes = std::fs::read(&path).unwrap();
        // With every entry a sample there is nothing to share.
        let magic: &[u8] = if interval == 1 {
            SAMPLED_MAGIC
        } else {
            UNIFORM_MAGIC
        };
        assert_eq!(&bytes[..4], magic, "interval {interval}");
        if interval == 128 {
            // 8 samples of ~18 bytes, not 1,000 lengths.
            assert!(bytes.len() < 200, "{} bytes", bytes.len());
        }
        let ix =
            PartitionIndex::open_with_interval(&path, format, 3, Some(segment_of(&ones))).unwrap();
        check_lookups(&ix, &ones, &[0, 3, interval, 999]);
    }
    // Lengths that differ keep every entry's length, and read the same way.
    let varied = bigint_entries(7919, |i| i as i64 * 1_000_003 - 400_000_000, 3);
    let path = written_sampled_file(&dir, "varied", &varied, 128);
    assert_eq!(&std::fs::read(&path).unwrap()[..4], SAMPLED_MAGIC);
    let ix = PartitionIndex::open(&path, format, Some(segment_of(&varied))).unwrap();
    check_lookups(&ix, &varied, &[0, 3, 128, 999]);
    // A uniform index missing its last sample, or claiming more entries than its samples hold.
    let path = written_sampled_file(&dir, "cut", &ones, 128);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.truncate(bytes.len() - 4 - 10);
    let crc = crc32c(&bytes);
    bytes.extend_from_slice(&crc.to_be_bytes());
    std::fs::write(&path, &bytes).unwrap();
    assert!(PartitionIndex::open(&path, format, Some(segment_of(&ones))).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}
