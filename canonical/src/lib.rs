//! # pond-canonical
//!
//! The canonical Session / Message / Part model (spec section 4): the interlingua every codec
//! parses into and serializes from, and what the store persists. It also holds the parse seam
//! ([`seam`]) through which codec read faces build canonical values, because only this crate can
//! construct the sealed field types: that is what turns model-no-synthesis and
//! adapter-provenance-required into compile errors for codec code.
//!
//! This crate knows no source format, no storage, and no transport.

pub mod bounded;
pub mod event;
pub mod ids;
pub mod ingest;
pub mod model;
pub mod schema;
pub mod seam;
pub mod time;
pub mod untrusted;
pub mod validate;

pub use bounded::{FileData, Json, MAX_VALUE_BYTES, Project, Text};
pub use event::{Event, MessageHead, Role, WireEvent};
pub use ids::{MessageId, PartId, SessionId};
pub use model::{
    AssistantMessage, AssistantPart, FilePart, Message, Options, Part, PartKey, PartRef,
    Provenance, ReasoningPart, Session, SessionLog, SystemMessage, TextPart,
    ToolApprovalRequestPart, ToolApprovalResponsePart, ToolCallPart, ToolMessage, ToolPart,
    ToolResultPart, UserMessage, UserPart, options_ns,
};
pub use seam::{
    Detached, Extracted, LineFields, Locator, Origin, ParseError, ParseErrorKind, Record,
};
pub use time::{Timestamp, civil_from_days};
pub use untrusted::escape_controls;
