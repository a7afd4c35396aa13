//! Reading fragments from JSON, with errors that name the path.
//!
//! By hand rather than derived, like the session schema: serde's messages
//! cannot say which fragment of a long list failed.

use std::fmt::Write as _;

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::{
    ChildShape, Fragment, FragmentData, MAX_DEPTH, ROOT_KEY, child_shape, collapse, error,
    is_fragment_object, push_key, too_deep,
};
use crate::error::{Result, json_type_name};

impl Fragment {
    /// Reads one fragment from JSON (the shape in [`Fragment`]'s docs).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Fragment`](crate::ErrorKind::Fragment) naming the path (`fragment.data[1].name`) when
    /// the value is not a fragment object, a field is missing, unknown or of
    /// the wrong type, or nesting passes 64 levels.
    pub fn from_json(value: Value) -> Result<Fragment> {
        parse_fragment(value, &mut "fragment".to_owned(), 1)
    }
}

impl<'de> Deserialize<'de> for Fragment {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Strict like every other reader: a key given twice is an error.
        let value = crate::syntax::json_input::value_from_deserializer(deserializer)?;
        Fragment::from_json(value).map_err(serde::de::Error::custom)
    }
}

/// Reads a session's `fragments` array.
///
/// # Errors
///
/// [`ErrorKind::Fragment`](crate::ErrorKind::Fragment) naming the path (`fragments[2].data`) when the
/// value is not an array of fragments; see [`Fragment::from_json`].
pub fn fragments_from_json(value: Value) -> Result<Vec<Fragment>> {
    let mut path = "fragments".to_owned();
    match value {
        Value::Array(items) => parse_list(items, &mut path, 1),
        other => Err(error(
            &path,
            format!(
                "expected an array of fragments, found {}",
                json_type_name(&other)
            ),
        )),
    }
}

/// `depth` is the nesting level the fragment's data would sit at.
fn parse_fragment(value: Value, path: &mut String, depth: usize) -> Result<Fragment> {
    let Value::Object(mut object) = value else {
        return Err(error(
            path,
            format!(
                "expected a fragment {{\"name\": …, \"data\": …}}, found {}",
                json_type_name(&value)
            ),
        ));
    };
    if let Some(field) = object.keys().find(|k| *k != "name" && *k != "data") {
        let at = format!("{path}.{field}");
        return Err(error(
            &at,
            "unknown field; a fragment has exactly `name` and `data`".into(),
        ));
    }
    let name = match object.remove("name") {
        Some(Value::String(name)) => name,
        Some(other) => {
            let message = format!("expected a string, found {}", json_type_name(&other));
            return Err(error(&format!("{path}.name"), message));
        }
        None => return Err(error(&format!("{path}.name"), "missing".into())),
    };
    let Some(data) = object.remove("data") else {
        let message = "missing; give the fragment's data (null for none)".into();
        return Err(error(&format!("{path}.data"), message));
    };
    let len = path.len();
    path.push_str(".data");
    let data = parse_data(data, path, depth)?;
    path.truncate(len);
    Ok(Fragment { name, data })
}

/// `depth` is the level `data` sits at.
fn parse_data(data: Value, path: &mut String, depth: usize) -> Result<FragmentData> {
    match data {
        Value::Array(items) if items.iter().any(is_fragment_object) => {
            if depth > MAX_DEPTH {
                return Err(too_deep(path));
            }
            parse_children(items, path, depth + 1)
        }
        data => {
            check_depth(&data, path, depth)?;
            Ok(FragmentData::Value(data))
        }
    }
}

/// Folds a children list by each element's [`ChildShape`], as rendering
/// does (owned here, and naming the path of any error); `depth` is the level
/// of the children's data.
fn parse_children(items: Vec<Value>, path: &mut String, depth: usize) -> Result<FragmentData> {
    let mut entries = Vec::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        let len = path.len();
        let _ = write!(path, "[{index}]");
        match (child_shape(&item), item) {
            (ChildShape::Fragment, item) => entries.push(parse_fragment(item, path, depth)?),
            (ChildShape::Nothing, _) => {}
            (ChildShape::Keys, Value::Object(object)) => {
                for (name, data) in object {
                    let at = path.len();
                    push_key(path, &name);
                    let data = parse_data(data, path, depth)?;
                    entries.push(Fragment { name, data });
                    path.truncate(at);
                }
            }
            (_, other) => {
                let data = parse_data(other, path, depth)?;
                entries.push(Fragment::new(ROOT_KEY, data));
            }
        }
        path.truncate(len);
    }
    Ok(collapse(entries))
}

/// `depth` is the level of the listed fragments' data.
fn parse_list(items: Vec<Value>, path: &mut String, depth: usize) -> Result<Vec<Fragment>> {
    let mut list = Vec::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        let len = path.len();
        let _ = write!(path, "[{index}]");
        list.push(parse_fragment(item, path, depth)?);
        path.truncate(len);
    }
    Ok(list)
}

