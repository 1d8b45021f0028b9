//! The error of a call: a gRPC status (with the sidecar's reason/field) or a transport fault.
use std::fmt;

/// gRPC status codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    Ok = 0,
    Cancelled = 1,
    Unknown = 2,
    InvalidArgument = 3,
    DeadlineExceeded = 4,
    NotFound = 5,
    AlreadyExists = 6,
    PermissionDenied = 7,
    ResourceExhausted = 8,
    FailedPrecondition = 9,
    Aborted = 10,
    OutOfRange = 11,
    Unimplemented = 12,
    Internal = 13,
    Unavailable = 14,
    DataLoss = 15,
    Unauthenticated = 16,
}

impl Code {
    const ALL: [Code; 17] = [
        Code::Ok, Code::Cancelled, Code::Unknown, Code::InvalidArgument, Code::DeadlineExceeded,
        Code::NotFound, Code::AlreadyExists, Code::PermissionDenied, Code::ResourceExhausted,
        Code::FailedPrecondition, Code::Aborted, Code::OutOfRange, Code::Unimplemented,
        Code::Internal, Code::Unavailable, Code::DataLoss, Code::Unauthenticated,
    ];

    /// The code of a `grpc-status` value; an unknown number is `Unknown`, as the spec says.
    pub fn from_i32(value: i32) -> Code {
        usize::try_from(value).ok().and_then(|i| Self::ALL.get(i).copied()).unwrap_or(Code::Unknown)
    }
}

/// A non-OK gRPC status with the sidecar's `memsidecar-reason` / `memsidecar-field` trailers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    pub code: Code,
    pub message: String,
    pub reason: Option<String>,
    pub field: Option<String>,
}

/// Why a call failed.
#[derive(Debug)]
pub enum Error {
    /// The sidecar answered with a non-OK status (or the call ran past its deadline).
    Status(Status),
    /// The sidecar could not be reached.
    Connect(String),
    /// The connection failed during the call.
    Transport(String),
    /// The reply broke the gRPC framing or the protobuf encoding.
    Protocol(String),
}

impl Error {
    /// The gRPC code: transport faults count as `Unavailable`, protocol faults as `Internal`.
    pub fn code(&self) -> Code {
        match self {
            Error::Status(status) => status.code,
            Error::Connect(_) | Error::Transport(_) => Code::Unavailable,
            Error::Protocol(_) => Code::Internal,
        }
    }

    /// The status when the sidecar answered one.
    pub fn status(&self) -> Option<&Status> {
        match self {
            Error::Status(status) => Some(status),
            _ => None,
        }
    }

    pub(crate) fn deadline(timeout: std::time::Duration) -> Error {
        Error::Status(Status {
            code: Code::DeadlineExceeded,
            message: format!("no reply within {} ms", timeout.as_millis()),
            reason: None,
            field: None,
        })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Status(s) => {
                write!(f, "{:?}: {}", s.code, s.message)?;
                if s.reason.is_some() || s.field.is_some() {
                    let reason = s.reason.as_deref().unwrap_or("");
                    write!(f, " (reason={reason} field={})", s.field.as_deref().unwrap_or(""))?;
                }
                Ok(())
            }
            Error::Connect(m) => write!(f, "{m}"),
            Error::Transport(m) => write!(f, "transport: {m}"),
            Error::Protocol(m) => write!(f, "protocol: {m}"),
        }
    }
}

impl std::error::Error for Error {}
