//! Schema statement nodes: keyspaces, tables, types, indexes, views, functions, aggregates.

use super::*;

/// A table/keyspace/view/role property value.
#[derive(Debug, Clone, PartialEq)]
pub enum OptionValue {
    /// A constant (string, number, boolean...).
    Constant(Term),
    /// A bare unreserved keyword or identifier (`WITH x = ALL`); kept as written, lowercased.
    Keyword(String),
    /// `{ 'k': v, ... }`; keys are the constants' texts.
    Map(Vec<(String, Term)>),
}

/// An ordered list of `name = value` properties (names lowercased unless quoted).
pub type Properties = Vec<(String, OptionValue)>;

/// `CREATE KEYSPACE`
#[derive(Debug, Clone, PartialEq)]
pub struct CreateKeyspaceStatement {
    /// `IF NOT EXISTS`
    pub if_not_exists: bool,
    /// Keyspace name.
    pub name: Ident,
    /// `WITH replication = {...} AND durable_writes = ...`
    pub properties: Properties,
}

/// `ALTER KEYSPACE`
#[derive(Debug, Clone, PartialEq)]
pub struct AlterKeyspaceStatement {
    /// `IF EXISTS`
    pub if_exists: bool,
    /// Keyspace name.
    pub name: Ident,
    /// `WITH ...`
    pub properties: Properties,
}

/// A column definition in CREATE TABLE / ALTER TABLE ADD.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnDef {
    /// Column name.
    pub name: Ident,
    /// Column type.
    pub ty: CqlTypeExpr,
    /// `STATIC`
    pub is_static: bool,
    /// `PRIMARY KEY` written inline on this column.
    pub primary_key: bool,
    /// `MASKED WITH DEFAULT` (None as function) or `MASKED WITH f(args)`.
    pub mask: Option<ColumnMask>,
}

/// A dynamic data masking clause on a column.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnMask {
    /// The masking function; None for `MASKED WITH DEFAULT`.
    pub function: Option<QualifiedName>,
    /// Extra arguments of the masking function.
    pub args: Vec<Term>,
}

/// A PRIMARY KEY: partition key columns then clustering columns.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PrimaryKey {
    /// Partition key columns (at least one when parsed).
    pub partition_key: Vec<Ident>,
    /// Clustering columns, in order.
    pub clustering: Vec<Ident>,
}

/// The WITH part of CREATE/ALTER TABLE and materialized views.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TableOptions {
    /// `name = value` properties in source order.
    pub properties: Properties,
    /// `CLUSTERING ORDER BY (c ASC, d DESC)`
    pub clustering_order: Vec<(Ident, OrderDirection)>,
    /// `COMPACT STORAGE`
    pub compact_storage: bool,
}

/// `CREATE TABLE`
#[derive(Debug, Clone, PartialEq)]
pub struct CreateTableStatement {
    /// `IF NOT EXISTS`
    pub if_not_exists: bool,
    /// Table name.
    pub name: QualifiedName,
    /// Columns in source order.
    pub columns: Vec<ColumnDef>,
    /// The primary key from the `PRIMARY KEY (...)` clause or the inline column marker; None when
    /// neither was written (the executor reports Cassandra's "No PRIMARY KEY specifed" error).
    pub primary_key: Option<PrimaryKey>,
    /// Both an inline `PRIMARY KEY` marker and a `PRIMARY KEY (...)` clause were written.
    pub primary_key_twice: bool,
    /// `WITH ...`
    pub options: TableOptions,
}

/// What ALTER TABLE does.
#[derive(Debug, Clone, PartialEq)]
pub enum AlterTableAction {
    /// `ADD [IF NOT EXISTS] c type [static]` or `ADD (c type, ...)`
    Add {
        /// `IF NOT EXISTS`
        if_not_exists: bool,
        /// Columns.
        columns: Vec<ColumnDef>,
    },
    /// `DROP [IF EXISTS] c` or `DROP (c, d) [USING TIMESTAMP n]`
    Drop {
        /// `IF EXISTS`
        if_exists: bool,
        /// Columns.
        columns: Vec<Ident>,
        /// `USING TIMESTAMP n`
        timestamp: Option<Term>,
    },
    /// `RENAME [IF EXISTS] a TO b AND c TO d`
    Rename {
        /// `IF EXISTS`
        if_exists: bool,
        /// (from, to) pairs.
        renames: Vec<(Ident, Ident)>,
    },
    /// `ALTER c TYPE t` (rejected by Cassandra 5.0 at execution, kept for the error)
    AlterType {
        /// Column.
        column: Ident,
        /// New type.
        ty: CqlTypeExpr,
    },
    /// `ALTER [IF EXISTS] c MASKED WITH ...` / `ALTER c DROP MASKED`
    Mask {
        /// `IF EXISTS`
        if_exists: bool,
        /// Column.
        column: Ident,
        /// The new mask; None for `DROP MASKED`.
        mask: Option<ColumnMask>,
    },
    /// `WITH ...`
    With(TableOptions),
    /// `DROP COMPACT STORAGE`
    DropCompactStorage,
}

/// `ALTER TABLE`
#[derive(Debug, Clone, PartialEq)]
pub struct AlterTableStatement {
    /// `IF EXISTS`
    pub if_exists: bool,
    /// Table name.
    pub name: QualifiedName,
    /// The action.
    pub action: AlterTableAction,
}

