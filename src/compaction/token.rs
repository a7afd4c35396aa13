//! The plan token: what a plan saw, sealed, so that `apply` can refuse a
//! plan the history has moved away from.
//!
//! The token is `acp1.` + the fields in hex + `.` + a checksum. The
//! checksum catches a token cut short or edited by hand; what the plan
//! promises is checked against the chat itself at apply time (the
//! covered chunk on the branch, the compaction in effect, what the span
//! folds), so a token made up to pass the checksum gains nothing.

use std::hash::Hasher;

use crate::model::compaction::SpanSize;

const PREFIX: &str = "acp1";
const FIELDS: usize = 7;
const SEPARATOR: char = '\u{1f}';

/// What a plan saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PlanToken {
    /// What the plan is for: `session`, or a chat's name and branch.
    pub(super) scope: String,
    /// The id of the last chunk the compaction covers.
    pub(super) covers: String,
    /// Where that chunk is: a store's node id, or a session's index.
    pub(super) covers_at: u64,
    /// The id of the compaction in effect when planned (empty: none).
    pub(super) previous: String,
    /// What the span folds that the prompt showed.
    pub(super) folded: SpanSize,
    /// The settings the plan counted under (see `Settings::plan_key`).
    pub(super) key: String,
}

impl PlanToken {
    /// The sealed token.
    pub(super) fn encode(&self) -> String {
        let payload = self.payload();
        format!("{PREFIX}.{}.{:016x}", hex(&payload), checksum(&payload))
    }

    /// The plan `token` seals; an error says what is wrong with it.
    pub(super) fn decode(token: &str) -> Result<PlanToken, String> {
        let broken = || {
            "the plan token is not one this version of agent-context wrote (cut short, edited, \
             or from another version): plan again"
                .to_owned()
        };
        let mut parts = token.trim().split('.');
        let (Some(PREFIX), Some(body), Some(sum), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(broken());
        };
        let payload = unhex(body).ok_or_else(broken)?;
        if format!("{:016x}", checksum(&payload)) != sum {
            return Err(broken());
        }
        let fields: Vec<&str> = payload.split(SEPARATOR).collect();
        let [scope, covers, covers_at, previous, chunks, tokens, key] = fields[..] else {
            return Err(broken());
        };
        let number = |text: &str| text.parse::<u64>().map_err(|_| broken());
        Ok(PlanToken {
            scope: scope.to_owned(),
            covers: covers.to_owned(),
            covers_at: number(covers_at)?,
            previous: previous.to_owned(),
            folded: SpanSize {
                chunks: number(chunks)?,
                tokens: number(tokens)?,
            },
            key: key.to_owned(),
        })
    }

    fn payload(&self) -> String {
        let fields: [String; FIELDS] = [
            self.scope.clone(),
            self.covers.clone(),
            self.covers_at.to_string(),
            self.previous.clone(),
            self.folded.chunks.to_string(),
            self.folded.tokens.to_string(),
            self.key.clone(),
        ];
        fields.join(&SEPARATOR.to_string())
    }
}

fn checksum(payload: &str) -> u64 {
    let mut hasher = rustc_hash::FxHasher::default();
    hasher.write(PREFIX.as_bytes());
    hasher.write(payload.as_bytes());
    hasher.finish()
}

fn hex(text: &str) -> String {
    text.bytes().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<String> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token() -> PlanToken {
        PlanToken {
            scope: "chat\u{1e}main".into(),
            covers: "c41".into(),
            covers_at: 912,
            previous: String::new(),
            folded: SpanSize {
                chunks: 40,
                tokens: 18_230,
            },
            key: "0.1.0 00ff".into(),
        }
    }

    #[test]
    fn a_token_reads_back_as_the_plan_it_seals() {
        let sealed = token().encode();
        assert_eq!(PlanToken::decode(&sealed), Ok(token()));
    }

    #[test]
    fn a_token_edited_or_cut_short_is_refused() {
        let sealed = token().encode();
        let edited = sealed.replacen("acp1.63", "acp1.64", 1);
        assert_ne!(edited, sealed);
        for bad in [
            &sealed[..sealed.len() - 1],
            &edited,
            "acp1",
            "",
            "acp1.zz.00",
        ] {
            let error = PlanToken::decode(bad).unwrap_err();
            assert!(error.contains("plan again"), "{error}");
        }
    }
}
