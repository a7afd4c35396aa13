//! A `UIMessage` (`{id, role, parts}`) read into chunks: its text and
//! reasoning parts in order, each tool part a call and, once it has one,
//! its result after the calls of its step.

use serde_json::{Map, Value};

use super::{
    Body, History, Place, check_role, denied, invalid, object_at, result_chunk, string_at,
};
use crate::error::Result;

impl History {
    pub(super) fn ui_message(
        &mut self,
        role: &str,
        base: &str,
        parts: &[Value],
        path: &str,
    ) -> Result<()> {
        check_role(role, &["system", "user", "assistant"], path)?;
        // The results of the step being read, placed when it ends.
        let mut results: Vec<Value> = Vec::new();
        for (j, part) in parts.iter().enumerate() {
            let place = Place {
                id: format!("{base}.{j}"),
                path: format!("{path}.parts[{j}]"),
            };
            let object = object_at(part, &place.path)?;
            let kind = string_at(object, "type", &place.path)?;
            match (role, kind) {
                ("system", "text") => {
                    let text = string_at(object, "text", &place.path)?;
                    self.system.push(text.to_owned());
                }
                (_, "text") => {
                    let text = string_at(object, "text", &place.path)?;
                    self.text(role, text, &place);
                }
                ("assistant", "reasoning") => {
                    self.reasoning(object, "providerMetadata", &place)?;
                }
                (_, "step-start") => self.chunks.append(&mut results),
                ("assistant", "dynamic-tool") => {
                    let name = string_at(object, "toolName", &place.path)?;
                    results.extend(self.ui_tool(object, name, &place)?);
                }
                ("assistant", tool) if tool.starts_with("tool-") => {
                    let name = &tool["tool-".len()..];
                    results.extend(self.ui_tool(object, name, &place)?);
                }
                (_, other) => self.leave_out(other),
            }
        }
        self.chunks.append(&mut results);
        Ok(())
    }

    /// A tool part's call, pushed; returns its result chunk, if it has
    /// one yet.
    fn ui_tool(
        &mut self,
        part: &Map<String, Value>,
        name: &str,
        place: &Place,
    ) -> Result<Option<Value>> {
        let state = string_at(part, "state", &place.path)?;
        let call_id = string_at(part, "toolCallId", &place.path)?;
        if state == "input-streaming" {
            self.leave_out("tool call still streaming");
            return Ok(None);
        }
        let input = part.get("input").or_else(|| part.get("rawInput"));
        self.call(&place.id, call_id, name, input.cloned());
        let (body, failed) = match state {
            "output-available" => match part.get("output") {
                Some(Value::String(text)) => (Body::Text(text.clone()), false),
                Some(value) => (Body::Data(value.clone()), false),
                None => (Body::Text(String::new()), false),
            },
            "output-error" => {
                let error = string_at(part, "errorText", &place.path)?;
                (Body::Text(error.to_owned()), true)
            }
            "output-denied" => {
                let reason = part.get("approval").and_then(|a| a.get("reason"));
                (Body::Text(denied(reason)), true)
            }
            "input-available" | "approval-requested" | "approval-responded" => return Ok(None),
            other => {
                let message = format!(
                    "unknown tool state {other:?}; expected input-streaming, input-available, \
                     approval-requested, approval-responded, output-available, output-error \
                     or output-denied"
                );
                return Err(invalid(&format!("{}.state", place.path), &message));
            }
        };
        let id = format!("{}.result", place.id);
        Ok(Some(result_chunk(&id, call_id, name, body, failed)))
    }
}
