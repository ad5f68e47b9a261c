//! DML statement nodes: SELECT, INSERT, UPDATE, DELETE, BATCH.

use super::*;

/// `SELECT ...`
#[derive(Debug, Clone, PartialEq)]
pub struct SelectStatement {
    /// `SELECT DISTINCT`
    pub distinct: bool,
    /// `SELECT JSON`
    pub json: bool,
    /// The selectors.
    pub projection: Projection,
    /// `FROM`
    pub table: QualifiedName,
    /// `WHERE` restrictions, ANDed, in source order.
    pub where_clause: Vec<Relation>,
    /// `GROUP BY`
    pub group_by: Vec<Selector>,
    /// `ORDER BY`
    pub order_by: Vec<Ordering>,
    /// `PER PARTITION LIMIT`
    pub per_partition_limit: Option<Term>,
    /// `LIMIT`
    pub limit: Option<Term>,
    /// `ALLOW FILTERING`
    pub allow_filtering: bool,
}

/// What `INSERT ... JSON` does with columns missing from the JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum JsonDefault {
    /// `DEFAULT NULL` (the default): missing columns are set to null.
    #[default]
    Null,
    /// `DEFAULT UNSET`: missing columns are left untouched.
    Unset,
}

/// The values part of INSERT.
#[derive(Debug, Clone, PartialEq)]
pub enum InsertValues {
    /// `(cols) VALUES (terms)`
    Values {
        /// Columns.
        columns: Vec<Ident>,
        /// Values, one per column.
        values: Vec<Term>,
    },
    /// `JSON 'doc'` / `JSON ?`
    Json {
        /// The JSON string or bind marker.
        value: Term,
        /// `DEFAULT NULL|UNSET`
        default: JsonDefault,
    },
}

/// `INSERT INTO ...`
#[derive(Debug, Clone, PartialEq)]
pub struct InsertStatement {
    /// Target table.
    pub table: QualifiedName,
    /// Values.
    pub values: InsertValues,
    /// `IF NOT EXISTS`
    pub if_not_exists: bool,
    /// `USING ...`
    pub using: UsingClause,
}

/// `UPDATE ...`
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateStatement {
    /// Target table.
    pub table: QualifiedName,
    /// `USING ...`
    pub using: UsingClause,
    /// `SET ...`
    pub assignments: Vec<Assignment>,
    /// `WHERE ...`
    pub where_clause: Vec<Relation>,
    /// `IF ...`
    pub condition: Option<WriteCondition>,
}

/// One item of a DELETE selection.
#[derive(Debug, Clone, PartialEq)]
pub struct DeleteItem {
    /// The column.
    pub column: Ident,
    /// An element or field, when written.
    pub path: Option<SubPath>,
}

/// `DELETE ...`
#[derive(Debug, Clone, PartialEq)]
pub struct DeleteStatement {
    /// Columns to delete; empty means the whole row(s).
    pub columns: Vec<DeleteItem>,
    /// Target table.
    pub table: QualifiedName,
    /// `USING TIMESTAMP` (DELETE accepts no TTL, so `ttl` is always None).
    pub using: UsingClause,
    /// `WHERE ...`
    pub where_clause: Vec<Relation>,
    /// `IF ...`
    pub condition: Option<WriteCondition>,
}

/// The kind of BATCH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchKind {
    /// `BEGIN BATCH`
    Logged,
    /// `BEGIN UNLOGGED BATCH`
    Unlogged,
    /// `BEGIN COUNTER BATCH`
    Counter,
}

/// A statement allowed inside a BATCH.
#[derive(Debug, Clone, PartialEq)]
pub enum BatchChild {
    /// INSERT
    Insert(InsertStatement),
    /// UPDATE
    Update(UpdateStatement),
    /// DELETE
    Delete(DeleteStatement),
}

/// `BEGIN ... BATCH ... APPLY BATCH`
#[derive(Debug, Clone, PartialEq)]
pub struct BatchStatement {
    /// Kind.
    pub kind: BatchKind,
    /// `USING TIMESTAMP` of the batch.
    pub using: UsingClause,
    /// The statements, in order.
    pub statements: Vec<BatchChild>,
}
