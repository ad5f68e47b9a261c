//! Writing an SSTable: partitions appended in order into Data.db chunks, the index, bloom
//! filter and statistics built alongside, every component written and synced at `finish`.

use super::*;

impl SSTableWriter {
    pub fn create(
        dir: &Path,
        gen: u64,
        compression: &CompressionOptions,
        expected_keys: usize,
        fp_chance: f64,
        level: u32,
        clock: SharedClock,
    ) -> Result<Self, StorageError> {
        fs::create_dir_all(dir).map_err(|e| StorageError::io(dir, e))?;
        let chunk_len = (compression.chunk_length_in_kb.clamp(1, 4096) as usize) * 1024;
        let codec = ChunkCodec::new(compression);
        Ok(SSTableWriter {
            dir: dir.to_path_buf(),
            gen,
            file_code: codec.file_code(),
            chunk_len,
            sink: Some(ChunkSink::create(dir, gen, codec)?),
            pending: Vec::with_capacity(chunk_len),
            logical_pos: 0,
            index_body: Vec::new(),
            sampled_index: Default::default(),
            index_count: 0,
            cells_indexed: 0,
            last_key: None,
            filter: BloomFilter::new(expected_keys, fp_chance),
            stats: SSTableStats::empty(level),
            min_ck: None,
            max_ck: None,
            scratch: Vec::new(),
            format: DataFormat::from_stats(CURRENT_DATA_FORMAT, 0)?,
            base_chosen: false,
            clock,
            columns: None,
        })
    }

    /// Marks the SSTable a piece of run `run_id` (see `SSTableStats::run_id`).
    pub fn set_run_id(&mut self, run_id: u64) {
        self.stats.run_id = run_id;
    }

    /// Writes data format 1, as writers did before format 2 (tests of old files).
    #[cfg(test)]
    pub fn use_fixed_format(&mut self) {
        self.format = DataFormat::Fixed;
    }

    /// The format for the next partition. The timestamp base is the first partition's smallest
    /// timestamp: data is written before its statistics, so the true minimum is not known yet,
    /// and deltas are signed, so any nearby base keeps them short. A partition with no
    /// timestamps (a streamed header) falls back to the clock, near which writes are.
    pub(super) fn format_for(&mut self, p: &Partition) -> DataFormat {
        if !self.base_chosen {
            self.base_chosen = true;
            if let DataFormat::Compact { .. } = self.format {
                let base_us = p
                    .timestamp_range()
                    .map_or_else(|| self.clock.wall_micros(), |(lo, _)| lo);
                self.format = DataFormat::Compact { base_us };
            }
        }
        self.format
    }

    /// Appends a partition; partitions must arrive in (token, key) order.
    pub fn append(&mut self, p: &Partition) -> Result<(), StorageError> {
        self.check_order(p.token, &p.key)?;
        if self.is_columnar() {
            return self.append_columnar(p);
        }
        self.scratch.clear();
        let mut starts = Vec::new();
        let header_len =
            self.format_for(p)
                .encode_partition_indexed(&mut self.scratch, p, &mut starts);
        let spans = block_spans(&starts, self.scratch.len());
        let mut keys = p.rows.keys().enumerate();
        let mut blocks = Vec::with_capacity(spans.len());
        for (row, offset, length, rows) in spans {
            let first = keys
                .find(|(i, _)| *i == row)
                .map(|(_, k)| k.values.clone())
                .unwrap_or_default();
            blocks.push(RowBlock {
                first,
                offset,
                length,
                rows,
            });
        }
        self.note_stats(p);
        let scratch = std::mem::take(&mut self.scratch);
        let r = self.push_partition(p.token, &p.key, &scratch, header_len, blocks);
        self.scratch = scratch;
        r
    }

    pub(super) fn check_order(&self, token: i64, key: &Bytes) -> Result<(), StorageError> {
        match &self.last_key {
            Some((last_token, last_key)) if (*last_token, last_key) >= (token, key) => Err(
                StorageError::InvalidRequest("sstable partitions out of order".into()),
            ),
            _ => Ok(()),
        }
    }

    /// Indexes and writes one encoded partition (its statistics are noted by the caller).
    pub(super) fn push_partition(
        &mut self,
        token: i64,
        key: &Bytes,
        encoded: &[u8],
        header_len: usize,
        blocks: Vec<RowBlock>,
    ) -> Result<(), StorageError> {
        let len = encoded.len() as u64;
        let length = u32::try_from(len).map_err(|_| {
            StorageError::InvalidRequest(format!("partition of {len} bytes is too large"))
        })?;
        self.index_partition(&IndexEntry {
            token,
            key: key.clone(),
            position: self.logical_pos,
            length,
            header_len: header_len as u32,
            blocks,
        });
        self.emit(encoded)
    }