/// `CREATE TYPE`
#[derive(Debug, Clone, PartialEq)]
pub struct CreateTypeStatement {
    /// `IF NOT EXISTS`
    pub if_not_exists: bool,
    /// Type name.
    pub name: QualifiedName,
    /// Fields in order.
    pub fields: Vec<(Ident, CqlTypeExpr)>,
}

/// What ALTER TYPE does.
#[derive(Debug, Clone, PartialEq)]
pub enum AlterTypeAction {
    /// `ADD [IF NOT EXISTS] f type`
    Add {
        /// `IF NOT EXISTS`
        if_not_exists: bool,
        /// Field.
        field: Ident,
        /// Type.
        ty: CqlTypeExpr,
    },
    /// `RENAME [IF EXISTS] a TO b AND ...`
    Rename {
        /// `IF EXISTS`
        if_exists: bool,
        /// (from, to) pairs.
        renames: Vec<(Ident, Ident)>,
    },
    /// `ALTER f TYPE t` (rejected at execution)
    AlterField {
        /// Field.
        field: Ident,
        /// New type.
        ty: CqlTypeExpr,
    },
}

/// `ALTER TYPE`
#[derive(Debug, Clone, PartialEq)]
pub struct AlterTypeStatement {
    /// `IF EXISTS`
    pub if_exists: bool,
    /// Type name.
    pub name: QualifiedName,
    /// The action.
    pub action: AlterTypeAction,
}

/// What an index covers of its column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexTargetKind {
    /// `c` (values for collections, the column otherwise)
    Simple,
    /// `keys(c)`
    Keys,
    /// `values(c)`
    Values,
    /// `entries(c)`
    Entries,
    /// `full(c)`
    Full,
}

/// One CREATE INDEX target.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexTarget {
    /// The column.
    pub column: Ident,
    /// The kind.
    pub kind: IndexTargetKind,
}

/// `CREATE [CUSTOM] INDEX`
#[derive(Debug, Clone, PartialEq)]
pub struct CreateIndexStatement {
    /// `CUSTOM`
    pub custom: bool,
    /// `IF NOT EXISTS`
    pub if_not_exists: bool,
    /// Index name, when given.
    pub name: Option<Ident>,
    /// Indexed table.
    pub table: QualifiedName,
    /// Targets (empty only for `ON t ()`, which some custom indexes accept).
    pub targets: Vec<IndexTarget>,
    /// `USING 'class'` (e.g. `'sai'`, `'StorageAttachedIndex'`, a Java class).
    pub using: Option<String>,
    /// `WITH OPTIONS = {...}` and any other properties.
    pub properties: Properties,
}

/// `CREATE MATERIALIZED VIEW`
#[derive(Debug, Clone, PartialEq)]
pub struct CreateViewStatement {
    /// `IF NOT EXISTS`
    pub if_not_exists: bool,
    /// View name.
    pub name: QualifiedName,
    /// The `AS SELECT ...` part.
    pub select: SelectStatement,
    /// The view's primary key.
    pub primary_key: PrimaryKey,
    /// `WITH ...`
    pub options: TableOptions,
}

/// One argument of CREATE FUNCTION.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionArg {
    /// Argument name.
    pub name: Ident,
    /// Argument type.
    pub ty: CqlTypeExpr,
}

/// `CREATE [OR REPLACE] FUNCTION`
#[derive(Debug, Clone, PartialEq)]
pub struct CreateFunctionStatement {
    /// `OR REPLACE`
    pub or_replace: bool,
    /// `IF NOT EXISTS`
    pub if_not_exists: bool,
    /// Function name.
    pub name: QualifiedName,
    /// Arguments.
    pub args: Vec<FunctionArg>,
    /// `CALLED ON NULL INPUT` (true) vs `RETURNS NULL ON NULL INPUT` (false).
    pub called_on_null_input: bool,
    /// `RETURNS type`
    pub return_type: CqlTypeExpr,
    /// `LANGUAGE x` (lowercased)
    pub language: String,
    /// `AS 'body'`
    pub body: String,
}

/// `DROP FUNCTION` / `DROP AGGREGATE`
#[derive(Debug, Clone, PartialEq)]
pub struct DropFunctionStatement {
    /// `IF EXISTS`
    pub if_exists: bool,
    /// Name.
    pub name: QualifiedName,
    /// Argument types, when the signature was written.
    pub arg_types: Option<Vec<CqlTypeExpr>>,
}

/// `CREATE [OR REPLACE] AGGREGATE`
#[derive(Debug, Clone, PartialEq)]
pub struct CreateAggregateStatement {
    /// `OR REPLACE`
    pub or_replace: bool,
    /// `IF NOT EXISTS`
    pub if_not_exists: bool,
    /// Aggregate name.
    pub name: QualifiedName,
    /// Argument types.
    pub arg_types: Vec<CqlTypeExpr>,
    /// `SFUNC`
    pub state_function: QualifiedName,
    /// `STYPE`
    pub state_type: CqlTypeExpr,
    /// `FINALFUNC`
    pub final_function: Option<QualifiedName>,
    /// `INITCOND`
    pub initial_condition: Option<Term>,
}
