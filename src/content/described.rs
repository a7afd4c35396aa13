//! The text of blocks that hold data rather than prose (state changes,
//! tool calls, JSON), as the reference derives it; each renderer escapes it
//! as its own text.

use serde_json::Value;

/// A state change in words: its `text` when it has some, else
/// `entity.field: from → to` with the values as compact JSON, the entity
/// `entity` when unnamed and a missing value `undefined`, as the reference
/// writes it.
pub(crate) fn state_change_text(
    entity: Option<&str>,
    field: Option<&str>,
    from: Option<&Value>,
    to: Option<&Value>,
    text: Option<&str>,
) -> String {
    if let Some(text) = text.filter(|t| !t.trim().is_empty()) {
        return text.to_owned();
    }
    let entity = entity.filter(|e| !e.is_empty()).unwrap_or("entity");
    let field = field
        .filter(|f| !f.is_empty())
        .map(|f| format!(".{f}"))
        .unwrap_or_default();
    let value = |v: Option<&Value>| v.map_or_else(|| "undefined".to_owned(), Value::to_string);
    format!("{entity}{field}: {} → {}", value(from), value(to))
}

/// A json block's text: its data pretty-printed, or, without data, its
/// `text` as it is (the reference echoes it).
pub(crate) fn json_text(data: Option<&Value>, text: Option<&str>) -> String {
    match data {
        Some(data) => serde_json::to_string_pretty(data).unwrap_or_else(|_| data.to_string()),
        None => text.unwrap_or_default().to_owned(),
    }
}

/// The arguments of a tool call, pretty-printed as JSON bodies are.
pub(crate) fn tool_input_text(input: &Value) -> String {
    serde_json::to_string_pretty(input).unwrap_or_else(|_| input.to_string())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_state_change_is_described_from_its_fields() {
        let (zero, one) = (json!(0), json!(1));
        assert_eq!(
            state_change_text(
                Some("counter"),
                Some("value"),
                Some(&zero),
                Some(&one),
                None
            ),
            "counter.value: 0 → 1"
        );
        assert_eq!(
            state_change_text(None, Some(""), None, Some(&json!("on")), Some("  ")),
            "entity: undefined → \"on\""
        );
        assert_eq!(
            state_change_text(Some("x"), None, None, None, Some("done")),
            "done"
        );
    }
}
