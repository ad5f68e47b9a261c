//! Why a configuration was refused. A leaf: the settings, the security checks and the loader all
//! report through it.

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {message}")]
    Read { path: String, message: String },
    #[error("invalid yaml in {path}: {message}")]
    Yaml { path: String, message: String },
    #[error("invalid value for {key}: {message}")]
    Value { key: String, message: String },
    /// A setting asks for something Helenus does not do and must not silently skip (security).
    #[error("unsupported setting {key}: {message}")]
    Unsupported { key: String, message: String },
}
