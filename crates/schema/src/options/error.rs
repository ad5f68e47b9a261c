//! Why a keyspace or table option was refused. Each message is Cassandra 5.0's, word for word:
//! the corpus tests compare them with what Cassandra answers.

/// A `WITH replication`, `compaction` or `compression` value that Cassandra would refuse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionsError {
    #[error("Missing replication strategy class")]
    MissingReplicationClass,
    /// `SimpleStrategy`'s `replication_factor` is not a non-negative integer.
    #[error("Replication factor must be non-negative; found {0}")]
    SimpleReplicationFactor(String),
    /// A datacenter's replication factor of `NetworkTopologyStrategy` is not a non-negative integer.
    #[error("Replication factor must be non-negative integer; found {rf} for {datacenter}")]
    DatacenterReplicationFactor { datacenter: String, rf: String },
    #[error("Unrecognized strategy option {{{option}}} passed to {strategy} for keyspace")]
    UnrecognizedStrategyOption {
        option: String,
        strategy: &'static str,
    },
    /// `LocalStrategy` and `EverywhereStrategy` exist only for the system keyspaces. This one is an
    /// invalid request (0x2200) in Cassandra; every other variant is a configuration error (0x2300).
    #[error("Unable to use given strategy class: LocalStrategy is reserved for internal use.")]
    ReservedStrategy,
    #[error("Unable to find replication strategy class 'org.apache.cassandra.locator.{0}'")]
    UnknownReplicationClass(String),
    #[error("Missing sub-option 'class' for the 'compaction' option.")]
    MissingCompactionClass,
    #[error("Unable to find compaction strategy class '{0}'")]
    UnknownCompactionClass(String),
    #[error("Missing sub-option 'class' for the 'compression' option.")]
    MissingCompressionClass,
    #[error("chunk_length_in_kb must be a power of 2")]
    ChunkLengthNotPowerOfTwo,
    #[error("Invalid negative or null chunk_length_in_kb")]
    ChunkLengthNotPositive,
    #[error("The 'class' option must not be empty. To disable compression use 'enabled' : false")]
    EmptyCompressionClass,
    #[error("If the 'enabled' option is set to false no other options must be specified")]
    DisabledCompressionWithOptions,
    #[error("Invalid negative min_compress_ratio")]
    NegativeMinCompressRatio,
    #[error("Unknown compression options {0}")]
    UnknownCompressionOptions(String),
}

impl OptionsError {
    /// Whether Cassandra answers this with an invalid-request error rather than a configuration
    /// error.
    pub fn is_invalid_request(&self) -> bool {
        matches!(self, OptionsError::ReservedStrategy)
    }
}
