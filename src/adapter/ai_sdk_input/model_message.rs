//! A `ModelMessage` (`{role, content}`) read into chunks, part by part.

use serde_json::{Map, Value};

use super::{
    Body, History, Place, array_of, check_role, denied, invalid, object_at, result_chunk, string_at,
};
use crate::error::Result;

impl History {
    /// A `ModelMessage`, the `number`th of the history: content as a
    /// string, or its parts in order.
    pub(super) fn model_message(
        &mut self,
        role: &str,
        number: usize,
        content: &Value,
        path: &str,
    ) -> Result<()> {
        check_role(role, &["system", "user", "assistant", "tool"], path)?;
        let path = format!("{path}.content");
        if let Value::String(text) = content {
            let place = Place {
                id: format!("m{number}"),
                path,
            };
            return match role {
                "system" => {
                    self.system.push(text.clone());
                    Ok(())
                }
                "tool" => Err(invalid(
                    &place.path,
                    "expected an array of tool-result parts",
                )),
                _ => {
                    self.text(role, text, &place);
                    Ok(())
                }
            };
        }
        if role == "system" {
            return Err(invalid(&path, "expected a string"));
        }
        for (j, part) in array_of(content, &path)?.iter().enumerate() {
            let place = Place {
                id: format!("m{number}.{j}"),
                path: format!("{path}[{j}]"),
            };
            self.model_part(role, part, &place)?;
        }
        Ok(())
    }

    fn model_part(&mut self, role: &str, part: &Value, place: &Place) -> Result<()> {
        let object = object_at(part, &place.path)?;
        let kind = string_at(object, "type", &place.path)?;
        match (role, kind) {
            ("user" | "assistant", "text") => {
                let text = string_at(object, "text", &place.path)?;
                self.text(role, text, place);
            }
            ("assistant", "reasoning") => self.reasoning(object, "providerOptions", place)?,
            ("assistant", "tool-call") => {
                let call_id = string_at(object, "toolCallId", &place.path)?;
                let name = string_at(object, "toolName", &place.path)?;
                self.call(&place.id, call_id, name, object.get("input").cloned());
            }
            ("assistant" | "tool", "tool-result") => self.model_result(object, place)?,
            (_, other) => self.leave_out(other),
        }
        Ok(())
    }

    /// A `tool-result` part: its `output` by type.
    fn model_result(&mut self, object: &Map<String, Value>, place: &Place) -> Result<()> {
        let call_id = string_at(object, "toolCallId", &place.path)?;
        let name = string_at(object, "toolName", &place.path)?;
        let path = format!("{}.output", place.path);
        let output = object_at(object.get("output").unwrap_or(&Value::Null), &path)?;
        let value = output.get("value");
        let (body, failed) = match string_at(output, "type", &path)? {
            "text" => (
                Body::Text(string_at(output, "value", &path)?.to_owned()),
                false,
            ),
            "error-text" => (
                Body::Text(string_at(output, "value", &path)?.to_owned()),
                true,
            ),
            "json" => (Body::Data(value.cloned().unwrap_or(Value::Null)), false),
            "error-json" => (Body::Data(value.cloned().unwrap_or(Value::Null)), true),
            "execution-denied" => (Body::Text(denied(output.get("reason"))), true),
            "content" => (Body::Text(self.content_text(value, &path)?), false),
            other => {
                let message = format!(
                    "unknown output type {other:?}; expected text, json, error-text, \
                     error-json, execution-denied or content"
                );
                return Err(invalid(&format!("{path}.type"), &message));
            }
        };
        let chunk = result_chunk(&place.id, call_id, name, body, failed);
        self.chunks.push(chunk);
        Ok(())
    }

    /// The text items of a `content` output, joined; others left out.
    fn content_text(&mut self, value: Option<&Value>, path: &str) -> Result<String> {
        let items = array_of(value.unwrap_or(&Value::Null), &format!("{path}.value"))?;
        let mut texts = Vec::new();
        for (k, item) in items.iter().enumerate() {
            let item_path = format!("{path}.value[{k}]");
            let object = object_at(item, &item_path)?;
            match string_at(object, "type", &item_path)? {
                "text" => texts.push(string_at(object, "text", &item_path)?),
                other => self.leave_out(other),
            }
        }
        Ok(texts.join("\n\n"))
    }
}