/// Rejects containers nested past 64 levels, without recursing further.
fn check_depth(value: &Value, path: &mut String, depth: usize) -> Result<()> {
    let len = path.len();
    match value {
        Value::Array(items) => {
            if depth > MAX_DEPTH {
                return Err(too_deep(path));
            }
            for (index, item) in items.iter().enumerate() {
                let _ = write!(path, "[{index}]");
                check_depth(item, path, depth + 1)?;
                path.truncate(len);
            }
        }
        Value::Object(object) => {
            if depth > MAX_DEPTH {
                return Err(too_deep(path));
            }
            for (key, item) in object {
                push_key(path, key);
                check_depth(item, path, depth + 1)?;
                path.truncate(len);
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::fragment::{fragment, hint, role};

    fn message(result: Result<impl std::fmt::Debug>) -> String {
        result.unwrap_err().to_string()
    }

    #[test]
    fn json_round_trips_through_serde() {
        let original = fragment("context", [role("r")])
            .with(hint("a"))
            .with(hint("b"));
        let text = serde_json::to_string(&original).unwrap();
        assert_eq!(
            text,
            r#"{"name":"context","data":[{"name":"role","data":"r"},{"name":"hint","data":"a"},{"name":"hint","data":"b"}]}"#
        );
        let back: Fragment = serde_json::from_str(&text).unwrap();
        assert_eq!(back, original);
        let doubled = r#"{"name":"a","name":"b","data":1}"#;
        let error = serde_json::from_str::<Fragment>(doubled).unwrap_err();
        assert!(error.to_string().contains("given twice"), "{error}");
        assert_eq!(original.to_json(), serde_json::to_value(&original).unwrap());
    }

    #[test]
    fn the_persisted_shape_parses_to_what_the_helper_builds() {
        let persisted = json!({"name": "config", "data": [
            {"debug": true, "timeout": 30},
            {"name": "database", "data": {"host": "localhost", "port": 5432}}
        ]});
        let built = fragment("config", [json!({"debug": true, "timeout": 30})]).with(fragment(
            "database",
            [json!({"host": "localhost", "port": 5432})],
        ));
        assert_eq!(Fragment::from_json(persisted).unwrap(), built);
        // Folded as `with` folds: a bare value is the key `value`, null adds nothing.
        let mixed = json!({"name": "x", "data": [{"name": "a", "data": [1]}, 2, null]});
        assert_eq!(
            Fragment::from_json(mixed).unwrap().data,
            FragmentData::Value(json!({"a": [1], "value": 2}))
        );
    }

    #[test]
    fn errors_name_the_path() {
        let odd =
            json!([{"name": "a", "data": [{"name": "b", "data": 1}, {"name": 2, "data": 1}]}]);
        // `{"name": 2, …}` is not a fragment, so it is an object child: valid.
        let parsed = fragments_from_json(odd).unwrap();
        assert_eq!(
            parsed[0].data,
            FragmentData::Value(json!({"b": 1, "name": 2, "data": 1}))
        );
        let cases = [
            (json!({}), "expected an array of fragments, found an object"),
            (json!([1]), "`fragments[0]`: expected a fragment"),
            (json!([{"name": "a"}]), "`fragments[0].data`: missing"),
            (json!([{"data": 1}]), "`fragments[0].name`: missing"),
            (
                json!([{"name": 1, "data": 1}]),
                "`fragments[0].name`: expected a string",
            ),
            (
                json!([{"name": "a", "data": 1, "extra": 0}]),
                "`fragments[0].extra`: unknown field",
            ),
        ];
        for (input, expected) in cases {
            let text = message(fragments_from_json(input));
            assert!(text.contains(expected), "{text}");
        }
    }

    #[test]
    fn nesting_past_the_limit_is_an_error_not_a_stack_overflow() {
        let mut value = json!(1);
        for _ in 0..MAX_DEPTH {
            value = json!({"k": value});
        }
        assert!(Fragment::from_json(json!({"name": "ok", "data": value.clone()})).is_ok());
        let deeper = json!({"name": "deep", "data": {"k": value}});
        let text = message(Fragment::from_json(deeper));
        assert!(text.contains("fragment.data.k.k"), "{text}");
        assert!(text.contains("nested deeper than 64 levels"), "{text}");

        let wrap = |mut nested: Value| {
            for _ in 0..MAX_DEPTH {
                nested = json!({"name": "n", "data": [nested]});
            }
            nested
        };
        // 64 nested children lists hold a primitive, but not one more container.
        assert!(Fragment::from_json(wrap(json!({"name": "leaf", "data": 1}))).is_ok());
        let text = message(Fragment::from_json(wrap(
            json!({"name": "leaf", "data": {"k": 1}}),
        )));
        assert!(text.contains("fragment.data[0].data[0]"), "{text}");
    }
}
