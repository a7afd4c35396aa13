//! A save's nodes and counts, each inserted in one statement from arrays
//! (one per column), however many the save holds.

use postgres::types::Type;

use super::statements::{PgTx, codec};
use crate::error::Result;
use crate::store::NodeId;
use crate::store::backend::{CountRow, NodeRow};

/// Inserts `nodes` into the chat.
pub(super) fn nodes(tx: &mut PgTx<'_>, chat: &str, nodes: &[NodeRow<'_>]) -> Result<()> {
    let column = |f: fn(&NodeRow<'_>) -> Option<NodeId>| nodes.iter().map(f).collect::<Vec<_>>();
    let ids: Vec<NodeId> = nodes.iter().map(|n| n.link.id).collect();
    let positions: Vec<i64> = nodes.iter().map(|n| n.link.position).collect();
    let (parents, jumps) = (column(|n| n.parent), column(|n| n.link.jump));
    let last_users = column(|n| n.tallies.last_user);
    let last_calls = column(|n| n.tallies.last_call);
    let last_protected = column(|n| n.tallies.last_protected);
    let classes: Vec<Option<String>> = nodes
        .iter()
        .map(|n| n.tallies.classes.map(|c| c.encode()))
        .collect();
    let call_ids: Vec<Option<&[u8]>> = nodes
        .iter()
        .map(|n| n.chunk.meta.call_id.as_deref().map(str::as_bytes))
        .collect();
    let chunk_ids: Vec<&[u8]> = nodes.iter().map(|n| n.chunk.chunk_id.as_bytes()).collect();
    let bodies: Vec<&str> = nodes.iter().map(|n| n.chunk.json.as_str()).collect();
    tx.run(
        "INSERT INTO nodes (id, chat, parent, position, chunk_id, codec, body, jump, \
           last_user, last_call, last_protected, classes, call_id) \
         SELECT id, $1, parent, position, chunk_id, $2, body, jump, last_user, last_call, \
           last_protected, classes, call_id \
         FROM UNNEST($3::bigint[], $4::bigint[], $5::bigint[], $6::bytea[], $7::text[], \
           $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[], $12::text[], \
           $13::bytea[]) \
           AS t (id, parent, position, chunk_id, body, jump, last_user, last_call, \
           last_protected, classes, call_id)",
        &[
            (&chat.as_bytes(), Type::BYTEA),
            (&codec(), Type::INT4),
            (&ids, Type::INT8_ARRAY),
            (&parents, Type::INT8_ARRAY),
            (&positions, Type::INT8_ARRAY),
            (&chunk_ids, Type::BYTEA_ARRAY),
            (&bodies, Type::TEXT_ARRAY),
            (&jumps, Type::INT8_ARRAY),
            (&last_users, Type::INT8_ARRAY),
            (&last_calls, Type::INT8_ARRAY),
            (&last_protected, Type::INT8_ARRAY),
            (&classes, Type::TEXT_ARRAY),
            (&call_ids, Type::BYTEA_ARRAY),
        ],
    )?;
    Ok(())
}

/// Inserts `counts`, keeping any a node has under the key already.
pub(super) fn counts(tx: &mut PgTx<'_>, counts: &[CountRow<'_>]) -> Result<()> {
    let nodes: Vec<NodeId> = counts.iter().map(|c| c.node).collect();
    let keys: Vec<&str> = counts.iter().map(|c| c.key).collect();
    let values: Vec<&str> = counts.iter().map(|c| c.value).collect();
    let tallies: Vec<Option<String>> = counts.iter().map(|c| c.tally.map(|t| t.encode())).collect();
    tx.run(
        "INSERT INTO counts (node, key, value, tally) \
         SELECT * FROM UNNEST($1::bigint[], $2::text[], $3::text[], $4::text[]) \
         ON CONFLICT (node, key) DO NOTHING",
        &[
            (&nodes, Type::INT8_ARRAY),
            (&keys, Type::TEXT_ARRAY),
            (&values, Type::TEXT_ARRAY),
            (&tallies, Type::TEXT_ARRAY),
        ],
    )?;
    Ok(())
}
