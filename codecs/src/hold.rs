//! What a streaming foreign writer holds back, and when it lets go (docs/decisions.md, "Foreign
//! writers stream"). A foreign writer writes each line as soon as it is final; what it holds is
//! the open response (until its tool calls are answered) and, at a session's start, the messages
//! before a session-wide default (the model) is known. Both are bounded here, never by the session.

use crate::discover::find_str;
use crate::face::{CarriedLine, Losses, Target, WriteError};
use pond_canonical::{Message, Provenance, Session};

/// How many messages a writer holds while the oldest waits for tool results (later responses,
/// results, a Codex `developer` notice between a call and its output); one more and the oldest
/// is written without the results still missing. Results follow their calls closely: Claude Code
/// interleaves them with the next lines of one API response, never by more than a few lines.
pub(crate) const MAX_HELD: usize = 64;

/// How many messages a session's start is held while its default model is unknown; after that
/// the default is decided from what came so far.
pub(crate) const MAX_PRELUDE: usize = 256;

/// Whether `m` is a user message of harness text only (every part injected): it does not begin a
/// user turn, so a response waiting for its results is not ended by it.
pub(crate) fn harness_only(m: &Message) -> bool {
    matches!(m, Message::User(_)) && m.part_provenances().all(|p| p == Provenance::Injected)
}

/// The messages at a session's start, held until its default model and provider are known:
/// the first an assistant message names, else the session's, else the source harness's.
pub(crate) struct Prelude {
    held: Option<Vec<Message>>,
    model: Option<String>,
    provider: Option<String>,
}

impl Prelude {
    pub(crate) fn new() -> Self {
        Self {
            held: Some(Vec::new()),
            model: None,
            provider: None,
        }
    }

    /// Holds `m` while the defaults are undecided (true), or says they are decided (false).
    pub(crate) fn hold(&mut self, m: &Message) -> bool {
        let Some(held) = &mut self.held else {
            return false;
        };
        if let Message::Assistant(a) = m {
            let opts = &a.options;
            if self.model.is_none() {
                self.model = find_str(opts, MODEL_KEYS).map(str::to_owned);
            }
            if self.provider.is_none() {
                self.provider = find_str(opts, &["providerID", "provider", "model_provider"])
                    .map(str::to_owned);
            }
        }
        held.push(m.clone());
        true
    }

    /// Whether the defaults are decided (the prelude holds nothing any more).
    pub(crate) fn decided(&self) -> bool {
        self.held.is_none()
    }

    /// Whether the defaults can be decided: both named, or the prelude as long as it may get.
    pub(crate) fn ready(&self) -> bool {
        (self.model.is_some() && self.provider.is_some())
            || self.held.as_ref().is_some_and(|h| h.len() >= MAX_PRELUDE)
    }

    /// Decides the defaults, `(provider, model)`, and gives back the messages held (to be written
    /// now, in order); nothing more is held after. `None` once decided.
    pub(crate) fn release(&mut self, session: &Session) -> Option<(String, String, Vec<Message>)> {
        let held = self.held.take()?;
        let session_opts = &session.options;
        let provider = self
            .provider
            .take()
            .or_else(|| {
                find_str(session_opts, &["providerID", "model_provider"]).map(str::to_owned)
            })
            .unwrap_or_else(|| default_provider(&session.source_agent).to_owned());
        let model = self
            .model
            .take()
            .or_else(|| find_str(session_opts, MODEL_KEYS).map(str::to_owned))
            .unwrap_or_else(|| "unknown".to_owned());
        Some((provider, model, held))
    }
}

const MODEL_KEYS: &[&str] = &["model", "modelID", "modelId"];

/// The provider a source harness talks to when its records name none.
pub(crate) fn default_provider(agent: &str) -> &'static str {
    match agent {
        "claude-code" => "anthropic",
        "codex" => "openai",
        _ => "unknown",
    }
}

/// A foreign session written as its messages become final, with a prelude and held messages:
/// the one driver of the pi and opencode foreign writers (the Claude Code writer holds whole
/// responses its own way; the Codex one holds nothing).
pub(crate) trait Streamed {
    fn prelude(&mut self) -> &mut Prelude;
    fn source(&self) -> &Session;
    /// The session's default `(provider, model)`, decided when the prelude ends.
    fn set_defaults(&mut self, provider: String, model: String);
    /// Builds one message into the held ones (its results folded into their calls).
    fn build(&mut self, m: &Message);
    /// `None` when nothing is held, else whether the oldest held message still waits (for a
    /// result, or for more of its run).
    fn front_waits(&self) -> Option<bool>;
    fn held_len(&self) -> usize;
    /// Makes the oldest held message final, reporting its calls still unanswered.
    fn write_front(&mut self);
    /// The file, the losses found and the bytes made since the last write.
    fn pending(&mut self) -> (&str, &mut Losses, &mut Vec<u8>);

    /// A message of the session: held while the defaults are undecided, then built, and what is
    /// final written out.
    fn push(&mut self, m: &Message, target: &mut Target<'_>) -> Result<(), WriteError> {
        if !self.prelude().hold(m) {
            self.step(m);
        } else if self.prelude().ready() {
            self.end_prelude();
        }
        self.write(target)
    }

    /// A carrier of the session as its source line: once the defaults are decided and the
    /// session's first carrier has been reported as `loss` (a carrier has no form in the target,
    /// and after the prelude it changes nothing else), only counted, its message never built.
    fn carried(
        &mut self,
        carried: &CarriedLine<'_>,
        loss: &str,
        target: &mut Target<'_>,
    ) -> Result<(), WriteError> {
        if self.prelude().decided()
            && !carried.may_be_compaction()
            && target.losses.count_again(loss)
        {
            return Ok(());
        }
        self.push(&carried.message(), target)
    }

    /// Decides the defaults and builds the messages held until now.
    fn end_prelude(&mut self) {
        let session = self.source().clone();
        let Some((provider, model, held)) = self.prelude().release(&session) else {
            return;
        };
        self.set_defaults(provider, model);
        for m in held {
            self.step(&m);
        }
    }

    /// One message: a user turn first gives up the results still awaited.
    fn step(&mut self, m: &Message) {
        if matches!(m, Message::User(_)) && !harness_only(m) {
            self.release(true);
        }
        self.build(m);
        self.release(false);
    }

    /// Makes the held messages final from the oldest while they wait for nothing (every one when
    /// `all`, or the oldest while more than [`MAX_HELD`] are held).
    fn release(&mut self, all: bool) {
        while let Some(waits) = self.front_waits() {
            if waits && !all && self.held_len() <= MAX_HELD {
                break;
            }
            self.write_front();
        }
    }

    /// Writes the bytes made final, and adds the losses found since the last call.
    fn write(&mut self, target: &mut Target<'_>) -> Result<(), WriteError> {
        let (path, losses, buf) = self.pending();
        target.losses.merge(std::mem::take(losses));
        if buf.is_empty() {
            return Ok(());
        }
        target.out.append(path, buf)?;
        buf.clear();
        Ok(())
    }

    /// The end of the source: the defaults are decided and everything held is made final.
    fn end(&mut self) {
        self.end_prelude();
        self.release(true);
    }
}