    /// Adds a partition's entry to the index, the bloom filter and the statistics.
    pub(super) fn index_partition(&mut self, e: &IndexEntry) {
        self.index_partition_sized(e, u64::from(e.length))
    }

    /// `index_partition` for a partition of `bytes` bytes in the row encoding (a columnar
    /// entry's length counts entries, not bytes).
    pub(super) fn index_partition_sized(&mut self, e: &IndexEntry, bytes: u64) {
        if self.is_columnar() {
            self.sampled_index
                .push(e, self.index_count, super::index::MIN_INDEX_INTERVAL);
        } else {
            self.format.encode_index_entry(&mut self.index_body, e);
        }
        self.index_count += 1;
        self.filter.insert(e.token, &e.key);
        let s = &mut self.stats;
        s.partitions += 1;
        s.max_partition_bytes = s.max_partition_bytes.max(bytes);
        s.partition_size_histogram.add(bytes);
        // Every append path notes a partition's cells before indexing it.
        s.cell_count_histogram.add(s.cells - self.cells_indexed);
        self.cells_indexed = s.cells;
        s.min_token = s.min_token.min(e.token);
        s.max_token = s.max_token.max(e.token);
        self.last_key = Some((e.token, e.key.clone()));
    }

    /// Adds `p`'s rows, tombstones, timestamps and bounds to the statistics (not the partition
    /// count or size: a wide partition is noted a row at a time).
    pub(super) fn note_stats(&mut self, p: &Partition) {
        let s = &mut self.stats;
        s.rows += p.rows.len() as u64;
        s.note_tombstones_at(p.token, p.tombstone_count());
        if let Some((lo, hi)) = p.timestamp_range() {
            s.min_timestamp_us = s.min_timestamp_us.min(lo);
            s.max_timestamp_us = s.max_timestamp_us.max(hi);
        }
        s.max_local_deletion_time_s = s.max_local_deletion_time_s.max(max_ldt(p));
        s.note_partition(p, &mut self.min_ck, &mut self.max_ck);
    }

    /// Appends bytes to the logical data stream, writing every full chunk.
    pub(super) fn emit(&mut self, bytes: &[u8]) -> Result<(), StorageError> {
        self.logical_pos += bytes.len() as u64;
        let mut rest = bytes;
        while !rest.is_empty() {
            let room = self.chunk_len - self.pending.len();
            let (now, later) = rest.split_at(room.min(rest.len()));
            self.pending.extend_from_slice(now);
            rest = later;
            if self.pending.len() >= self.chunk_len {
                let chunk =
                    std::mem::replace(&mut self.pending, Vec::with_capacity(self.chunk_len));
                self.data_sink()?.write_chunk(chunk)?;
            }
        }
        Ok(())
    }

    /// The Data.db stream (a columnar writer has none).
    fn data_sink(&mut self) -> Result<&mut ChunkSink, StorageError> {
        self.sink
            .as_mut()
            .ok_or_else(|| StorageError::InvalidRequest("a columnar SSTable has no Data.db".into()))
    }

    /// Bytes of data written so far (uncompressed), for output splitting, the compaction
    /// throttle and progress. A columnar segment counts the bytes of its file: the row
    /// encoding's estimate it keeps for partition statistics is some 40 times larger, and held
    /// a major compaction of 4.16M GDELT rows (202 MB) to 64 MiB/s of bytes never written
    /// (98 s, a third of it CPU).
    pub fn uncompressed_bytes(&self) -> u64 {
        match &self.columns {
            Some(seg) => seg.bytes_written(),
            None => self.logical_pos,
        }
    }

