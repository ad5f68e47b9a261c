//! Message opcodes (the envelope's `opcode` byte). A leaf shared by requests, responses and the
//! frame header.

/// Message opcodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Opcode {
    Error = 0x00,
    Startup = 0x01,
    Ready = 0x02,
    Authenticate = 0x03,
    Options = 0x05,
    Supported = 0x06,
    Query = 0x07,
    Result = 0x08,
    Prepare = 0x09,
    Execute = 0x0A,
    Register = 0x0B,
    Event = 0x0C,
    Batch = 0x0D,
    AuthChallenge = 0x0E,
    AuthResponse = 0x0F,
    AuthSuccess = 0x10,
}

impl Opcode {
    /// The opcode for a wire byte, if known.
    pub fn from_u8(b: u8) -> Option<Opcode> {
        use Opcode::*;
        Some(match b {
            0x00 => Error,
            0x01 => Startup,
            0x02 => Ready,
            0x03 => Authenticate,
            0x05 => Options,
            0x06 => Supported,
            0x07 => Query,
            0x08 => Result,
            0x09 => Prepare,
            0x0A => Execute,
            0x0B => Register,
            0x0C => Event,
            0x0D => Batch,
            0x0E => AuthChallenge,
            0x0F => AuthResponse,
            0x10 => AuthSuccess,
            _ => return None,
        })
    }
}