    /// Writes the remaining components and the TOC; returns the opened reader.
    pub fn finish(
        mut self,
        cmp: &Arc<ClusteringComparator>,
    ) -> Result<Arc<SSTableReader>, StorageError> {
        if !self.pending.is_empty() {
            let chunk = std::mem::take(&mut self.pending);
            self.data_sink()?.write_chunk(chunk)?;
        }
        // The index and filter do not depend on where the chunks landed: they are encoded and
        // written while the writing thread finishes the data and syncs it.
        let head;
        if self.is_columnar() {
            let sampled = std::mem::take(&mut self.sampled_index);
            (head, self.index_body) =
                sampled.finish(self.index_count, super::index::MIN_INDEX_INTERVAL);
        } else {
            let mut h = MAGIC.to_vec();
            self.format.encode_index_count(&mut h, self.index_count);
            head = h;
        }
        let crc = crc32c_update(crc32c(&head), &self.index_body);
        write_file_parts(
            &component_path(&self.dir, self.gen, "Index.db"),
            &[&head, &self.index_body, &crc.to_be_bytes()],
        )?;
        self.index_body = Vec::new();
        // Sized for the whole flush or compaction: an output of one ring range keeps only the
        // blocks its tokens reach.
        self.filter
            .trim_to_tokens(self.stats.min_token, self.stats.max_token);
        let mut fb = Vec::new();
        self.filter.encode(&mut fb);
        write_file(&component_path(&self.dir, self.gen, "Filter.db"), &fb)?;

        let columns_bytes = self.finish_columns()?;
        let data = self.sink.take().map(ChunkSink::finish).transpose()?;
        // A columnar segment compresses chunk by chunk and has no larger form than its file:
        // the row encoding's estimate (`logical_pos`) overstated it 40-fold, and
        // `system.size_estimates` (mean partition size = these bytes / partitions) made the
        // Spark connector plan 16 tasks at 512 MB each for a 202 MB table.
        self.stats.uncompressed_bytes = columns_bytes.unwrap_or(self.logical_pos);
        self.stats.data_file_bytes = columns_bytes
            .or(data.as_ref().map(|d| d.bytes))
            .unwrap_or(0);
        self.stats.min_clustering = self.min_ck.take().map(|k| k.values).unwrap_or_default();
        self.stats.max_clustering = self.max_ck.take().map(|k| k.values).unwrap_or_default();
        self.stats.data_format = self.format.code();
        self.stats.timestamp_base_us = self.format.base_us();

        let Some(data) = data else {
            return finish_columnar_components(&self.dir, self.gen, &self.stats, cmp);
        };
        let mut ci = MAGIC.to_vec();
        {
            let mut w = Writer(&mut ci);
            w.u8(self.file_code);
            w.u32(self.chunk_len as u32);
            w.u64(self.logical_pos);
            w.u32(data.chunk_offsets.len() as u32);
            for o in &data.chunk_offsets {
                w.u64(*o);
            }
        }
        let crc = crc32c(&ci);
        ci.extend_from_slice(&crc.to_be_bytes());
        write_file(
            &component_path(&self.dir, self.gen, "CompressionInfo.db"),
            &ci,
        )?;
        let mut sb = Vec::new();
        self.stats.encode(&mut sb);
        write_file(&component_path(&self.dir, self.gen, "Statistics.db"), &sb)?;
        let toc = COMPONENTS.join("\n") + "\nTOC.txt\n";
        write_file(
            &component_path(&self.dir, self.gen, "TOC.txt"),
            toc.as_bytes(),
        )?;
        if let Ok(d) = File::open(&self.dir) {
            let _ = d.sync_all();
        }
        SSTableReader::open(&self.dir, self.gen, cmp)
    }

    /// Removes a half-written generation (error path).
    pub fn abort(self) {
        if let Some(sink) = self.sink {
            let _ = sink.finish();
        }
        // A segment writer dropped unfinished removes its temporary file.
        drop(self.columns);
        for c in std::iter::once("TOC.txt").chain(all_component_names()) {
            let _ = fs::remove_file(component_path(&self.dir, self.gen, c));
        }
    }
}

/// The Statistics.db and TOC of a columnar SSTable (its segment is written).
fn finish_columnar_components(
    dir: &Path,
    gen: u64,
    stats: &SSTableStats,
    cmp: &Arc<ClusteringComparator>,
) -> Result<Arc<SSTableReader>, StorageError> {
    let mut sb = Vec::new();
    stats.encode(&mut sb);
    write_file(&component_path(dir, gen, "Statistics.db"), &sb)?;
    let toc = COLUMNAR_COMPONENTS.join("\n") + "\nTOC.txt\n";
    write_file(&component_path(dir, gen, "TOC.txt"), toc.as_bytes())?;
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    SSTableReader::open(dir, gen, cmp)
}

fn max_ldt(p: &Partition) -> i64 {
    let mut m = p.deletion.map_or(i64::MIN, |d| d.local_deletion_time_s);
    for rt in &p.range_tombstones {
        m = m.max(rt.2.local_deletion_time_s);
    }
    for r in std::iter::once(&p.static_row).chain(p.rows.values().map(|r| &**r)) {
        if let Some(d) = r.deletion {
            m = m.max(d.local_deletion_time_s);
        }
        for c in r.cells.values() {
            if let Some(t) = c.tombstone_time_s(i64::MAX) {
                m = m.max(t);
            }
        }
    }
    m
}

fn write_file(path: &Path, data: &[u8]) -> Result<(), StorageError> {
    write_file_parts(path, &[data])
}

/// Writes `parts` one after the other as the whole file, and syncs it.
fn write_file_parts(path: &Path, parts: &[&[u8]]) -> Result<(), StorageError> {
    let mut f = File::create(path).map_err(|e| StorageError::io(path, e))?;
    parts
        .iter()
        .try_for_each(|p| f.write_all(p))
        .and_then(|_| f.sync_all())
        .map_err(|e| StorageError::io(path, e))
}
